import type { CreateTaskBody, OutcomeResult } from '../shapes/task.ts';
import { renameUserInRollups } from './rollups.ts';
import { tasks } from './schema.ts';
import { rowReader } from './rows.ts';
import type { SqlClient } from './sql-client.ts';

const taskOf = rowReader(tasks);
const FINISHED = ['completed', 'aborted', 'error'];
/** Cluster: the advisory lock the retention sweep's batches take (one instance sweeps at a time). */
const RETENTION_LOCK = 7_316_004;

/**
 * What a purged task keeps of its request: who asked, for whom, and how (the ids, the type, the
 * options); its prompt and a fork's inherited conversation go.
 */
function purgedRequest(request: CreateTaskBody, userId: string): CreateTaskBody {
  const { fork: _fork, ...kept } = request;
  // A rubric is the caller's text, as the prompt is; the rest of the outcome's options is how it ran.
  const outcome = request.options?.outcome;
  const options = outcome?.rubric !== undefined ? { ...request.options, outcome: { ...outcome, rubric: PURGED } } : request.options;
  return { ...kept, prompt: '', context: { ...request.context, userId }, ...(options && { options }) };
}

const PURGED = '(purged)';

/**
 * What a purged task keeps of an outcome: its status, checks and which criteria passed; the
 * criteria's names and notes (the grader's words, a command's output) and the feedback go.
 */
function purgedOutcome(outcome: OutcomeResult | null): OutcomeResult | null {
  if (!outcome) return null;
  return {
    ...outcome,
    criteria: outcome.criteria.map((c) => ({ name: PURGED, passed: c.passed, note: PURGED })),
    feedback: outcome.feedback === null ? null : PURGED,
  };
}

/**
 * Forgetting content, keeping money: a finished task's prompt, conversation, events, steering
 * messages, summary, output and its outcome's text (rubric, criteria, feedback) are removed; its usage (the task's counters, its record, its
 * billed calls, the roll-ups) stays.
 */
export function createLifecycleStore(sql: SqlClient) {
  /** Purges one task in `tx`; null when it is not finished. `userId` replaces its user (an erasure). */
  async function purgeIn(tx: SqlClient, taskId: string, at: number, userId?: string): Promise<{ events: number } | null> {
    const raw = await tx.get('SELECT * FROM tasks WHERE id = ?', [taskId]);
    if (!raw) return null;
    const row = taskOf(raw);
    if (!FINISHED.includes(row.status)) return null;
    const user = userId ?? row.userId;
    if (row.purgedAt !== null && user === row.userId) return { events: 0 };
    await tx.run(
      `UPDATE tasks SET request = ?, user_id = ?, summary = NULL, output = NULL, waiting_calls = NULL, pause = NULL, activity = NULL,
         outcome = ?, candidates = ?,
         error_message = CASE WHEN error_message IS NULL THEN NULL ELSE '(purged)' END, purged_at = coalesce(purged_at, ?) WHERE id = ?`,
      [
        JSON.stringify(purgedRequest(row.request, user)),
        user,
        row.outcome && JSON.stringify(purgedOutcome(row.outcome)),
        row.candidates && JSON.stringify(row.candidates.map((c) => ({ ...c, outcome: purgedOutcome(c.outcome) }))),
        at,
        taskId,
      ],
    );
    const events = await tx.run('DELETE FROM task_events WHERE task_id = ?', [taskId]);
    await tx.run('DELETE FROM task_messages WHERE task_id = ?', [taskId]);
    await tx.run('DELETE FROM task_inbox WHERE task_id = ?', [taskId]);
    return { events };
  }

  return {
    /** Purges a finished task (again: nothing more to do); null when it is not finished. */
    purge(taskId: string, at: number): Promise<{ events: number } | null> {
      return sql.transaction((tx) => purgeIn(tx, taskId, at));
    },

    /**
     * Purges finished tasks that ended before `cutoff`, oldest first, at most `limit` in one
     * transaction; on PostgreSQL only while no other instance holds the sweep's lock (0 then).
     */
    purgeEndedBefore(cutoff: number, limit: number, at: number): Promise<number> {
      return sql.transaction(async (tx) => {
        if (tx.dialect === 'postgres') {
          const held = await tx.get<{ held: boolean }>('SELECT pg_try_advisory_xact_lock(?) AS held', [RETENTION_LOCK]);
          if (!held?.held) return 0;
        }
        const ids = await tx.all<{ id: string }>(
          'SELECT id FROM tasks WHERE purged_at IS NULL AND completed_at IS NOT NULL AND completed_at < ? ORDER BY completed_at LIMIT ?',
          [cutoff, limit],
        );
        let purged = 0;
        for (const { id } of ids) if (await purgeIn(tx, id, at)) purged++;
        return purged;
      });
    },

    /** A user's tasks of a tenant: how many, and how many have not finished. */
    async tasksOfUser(tenant: string, userId: string): Promise<{ ids: string[]; unfinished: number }> {
      const rows = await sql.all<{ id: string; status: string }>('SELECT id, status FROM tasks WHERE tenant = ? AND user_id = ?', [tenant, userId]);
      return { ids: rows.map((r) => r.id), unfinished: rows.filter((r) => !FINISHED.includes(r.status)).length };
    },

    /** Purges some of an erased user's tasks, their user becoming `erased` (one transaction). */
    eraseTasks(ids: string[], erased: string, at: number): Promise<{ tasks: number; events: number }> {
      return sql.transaction(async (tx) => {
        let done = 0;
        let events = 0;
        for (const id of ids) {
          const r = await purgeIn(tx, id, at, erased);
          if (r) {
            done++;
            events += r.events;
          }
        }
        return { tasks: done, events };
      });
    },

    /**
     * The rest of an erasure: the user's usage records, roll-ups and standing budget under
     * `erased`; the audit log's entries naming the user (however the path was spelled) name
     * `erased` instead; the stored webhook deliveries of the user's tasks (already purged, now
     * under `erased`) keep no trace of the user's id nor of the tasks' status messages.
     */
    eraseUsage(tenant: string, userId: string, erased: string): Promise<void> {
      return sql.transaction(async (tx) => {
        // Entries written before targets were stored decoded may spell the id percent-encoded:
        // any target holding the id as it is, or holding a `%` at all, is read and decoded here.
        const named = await tx.all<{ id: string; target: string }>(
          `SELECT id, target FROM audit_log WHERE tenant = ? AND (target LIKE ? ESCAPE '!' OR target LIKE '%!%%' ESCAPE '!')`,
          [tenant, `%${userId.replace(/[!%_]/g, '!$&')}%`],
        );
        for (const entry of named) {
          const target = renamedPath(entry.target, userId, erased);
          if (target !== entry.target) await tx.run('UPDATE audit_log SET target = ? WHERE id = ?', [target, entry.id]);
        }
        const deliveries = await tx.all<{ id: string; payload: string }>(
          'SELECT id, payload FROM webhook_deliveries WHERE tenant = ? AND task_id IN (SELECT id FROM tasks WHERE tenant = ? AND user_id = ?)',
          [tenant, tenant, erased],
        );
        for (const d of deliveries) {
          const payload = erasedPayload(d.payload, userId, erased);
          if (payload !== d.payload) await tx.run('UPDATE webhook_deliveries SET payload = ? WHERE id = ?', [payload, d.id]);
        }
        await tx.run('UPDATE subagent_records SET user_id = ? WHERE tenant = ? AND user_id = ?', [erased, tenant, userId]);
        await renameUserInRollups(tx, tenant, userId, erased);
        await tx.run(`DELETE FROM budgets WHERE tenant = ? AND scope = 'user' AND scope_id = ?`, [tenant, erased]);
        await tx.run(`UPDATE budgets SET scope_id = ? WHERE tenant = ? AND scope = 'user' AND scope_id = ?`, [erased, tenant, userId]);
      });
    },

    /** When anything last happened to a parent's tasks (created or ended; null: none), and how many are not finished. */
    async parentActivity(tenant: string, parentTaskId: string): Promise<{ last: number | null; open: number }> {
      const row = await sql.get<{ last: number | string | null; open: number | string | null }>(
        `SELECT max(coalesce(completed_at, created_at)) AS last, sum(CASE WHEN status IN ('queued', 'running', 'paused') THEN 1 ELSE 0 END) AS open
           FROM tasks WHERE tenant = ? AND parent_task_id = ?`,
        [tenant, parentTaskId],
      );
      return { last: row?.last == null ? null : Number(row.last), open: Number(row?.open ?? 0) };
    },
  };
}

export type LifecycleStore = ReturnType<typeof createLifecycleStore>;

/** A path with every segment decoded, and each that is `userId` replaced by `erased`. */
function renamedPath(path: string, userId: string, erased: string): string {
  return path
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // Not valid percent-encoding: kept as it is.
      }
      return decoded === userId ? erased : decoded;
    })
    .join('/');
}

/**
 * A stored delivery's body (JSON) once its task's user is erased: every value that is the user's
 * id becomes `erased`, and every text part (an A2A status message: the task's summary or error)
 * becomes `(purged)`, the task's own content being gone. Its shape stays, so a retry still sends
 * a well-formed body.
 */
function erasedPayload(payload: string, userId: string, erased: string): string {
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload.split(userId).join(erased);
  }
  const walk = (value: unknown, key?: string): unknown => {
    if (typeof value === 'string') return value === userId ? erased : key === 'text' ? '(purged)' : value;
    if (Array.isArray(value)) return value.map((v) => walk(v));
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    return value;
  };
  return JSON.stringify(walk(body));
}
