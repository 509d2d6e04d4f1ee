import { ulid } from '../util/ids.ts';
import { tokenFields, usageOf, type TokenUsage } from '../shapes/usage.ts';
import type { WorktreeState } from '../shapes/task.ts';
import type { ReplayState } from '../shapes/replay.ts';
import { addToRollups, rollupParams, withRollupsSql, type RollupDelta } from './rollups.ts';
import { columnsOf, rowReader } from './rows.ts';
import { tasks, type NewTaskRow, type TaskRow } from './schema.ts';
import type { SqlClient } from './sql-client.ts';
import { createChildStore } from './child-store.ts';
import { createOutcomeStore } from './outcome-store.ts';
import { createPauseStore } from './pause-store.ts';
import { createTranscriptStore } from './transcript-store.ts';
import { createWorktreeStore } from './worktree-store.ts';

export interface TaskFilter {
  parentTaskId?: string;
  userId?: string;
  status?: TaskRow['status'];
  sessionId?: string;
}

/** The model a call went to and what it cost (null: the model has no price). */
export interface CallPrice {
  model: string | null;
  costMicroUsd: number | null;
}

export interface FinishFields {
  status: 'completed' | 'aborted' | 'error';
  summary: string | null;
  artifacts: unknown[];
  skipped: unknown[];
  output: unknown;
  stopReason: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  completedAt: number;
  /** A worktree task: what it changed in its copy. */
  worktree?: WorktreeState | null;
  /** A replay: where it left the record and how it compares with its original. */
  replay?: ReplayState | null;
  /** The model it ended with, when not the one it started with (a task with candidates: the selected one's). */
  model?: string | null;
}

const taskOf = rowReader(tasks);

/** A standing budget's limits as stored (null: no limit of that kind). */
interface StandingLimits {
  maxTokens: number | null;
  maxCostMicroUsd: number | null;
}

/** What of a task its budgets are checked on before each model call. */
const BUDGETED = [
  'id',
  'tenant',
  'parentTaskId',
  'userId',
  'startedAt',
  'pausedMs',
  'totalTokens',
  'costMicroUsd',
  'budget',
  'parentTask',
  'depth',
  'maxDepth',
] as const;
const budgetedOf = rowReader(tasks, BUDGETED);
/** A task as its budgets see it (read before each model call). */
export type BudgetedRow = Pick<TaskRow, (typeof BUDGETED)[number]>;
/** Built once: it runs before every model call. */
const BEFORE_CALL = `SELECT ${columnsOf(tasks, BUDGETED, 't.')}, pb.scope_id AS pb_set, pb.max_tokens AS pb_tokens, pb.max_cost_micro_usd AS pb_cost,
     ub.scope_id AS ub_set, ub.max_tokens AS ub_tokens, ub.max_cost_micro_usd AS ub_cost,
     CASE WHEN EXISTS (SELECT 1 FROM task_inbox i WHERE i.task_id = t.id) THEN 1 ELSE 0 END AS inbox
   FROM tasks t
   LEFT JOIN budgets pb ON pb.tenant = t.tenant AND pb.scope = 'parent' AND pb.scope_id = t.parent_task_id
   LEFT JOIN budgets ub ON ub.tenant = t.tenant AND ub.scope = 'user' AND ub.scope_id = t.user_id
   WHERE t.id = ?`;

/** What `beforeCall` answers. */
export interface CallCheck {
  row: BudgetedRow;
  standing: { parent: StandingLimits | null; user: StandingLimits | null };
  /** Steering messages wait in the task's inbox. */
  inbox: boolean;
}
/** The token columns, from the one list of token fields (inputTokens → input_tokens). */
const tokenColumns = tokenFields.map((f) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
const usageSql = (table: 'tasks' | 'subagent_records') =>
  `UPDATE ${table} SET ${tokenColumns.map((c) => `${c} = ${c} + ?`).join(', ')},
     cost_micro_usd = cost_micro_usd + coalesce(CAST(? AS BIGINT), 0),
     unpriced_tokens = unpriced_tokens + (CASE WHEN CAST(? AS BIGINT) IS NULL THEN CAST(? AS BIGINT) ELSE 0 END)
   WHERE ${table === 'tasks' ? 'id' : 'task_id'} = ?`;
const TASK_USAGE = usageSql('tasks');
const RECORD_USAGE = usageSql('subagent_records');
const INSERT_REPORT = `INSERT INTO usage_reports (task_id, n, step, ${tokenColumns.join(', ')}, model, cost_micro_usd, at, call_key)
   VALUES (?, (SELECT coalesce(max(n), 0) + 1 FROM usage_reports WHERE task_id = ?), ?, ${tokenColumns.map(() => '?').join(', ')}, ?, ?, ?, ?)
   ON CONFLICT (task_id, call_key) DO NOTHING`;
const TASK_COLUMNS = `tasks (id, tenant, parent_task_id, user_id, tool_call_id, subagent_type, description, request, status,
     idempotency_key, request_hash, created_at, session_id, previous_task_id, budget, trace_parent, depth, parent_task, max_depth,
     owner, lease_until, replay, background)`;
const INSERT_TASK = `INSERT INTO ${TASK_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** Tasks that wait for an instance across the cluster (PostgreSQL): queued, or running with nobody's lease (to be resumed). */
export const WAITING_TASKS = `owner IS NULL AND status IN ('queued', 'running')`;
/**
 * PostgreSQL: a new task stored only if the cluster's queue has room for it, in all and for its
 * tenant (the same statement counts and writes: one round trip). Typed, since a SELECT's
 * parameters take no type from the columns they fill.
 */
const INSERT_TASK_IF_ROOM = `INSERT INTO ${TASK_COLUMNS}
   SELECT ${[...Array<string>(11).fill('TEXT'), 'BIGINT', 'TEXT', 'TEXT', 'TEXT', 'TEXT', 'INTEGER', 'TEXT', 'INTEGER', 'TEXT', 'BIGINT', 'TEXT', 'INTEGER'].map((t) => `CAST(? AS ${t})`).join(', ')}
   WHERE (SELECT count(*) < ? AND count(*) FILTER (WHERE tenant = ?) < ? FROM tasks WHERE ${WAITING_TASKS})`;
/**
 * PostgreSQL: a call's usage in one statement (after the task's row lock): its report, then, when
 * the report is new, the task's and its record's sums and the record's roll-ups.
 */
const PG_USAGE = withRollupsSql(`rep AS (${INSERT_REPORT} RETURNING 1),
  t AS (${TASK_USAGE} AND EXISTS (SELECT 1 FROM rep)),
  rec AS (${RECORD_USAGE} AND EXISTS (SELECT 1 FROM rep) RETURNING *)`);
const RECORD_COLUMNS = `subagent_records (id, task_id, tenant, subagent_type, parent_task_id, user_id, tool_call_id, description, model,
     status, started_at)`;
const INSERT_RECORD = `INSERT INTO ${RECORD_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)`;
const MARK_STARTED = `UPDATE tasks SET status = 'running', model = ?, started_at = ? WHERE id = ? AND status = 'queued' AND (CAST(? AS TEXT) IS NULL OR owner = ?)`;
/**
 * PostgreSQL: a task's start in one statement (one transaction of its own): the task running (see
 * `markStarted`), then its record and its roll-ups only if it was. Answers a row per roll-up
 * written: none when it was not started.
 */
const PG_START = `${withRollupsSql(
  `started AS (${MARK_STARTED} RETURNING id),
  rec AS (INSERT INTO ${RECORD_COLUMNS} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', CAST(? AS BIGINT) FROM started RETURNING *)`,
)} RETURNING 1`;
const CLOSE_RECORD = `UPDATE subagent_records SET status = ?, completed_at = ?,
     duration_ms = CASE WHEN CAST(? AS BIGINT) > started_at THEN CAST(? AS BIGINT) - started_at ELSE 0 END WHERE task_id = ?`;
/**
 * PostgreSQL: a task's end in one statement, after its row's: its inbox emptied, its record closed
 * and the record's duration (written once, at its end: 0 before) added to its roll-ups.
 */
const PG_FINISH = withRollupsSql(
  `inbox AS (DELETE FROM task_inbox WHERE task_id = ?),
  before AS (SELECT duration_ms AS d FROM subagent_records WHERE task_id = ?),
  rec AS (${CLOSE_RECORD} RETURNING *)`,
  { from: 'rec CROSS JOIN before', where: 'WHERE rec.duration_ms <> before.d', computed: { duration_ms: 'rec.duration_ms - before.d' } },
);
const BY_ID = 'SELECT * FROM tasks WHERE id = ?';

const UNFINISHED = `status IN ('queued', 'running')`;

/** How many more tasks may wait in the cluster's queue (PostgreSQL): in all, and of the new task's tenant. */
export interface QueueRoom {
  all: number;
  tenant: number;
}

/** A new task's values, in TASK_COLUMNS' order. */
function taskValues(row: NewTaskRow): unknown[] {
  return [
    row.id,
    row.tenant,
    row.parentTaskId,
    row.userId,
    row.toolCallId ?? null,
    row.subagentType,
    row.description,
    JSON.stringify(row.request),
    row.status,
    row.idempotencyKey ?? null,
    row.requestHash ?? null,
    row.createdAt,
    row.sessionId ?? row.id,
    row.previousTaskId ?? null,
    row.budget ? JSON.stringify(row.budget) : null,
    row.traceParent ?? null,
    row.depth ?? 0,
    row.parentTask ?? null,
    row.maxDepth ?? 0,
    row.owner ?? null,
    row.leaseUntil ?? null,
    row.replay ? JSON.stringify(row.replay) : null,
    row.background ? 1 : 0,
  ];
}

/**
 * Tasks and their usage records. Token counts are added step by step in SQL, so what is stored is
 * always the sum of the steps that finished, whatever happens to the process afterwards. The
 * statements are the same on SQLite and PostgreSQL, but for a step's end, a call's bill and a task's
 * start and end, which PostgreSQL writes in one statement each (data-modifying WITH clauses, which
 * SQLite has not); `in(tx)` gives the store inside a transaction. Its pauses and approvals are
 * pause-store.ts's, its conversation and inbox transcript-store.ts's, its worktree's state
 * worktree-store.ts's: one store to its callers.
 */
export function createTaskStore(sql: SqlClient) {
  /** Every write that is more than one statement runs in a transaction of its own, or the caller's. */
  const atomically = <R>(body: (tx: SqlClient) => Promise<R>) => sql.transaction(body);

  const store = {
    ...createPauseStore(sql),
    ...createOutcomeStore(sql),
    ...createTranscriptStore(sql),
    ...createWorktreeStore(sql),
    ...createChildStore(sql),
    /**
     * Stores a new task (with its owner and lease when the admitting instance holds it while it
     * sets it up). `room`: PostgreSQL, how many more tasks may wait in the cluster's queue, in all
     * and of its tenant; the task is stored only if they may (false: not stored).
     */
    async insert(row: NewTaskRow, room?: QueueRoom): Promise<boolean> {
      const values = taskValues(row);
      if (!room) return (await sql.run(INSERT_TASK, values)) > 0;
      return (await sql.run(INSERT_TASK_IF_ROOM, [...values, room.all, row.tenant, room.tenant])) > 0;
    },

    async get(tenant: string, id: string): Promise<TaskRow | undefined> {
      const row = await store.getById(id);
      return row && row.tenant === tenant ? row : undefined;
    },

    async getById(id: string): Promise<TaskRow | undefined> {
      return taskById(sql, id);
    },

    /**
     * What a model call is checked against, in one statement: the task as stored now (the
     * columns its budgets are checked on: not its request, which would be parsed at every step),
     * the standing budgets of its parent and its user (null: none), and whether steering
     * messages wait for it.
     */
    async beforeCall(taskId: string): Promise<CallCheck | undefined> {
      const raw = await sql.get(BEFORE_CALL, [taskId]);
      if (!raw) return undefined;
      const standing = (set: unknown, tokens: unknown, cost: unknown) =>
        set === null || set === undefined ? null : { maxTokens: tokens === null ? null : Number(tokens), maxCostMicroUsd: cost === null ? null : Number(cost) };
      return {
        row: budgetedOf(raw),
        standing: { parent: standing(raw.pb_set, raw.pb_tokens, raw.pb_cost), user: standing(raw.ub_set, raw.ub_tokens, raw.ub_cost) },
        inbox: Number(raw.inbox) === 1,
      };
    },

    async findByIdempotencyKey(tenant: string, key: string): Promise<TaskRow | undefined> {
      const raw = await sql.get('SELECT * FROM tasks WHERE tenant = ? AND idempotency_key = ?', [tenant, key]);
      return raw && taskOf(raw);
    },

    /** Frees an expired Idempotency-Key so a new task may take it. */
    async clearIdempotencyKey(id: string): Promise<void> {
      await sql.run('UPDATE tasks SET idempotency_key = NULL WHERE id = ?', [id]);
    },

    /** Newest first; `cursor` is the id of the last task of the previous page. */
    async list(tenant: string, filter: TaskFilter, limit: number, cursor?: string): Promise<TaskRow[]> {
      const where = ['tenant = ?'];
      const params: unknown[] = [tenant];
      const add = (clause: string, value: unknown) => {
        where.push(clause);
        params.push(value);
      };
      if (filter.parentTaskId) add('parent_task_id = ?', filter.parentTaskId);
      if (filter.userId) add('user_id = ?', filter.userId);
      if (filter.status) add('status = ?', filter.status);
      if (filter.sessionId) add('session_id = ?', filter.sessionId);
      if (cursor) add('id < ?', cursor);
      const rows = await sql.all(`SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`, [...params, limit]);
      return rows.map(taskOf);
    },

    /**
     * `queued → running`, and the task's one usage record, in one transaction. Written again with
     * the same `startedAt` after a lost COMMIT answer, it finds its own start and adds nothing.
     */
    async markStarted(task: TaskRow, model: string | null, startedAt: number, owner: string | null = null): Promise<void> {
      // PostgreSQL: only while this instance owns it, and only a task still queued. An instance
      // paused between its claim and this write finds the task taken over (and maybe started, its
      // record written) by another, even if it owns it again since (`TaskTakenOver`: it is then
      // left to expire and be resumed, never started twice).
      const started = [model, startedAt, task.id, owner, owner];
      /** Not started now: written again after a COMMIT whose answer was lost (the start is there, and is this one), or taken over. */
      const notStarted = async (tx: SqlClient) => {
        const now = await tx.get<{ status: string; started_at: number | string | null; owner: string | null }>(
          'SELECT status, started_at, owner FROM tasks WHERE id = ?',
          [task.id],
        );
        if (now?.status === 'running' && Number(now.started_at) === startedAt && (owner === null || now.owner === owner)) return;
        throw new TaskTakenOver(task.id);
      };
      const record = [
        `rec_${ulid(startedAt)}`,
        task.id,
        task.tenant,
        task.subagentType,
        task.parentTaskId,
        task.userId,
        task.toolCallId,
        task.description,
        model,
        startedAt,
      ];
      if (sql.dialect === 'postgres') {
        // One statement, its own transaction: one round trip. One that started nothing wrote nothing.
        if ((await sql.all(PG_START, [...started, ...record, ...rollupParams({ tasks: 1 })])).length === 0) await notStarted(sql);
        return;
      }
      return atomically(async (tx) => {
        if ((await tx.run(MARK_STARTED, started)) === 0) return notStarted(tx);
        tx.send(INSERT_RECORD, record);
        addToRollups(tx, task.id, { tasks: 1 });
      });
    },

    /**
     * Bills one model call's usage, as the provider reported it: a report row and the task's and
     * record's token counts, in one transaction, the moment the call ended.
     */
    addUsage(taskId: string, step: number, usage: TokenUsage, price: CallPrice, at: number, callKey: string | null = null): Promise<void> {
      const u = usageOf(usage);
      const tokens = tokenFields.map((f) => u[f]);
      return atomically(async (tx) => {
        // PostgreSQL: two instances may bill one task at once (a deposed owner's late call and the
        // new owner's): the task's row lock orders them, so each report's number (max + 1, read
        // after the lock) is free, where it would otherwise collide and lose the bill.
        // Written again after a COMMIT whose answer was lost (the storage guard repeats the write):
        // the call's key is there already, and nothing is added twice.
        const report = [taskId, taskId, step, ...tokens, price.model, price.costMicroUsd, at, callKey];
        const add = [...tokens, price.costMicroUsd, price.costMicroUsd, u.totalTokens, taskId];
        const rollup: RollupDelta = {
          input_tokens: u.inputTokens,
          output_tokens: u.outputTokens,
          total_tokens: u.totalTokens,
          cached_input_tokens: u.cachedInputTokens,
          reasoning_tokens: u.reasoningTokens,
          cost_micro_usd: price.costMicroUsd ?? 0,
          unpriced_tokens: price.costMicroUsd === null ? u.totalTokens : 0,
        };
        if (tx.dialect === 'postgres') {
          // The report's number is read by the next statement, after the lock (a fresh snapshot).
          tx.send('SELECT id FROM tasks WHERE id = ? FOR UPDATE', [taskId]);
          tx.send(PG_USAGE, [...report, ...add, ...add, ...rollupParams(rollup)]);
          return;
        }
        if ((await tx.run(INSERT_REPORT, report)) === 0) return;
        tx.send(TASK_USAGE, add);
        tx.send(RECORD_USAGE, add);
        addToRollups(tx, taskId, rollup);
      });
    },

    /** The model the task runs on now (after a fallback), on the task and its record (run inside the event's transaction). */
    setModel(taskId: string, model: string): Promise<void> {
      return atomically(async (tx) => {
        await tx.run('UPDATE tasks SET model = ? WHERE id = ?', [model, taskId]);
        await tx.run('UPDATE subagent_records SET model = ? WHERE task_id = ?', [model, taskId]);
      });
    },

    /** The task ran in an agent that reported no usage: its record says its tokens are unknown. */
    async usageUnreported(taskId: string): Promise<void> {
      await sql.run('UPDATE subagent_records SET usage_reported = 0 WHERE task_id = ?', [taskId]);
    },

    /** Counts one resume after a crash. */
    async countResume(taskId: string): Promise<void> {
      await sql.run('UPDATE tasks SET resumes = resumes + 1 WHERE id = ?', [taskId]);
    },

    /**
     * Writes the end state of a task and closes its record (if it started), with the messages still
     * waiting for it. Returns the new row. `owner` (on PostgreSQL, this instance) fences the write:
     * a task another instance took over, or one that already ended, is not ended again
     * (`TaskTakenOver`, and nothing of the transaction is written).
     */
    finish(taskId: string, f: FinishFields, owner: string | null = null): Promise<TaskRow> {
      return atomically(async (tx) => {
        // The row as it ends (nothing else of the transaction changes it).
        const ended = await tx.get(
          `UPDATE tasks SET status = ?, summary = ?, artifacts = ?, skipped = ?, output = ?, stop_reason = ?, error_code = ?,
             error_message = ?, completed_at = ?, worktree = ?, replay = COALESCE(?, replay), model = COALESCE(?, model)
           WHERE id = ? AND status IN ('queued', 'running', 'paused') AND (owner IS NULL OR owner = CAST(? AS TEXT)) RETURNING *`,
          [
            f.status,
            f.summary,
            JSON.stringify(f.artifacts),
            JSON.stringify(f.skipped),
            f.output === undefined || f.output === null ? null : JSON.stringify(f.output),
            f.stopReason,
            f.errorCode,
            f.errorMessage,
            f.completedAt,
            f.worktree ? JSON.stringify(f.worktree) : null,
            f.replay ? JSON.stringify(f.replay) : null,
            f.model ?? null,
            taskId,
            owner,
          ],
        );
        if (!ended) throw new TaskTakenOver(taskId);
        const closing = [f.status, f.completedAt, f.completedAt, f.completedAt, taskId];
        if (tx.dialect === 'postgres') {
          tx.send(PG_FINISH, [taskId, taskId, ...closing, ...rollupParams({}, ['duration_ms'])]);
          return taskOf(ended);
        }
        tx.send('DELETE FROM task_inbox WHERE task_id = ?', [taskId]);
        // A record's duration is written once, at its end (0 before): its roll-ups add the same.
        const before = await tx.get<{ d: number }>('SELECT duration_ms AS d FROM subagent_records WHERE task_id = ?', [taskId]);
        const after = await tx.get<{ d: number }>(`${CLOSE_RECORD} RETURNING duration_ms AS d`, closing);
        if (after && Number(after.d) !== Number(before?.d)) addToRollups(tx, taskId, { duration_ms: Number(after.d) - Number(before?.d ?? 0) });
        return taskOf(ended);
      });
    },

    /** Queued and running tasks of one parent, oldest first. */
    async unfinishedOfParent(tenant: string, parentTaskId: string): Promise<TaskRow[]> {
      const rows = await sql.all(`SELECT * FROM tasks WHERE tenant = ? AND parent_task_id = ? AND ${UNFINISHED} ORDER BY id`, [tenant, parentTaskId]);
      return rows.map(taskOf);
    },

    /** Tasks a previous process left unfinished. */
    async unfinished(): Promise<TaskRow[]> {
      const rows = await sql.all(`SELECT * FROM tasks WHERE ${UNFINISHED} ORDER BY id`);
      return rows.map(taskOf);
    },
  };
  return store;
}

/** The task is no longer this instance's to end: another one took it over, or it already ended. */
export class TaskTakenOver extends Error {
  constructor(readonly taskId: string) {
    super(`task ${taskId} was taken over by another instance or has already ended`);
    this.name = 'TaskTakenOver';
  }
}

async function taskById(sql: SqlClient, id: string): Promise<TaskRow | undefined> {
  const raw = await sql.get(BY_ID, [id]);
  return raw && taskOf(raw);
}

export type TaskStore = ReturnType<typeof createTaskStore>;
