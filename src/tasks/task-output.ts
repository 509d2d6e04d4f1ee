import { iso } from '../shapes/time.ts';
import type { TaskRow } from '../store/schema.ts';
import { usageOf, type TaskOutput } from '../shapes/task.ts';


/** The contract's TaskOutput for a stored task. */
export function toTaskOutput(row: TaskRow): TaskOutput {
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
    usage: { ...usageOf(row), compactions: row.compactions },
    sessionId: row.sessionId ?? row.id,
    previousTaskId: row.previousTaskId,
    error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
    createdAt: iso(row.createdAt),
    startedAt: iso(row.startedAt),
    completedAt: iso(row.completedAt),
  };
}
