import type { ApprovalPause, Pause, TaskBudget } from '../shapes/task.ts';
import type { WaitingCalls } from './schema.ts';
import type { SqlClient } from './sql-client.ts';

/**
 * A task's pauses in its row: for a budget (`pause`, `unpause`), and for approvals and caller-run
 * tools' calls: the calls of a step waiting for answers (`waiting_calls`), until when
 * (`pause_until`), the answers recorded, and the approved calls marked started before they run
 * (run at most once).
 */
export function createPauseStore(sql: SqlClient) {
  /** Every write that is more than one statement runs in a transaction of its own, or the caller's. */
  const atomically = <R>(body: (tx: SqlClient) => Promise<R>) => sql.transaction(body);
  return {
    /** `running → paused` (the task and its record), holding why (run inside the event's transaction). */
    pause(taskId: string, pause: Pause, at: number): Promise<void> {
      return atomically(async (tx) => {
        // A paused task holds no slot: nobody owns it until it is resumed.
        await tx.run(`UPDATE tasks SET status = 'paused', pause = ?, paused_at = ?, owner = NULL WHERE id = ?`, [JSON.stringify(pause), at, taskId]);
        await tx.run(`UPDATE subagent_records SET status = 'paused' WHERE task_id = ?`, [taskId]);
      });
    },

    /** `paused → running`, adding the pause to the time it spent paused; `budget` replaces its own. False if it was not paused. */
    unpause(taskId: string, budget: TaskBudget | null, at: number): Promise<boolean> {
      return atomically(async (tx) => {
        const changed = await tx.run(
          `UPDATE tasks SET status = 'running', pause = NULL,
             paused_ms = paused_ms + (CASE WHEN paused_at IS NULL OR CAST(? AS BIGINT) < paused_at THEN 0 ELSE CAST(? AS BIGINT) - paused_at END),
             paused_at = NULL, budget = coalesce(CAST(? AS TEXT), budget), owner = NULL, resume_reason = 'budget'
           WHERE id = ? AND status = 'paused'`,
          [at, at, budget ? JSON.stringify(budget) : null, taskId],
        );
        if (changed > 0) await tx.run(`UPDATE subagent_records SET status = 'running' WHERE task_id = ?`, [taskId]);
        return changed > 0;
      });
    },

    /** Paused tasks that paused before `cutoff` (epoch ms), oldest first. */
    async pausedBefore(cutoff: number): Promise<string[]> {
      const rows = await sql.rows(`SELECT id FROM tasks WHERE status = 'paused' AND pause_until IS NULL AND paused_at < ? ORDER BY paused_at`, [cutoff]);
      return rows.map((r) => r[0] as string);
    },

    /**
     * `running → paused` for approval (the task and its record, run inside the event's transaction):
     * the calls waiting for answers, and when the unanswered ones are denied.
     */
    pauseForApproval(taskId: string, pause: ApprovalPause, waiting: WaitingCalls, at: number, until: number): Promise<void> {
      return atomically(async (tx) => {
        await tx.run(`UPDATE tasks SET status = 'paused', pause = ?, paused_at = ?, pause_until = ?, waiting_calls = ?, owner = NULL WHERE id = ?`, [
          JSON.stringify(pause),
          at,
          until,
          JSON.stringify(waiting),
          taskId,
        ]);
        await tx.run(`UPDATE subagent_records SET status = 'paused' WHERE task_id = ?`, [taskId]);
      });
    },

    /**
     * Records answers to a task's approval requests, if its waiting calls are still `before` (false:
     * someone else answered meanwhile; read again). With `resume`, every request is answered: the
     * task goes `paused → running` for any instance to continue (`resume_reason` approval), the
     * pause added to the time it spent paused.
     */
    answerApprovals(taskId: string, before: WaitingCalls, after: WaitingCalls, pause: ApprovalPause | null, resume: boolean, at: number): Promise<boolean> {
      return atomically(async (tx) => {
        // Calls waiting in a running process: only the answers change; its runner reads them.
        if (before.live) {
          const changed = await tx.run(
            `UPDATE tasks SET waiting_calls = ?, pause_until = ${resume ? 'NULL' : 'pause_until'} WHERE id = ? AND status = 'running' AND waiting_calls = ?`,
            [JSON.stringify(after), taskId, JSON.stringify(before)],
          );
          return changed > 0;
        }
        const changed = resume
          ? await tx.run(
              `UPDATE tasks SET waiting_calls = ?, status = 'running', pause = NULL, pause_until = NULL, owner = NULL, resume_reason = 'approval',
                 paused_ms = paused_ms + (CASE WHEN paused_at IS NULL OR CAST(? AS BIGINT) < paused_at THEN 0 ELSE CAST(? AS BIGINT) - paused_at END),
                 paused_at = NULL
               WHERE id = ? AND status = 'paused' AND waiting_calls = ?`,
              [JSON.stringify(after), at, at, taskId, JSON.stringify(before)],
            )
          : await tx.run(`UPDATE tasks SET waiting_calls = ?, pause = ? WHERE id = ? AND status = 'paused' AND waiting_calls = ?`, [
              JSON.stringify(after),
              JSON.stringify(pause),
              taskId,
              JSON.stringify(before),
            ]);
        if (changed > 0 && resume) await tx.run(`UPDATE subagent_records SET status = 'running' WHERE task_id = ?`, [taskId]);
        return changed > 0;
      });
    },

    /** Calls of a running task that wait in its process for the caller's answer (`waiting.live`), unanswered ones denied at `until`. */
    async awaitLive(taskId: string, waiting: WaitingCalls, until: number): Promise<void> {
      await sql.run(`UPDATE tasks SET waiting_calls = ?, pause_until = ? WHERE id = ? AND status = 'running'`, [JSON.stringify(waiting), until, taskId]);
    },

    /** A live wait is over: the task's waiting calls are again what they were before it (`before`). */
    async endLive(taskId: string, before: WaitingCalls | null): Promise<void> {
      await sql.run(`UPDATE tasks SET waiting_calls = ?, pause_until = NULL WHERE id = ? AND status = 'running'`, [before && JSON.stringify(before), taskId]);
    },

    /**
     * The resumed run is about to run the approved calls `waiting` marks started: stored only while
     * the task runs and, on PostgreSQL (`lease`), while this instance owns it and its lease holds
     * at `lease.now` (false: nothing stored, and the calls must not run). An instance taking the
     * task over reads the row after this write, or this write finds the task gone: never both run.
     */
    async startAnswered(taskId: string, waiting: WaitingCalls, lease: { owner: string; now: number } | null): Promise<boolean> {
      const json = JSON.stringify(waiting);
      const changed = lease
        ? await sql.run(`UPDATE tasks SET waiting_calls = ? WHERE id = ? AND status = 'running' AND owner = ? AND lease_until > ?`, [
            json,
            taskId,
            lease.owner,
            lease.now,
          ])
        : await sql.run(`UPDATE tasks SET waiting_calls = ? WHERE id = ? AND status = 'running'`, [json, taskId]);
      return changed > 0;
    },

    /** The resumed run acted on the answers (run inside the transaction that stores their results). */
    async waitingCallsRan(taskId: string, waiting: WaitingCalls): Promise<void> {
      await sql.run('UPDATE tasks SET waiting_calls = ? WHERE id = ?', [JSON.stringify({ ...waiting, ran: true }), taskId]);
    },

    /** Tasks waiting for approval (paused, or running with live calls) whose time to answer ran out before `now`. */
    async approvalsExpired(now: number): Promise<string[]> {
      const rows = await sql.rows(
        `SELECT id FROM tasks WHERE status IN ('paused', 'running') AND pause_until IS NOT NULL AND pause_until < ? ORDER BY pause_until`,
        [now],
      );
      return rows.map((r) => r[0] as string);
    },
  };
}
