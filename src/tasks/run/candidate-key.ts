/** How an attempt of a task with candidates is named and known (run-candidates.ts starts them). */
import type { TaskRow } from '../../store/schema.ts';

/** The key of attempt `index` of task `taskId`: where a resumed task finds it, and how the attempt knows its snapshot. */
export const candidateKey = (taskId: string, index: number) => `candidate:${taskId}:${index}`;

/**
 * The task whose attempt `row` is (its copy is cloned from that task's snapshot when it starts, not
 * taken from the shared workspace); null for any other task.
 */
export const candidateOf = (row: Pick<TaskRow, 'parentTask' | 'idempotencyKey'>): string | null =>
  row.parentTask && row.idempotencyKey?.startsWith(`candidate:${row.parentTask}:`) ? row.parentTask : null;
