import type { Candidate, OutcomeResult } from '../shapes/task.ts';
import type { SqlClient } from './sql-client.ts';

/**
 * A task's outcome and candidates in its row: where its checks of `complete` stand
 * (tasks/run/task-outcome.ts writes it), and its attempts (tasks/run/run-candidates.ts).
 */
export function createOutcomeStore(sql: SqlClient) {
  return {
    /** Replaces the task's outcome (run inside the `outcome.evaluated` event's transaction). */
    async setOutcome(taskId: string, outcome: OutcomeResult): Promise<void> {
      await sql.run('UPDATE tasks SET outcome = ? WHERE id = ?', [JSON.stringify(outcome), taskId]);
    },

    /** Replaces the task's list of candidates (run inside the transaction of the `candidate.*` events it reports). */
    async setCandidates(taskId: string, candidates: Candidate[]): Promise<void> {
      await sql.run('UPDATE tasks SET candidates = ? WHERE id = ?', [JSON.stringify(candidates), taskId]);
    },
  };
}
