import { iso } from '../shapes/time.ts';
import type { TaskRow } from '../store/schema.ts';
import type { Artifact, SkippedPath, StopReason, TaskContext, TaskOutput } from '../shapes/task.ts';


/** The contract's TaskOutput for a stored task. */
export function toTaskOutput(row: TaskRow): TaskOutput {
  const context = (row.request as { context: TaskContext }).context;
  return {
    id: row.id,
    status: row.status,
    subagent_type: row.subagentType,
    description: row.description,
    model: row.model,
    context,
    summary: row.summary,
    artifacts: (row.artifacts ?? []) as Artifact[],
    skipped: (row.skipped ?? []) as SkippedPath[],
    output: row.output ?? null,
    steps: row.steps,
    stopReason: (row.stopReason as StopReason | null) ?? null,
    usage: {
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      totalTokens: row.totalTokens,
      cachedInputTokens: row.cachedInputTokens,
      reasoningTokens: row.reasoningTokens,
    },
    error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
    createdAt: iso(row.createdAt),
    startedAt: iso(row.startedAt),
    completedAt: iso(row.completedAt),
  };
}
