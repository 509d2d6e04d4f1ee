import type { OutcomeResult } from '../shapes/task.ts';
import type { SqlClient } from './sql-client.ts';

/** A task's outcome in its row: where its checks of `complete` stand (tasks/run/task-outcome.ts writes it). */
export function createOutcomeStore(sql: SqlClient) {
  return {
    /** Replaces the task's outcome (run inside the `outcome.evaluated` event's transaction). */
    async setOutcome(taskId: string, outcome: OutcomeResult): Promise<void> {
      await sql.run('UPDATE tasks SET outcome = ? WHERE id = ?', [JSON.stringify(outcome), taskId]);
    },
  };
}
