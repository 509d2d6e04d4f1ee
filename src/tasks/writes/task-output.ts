import type { ChildOutput } from '../../shapes/lead-tools.ts';
import { iso } from '../../shapes/time.ts';
import type { TaskRow } from '../../store/schema.ts';
import { pricedUsageOf, type Progress, type TaskOutput } from '../../shapes/task.ts';

/** The contract's TaskOutput for a stored task. */
export function toTaskOutput(row: TaskRow, progress: Progress | null = null): TaskOutput {
  return {
    id: row.id,
    status: row.status,
    subagent_type: row.subagentType,
    description: row.description,
    model: row.model,
    context: row.request.context,
    summary: row.summary,
    artifacts: row.artifacts ?? [],
    skipped: row.skipped ?? [],
    output: row.output ?? null,
    steps: row.steps,
    stopReason: row.stopReason,
    usage: { ...pricedUsageOf(row), compactions: row.compactions },
    pause: row.status === 'paused' ? row.pause : null,
    progress,
    sessionId: row.sessionId ?? row.id,
    previousTaskId: row.previousTaskId,
    depth: row.depth,
    parentTask: row.parentTask,
    background: row.background,
    changes: row.worktree
      ? {
          added: row.worktree.added,
          modified: row.worktree.modified,
          deleted: row.worktree.deleted,
          patchUrl: `/tasks/${row.id}/changes.diff`,
          appliedAt: iso(row.worktree.appliedAt),
        }
      : null,
    outcome: row.outcome,
    candidates: row.candidates,
    error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
    replayOf: row.replay?.of ?? null,
    replay: row.replay ?? null,
    purged: row.purgedAt !== null,
    createdAt: iso(row.createdAt),
    startedAt: iso(row.startedAt),
    completedAt: iso(row.completedAt),
  };
}

/**
 * What a model (or an MCP host) is answered about a task it started: its id, status, summary and
 * output, each artifact by its path relative to the workspace (no path of the service's host), its
 * changes (a worktree task) and its error.
 */
export function compactOutput(row: TaskRow): ChildOutput {
  return {
    task_id: row.id,
    status: row.status,
    summary: row.summary,
    output: row.output ?? null,
    artifacts: (row.artifacts ?? []).map((a) => ({ relativePath: a.relativePath, size: a.size, fsType: a.fsType })),
    ...(row.worktree && { changes: { added: row.worktree.added, modified: row.worktree.modified, deleted: row.worktree.deleted } }),
    ...(row.outcome && { outcome: { status: row.outcome.status, iterations: row.outcome.iterations } }),
    ...(row.errorCode && { error: { code: row.errorCode, message: row.errorMessage ?? '' } }),
  };
}
