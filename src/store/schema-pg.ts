/**
 * The PostgreSQL tables: the same tables, columns and indexes as `schema.ts` (SQLite), so the same
 * statements and the same row decoding (`rows.ts`, from the SQLite schema) serve both engines.
 * Integers are BIGINT (epoch milliseconds, token counts); JSON is stored as text, and booleans
 * as 0/1, exactly as on SQLite. drizzle-kit generates `migrations-pg/` from this file.
 */
import { bigint, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

/** Token columns shared by tasks, records and usage reports: integers, never null, one per token field. */
const tokenColumns = () => ({
  inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
  outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
  totalTokens: bigint('total_tokens', { mode: 'number' }).notNull().default(0),
  cachedInputTokens: bigint('cached_input_tokens', { mode: 'number' }).notNull().default(0),
  reasoningTokens: bigint('reasoning_tokens', { mode: 'number' }).notNull().default(0),
});

/** What the tokens of a task or record cost, and how many of them had no price. */
const costColumns = () => ({
  costMicroUsd: bigint('cost_micro_usd', { mode: 'number' }).notNull().default(0),
  unpricedTokens: bigint('unpriced_tokens', { mode: 'number' }).notNull().default(0),
});

export const tasks = pgTable(
  'tasks',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    parentTaskId: text('parent_task_id').notNull(),
    userId: text('user_id').notNull(),
    toolCallId: text('tool_call_id'),
    subagentType: text('subagent_type').notNull(),
    description: text('description').notNull(),
    /** The request body as received (prompt, context, options): the runner's whole input. */
    request: text('request').notNull(),
    model: text('model'),
    status: text('status', { enum: ['queued', 'running', 'paused', 'completed', 'aborted', 'error'] }).notNull(),
    summary: text('summary'),
    artifacts: text('artifacts'),
    skipped: text('skipped'),
    output: text('output'),
    steps: bigint('steps', { mode: 'number' }).notNull().default(0),
    stopReason: text('stop_reason'),
    ...tokenColumns(),
    ...costColumns(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    idempotencyKey: text('idempotency_key'),
    requestHash: text('request_hash'),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    startedAt: bigint('started_at', { mode: 'number' }),
    completedAt: bigint('completed_at', { mode: 'number' }),
    /** The first task of a follow-up chain (its own id for a fresh task), and the one this one follows. */
    sessionId: text('session_id'),
    previousTaskId: text('previous_task_id'),
    /** Times the task was resumed after a crash. */
    resumes: bigint('resumes', { mode: 'number' }).notNull().default(0),
    /** Times its conversation was compacted. */
    compactions: bigint('compactions', { mode: 'number' }).notNull().default(0),
    /** While `paused`: why, and since when; `pausedMs` sums the time it spent paused. */
    pause: text('pause'),
    /** The W3C `traceparent` the caller sent with the task (its spans are children of it). */
    traceParent: text('trace_parent'),
    /** The task's own budget: `options.budget`, as raised by its resumes. */
    budget: text('budget'),
    pausedAt: bigint('paused_at', { mode: 'number' }),
    pauseUntil: bigint('pause_until', { mode: 'number' }),
    waitingCalls: text('waiting_calls'),
    pausedMs: bigint('paused_ms', { mode: 'number' }).notNull().default(0),
    /**
     * On PostgreSQL, the instance running the task (null while nobody runs it) and until when its
     * lease holds (epoch ms): the owner renews it; past it another instance takes the task over.
     * Always null on SQLite, where one process runs everything.
     */
    owner: text('owner'),
    leaseUntil: bigint('lease_until', { mode: 'number' }),
    /** Why a `running` task nobody owns runs again when claimed: `restart` or `budget`. */
    resumeReason: text('resume_reason'),
    /**
     * On PostgreSQL, what the task is doing as its owner last said (with each lease renewal): what
     * another instance answers as its progress. JSON of the liveness state; null on SQLite.
     */
    activity: text('activity'),
    /** Nesting: how deep the task is (0 for one the caller started), the task that started it, and the root's limit. */
    depth: integer('depth').notNull().default(0),
    parentTask: text('parent_task'),
    maxDepth: integer('max_depth').notNull().default(0),
    /** 1 while the task waits for a child of its own: it counts against no running quota then. */
    waitingOnChild: integer('waiting_on_child').notNull().default(0),
    /** A child its lead started in the background (`run_in_background`): it is cancelled when its lead ends. 0/1. */
    background: integer('background').notNull().default(0),
    /** When `DELETE /tasks/:id`, the retention sweep or a user's erasure purged its content (epoch ms); null otherwise. */
    purgedAt: bigint('purged_at', { mode: 'number' }),
    /** A worktree task's changes (JSON) once it ended, when they were applied and its copy removed; null otherwise. */
    worktree: text('worktree'),
    /** A replay (POST /tasks/:id/replay): the task it replays, how, where it left the record, and once it ended how it compares (JSON); null otherwise. */
    replay: text('replay'),
    /** A task with an outcome (JSON): where its checks of `complete` stand; null otherwise. */
    outcome: text('outcome'),
    /** A task with `options.candidates` (JSON): its attempts as last seen, the selected one marked; null otherwise. */
    candidates: text('candidates'),
  },
  (t) => [
    index('tasks_tenant_id').on(t.tenant, t.id),
    index('tasks_session').on(t.tenant, t.sessionId, t.id),
    index('tasks_parent_task').on(t.parentTask),
    index('tasks_parent').on(t.tenant, t.parentTaskId, t.id),
    index('tasks_status').on(t.status),
    index('tasks_owner').on(t.owner, t.status),
    // Worktree tasks by end, for the sweep that removes their copies (every other task has none).
    index('tasks_worktree')
      .on(t.completedAt)
      .where(sql`worktree IS NOT NULL`),
    uniqueIndex('tasks_idempotency').on(t.tenant, t.idempotencyKey),
    // Finished tasks not purged yet, by end: what the retention sweep reads.
    index('tasks_retention')
      .on(t.completedAt)
      .where(sql`purged_at IS NULL AND completed_at IS NOT NULL`),
    index('tasks_user').on(t.tenant, t.userId),
  ],
);

export const subagentRecords = pgTable(
  'subagent_records',
  {
    id: text('id').primaryKey(),
    taskId: text('task_id').notNull().unique(),
    tenant: text('tenant').notNull(),
    subagentType: text('subagent_type').notNull(),
    parentTaskId: text('parent_task_id').notNull(),
    userId: text('user_id').notNull(),
    toolCallId: text('tool_call_id'),
    description: text('description').notNull(),
    model: text('model'),
    steps: bigint('steps', { mode: 'number' }).notNull().default(0),
    ...tokenColumns(),
    ...costColumns(),
    status: text('status').notNull(),
    startedAt: bigint('started_at', { mode: 'number' }).notNull(),
    completedAt: bigint('completed_at', { mode: 'number' }),
    durationMs: bigint('duration_ms', { mode: 'number' }).notNull().default(0),
    /** False when the task ran in an external agent that reported no usage: its tokens are unknown, not zero. */
    usageReported: bigint('usage_reported', { mode: 'number' }).notNull().default(1),
  },
  (t) => [
    index('records_tenant_started').on(t.tenant, t.startedAt),
    index('records_user').on(t.tenant, t.userId, t.startedAt),
    index('records_parent').on(t.tenant, t.parentTaskId),
  ],
);

/**
 * Every usage the provider reported, one row per model call, written the moment the call ended (or
 * was cut): the task's and the record's token counts are the sums of these rows, kept in the same
 * transaction. `step` is the step the call belonged to; a retried step has several rows.
 */
export const usageReports = pgTable(
  'usage_reports',
  {
    taskId: text('task_id').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
    step: bigint('step', { mode: 'number' }).notNull(),
    ...tokenColumns(),
    /** The model that was called, and what the call cost (null: the model has no price). */
    model: text('model'),
    costMicroUsd: bigint('cost_micro_usd', { mode: 'number' }),
    at: bigint('at', { mode: 'number' }).notNull(),
    /** The model call's own key: a write repeated after a lost COMMIT answer bills it once. */
    callKey: text('call_key'),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] }), uniqueIndex('usage_reports_call').on(t.taskId, t.callKey)],
);

export const taskEvents = pgTable(
  'task_events',
  {
    taskId: text('task_id').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    type: text('type').notNull(),
    at: bigint('at', { mode: 'number' }).notNull(),
    data: text('data').notNull(),
    /** `<parentTaskId>@<tenant>` and the event's place among all events of that parent (the parent stream's cursor). */
    parentKey: text('parent_key'),
    parentSeq: bigint('parent_seq', { mode: 'number' }),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] }), index('task_events_parent').on(t.parentKey, t.parentSeq)],
);

/**
 * A task's conversation as the model sees it (the system prompt aside): one row per message, in
 * order, written with the step that added it (step 0: what the task started with). Compaction
 * replaces the rows.
 */
export const taskMessages = pgTable(
  'task_messages',
  {
    taskId: text('task_id').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
    step: bigint('step', { mode: 'number' }).notNull(),
    message: text('message').notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] })],
);

/**
 * Steering messages accepted for a task and not yet handed to its model: in the database, so they
 * reach the task on whichever instance runs it, and survive a restart. Taken at its next step.
 */
export const taskInbox = pgTable(
  'task_inbox',
  {
    taskId: text('task_id').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
    text: text('text').notNull(),
    at: bigint('at', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] })],
);

/**
 * Sums of the usage records, kept in the same transactions as the records: per tenant, per
 * dimension (`all`, `user`, `parent`, `type`, `model`) and key, per UTC day of the records' start
 * and for all time (`day` = `*`). `GET /usage` reads them instead of a million records.
 */
export const usageRollups = pgTable(
  'usage_rollups',
  {
    tenant: text('tenant').notNull(),
    dim: text('dim').notNull(),
    key: text('key').notNull(),
    day: text('day').notNull(),
    tasks: bigint('tasks', { mode: 'number' }).notNull().default(0),
    steps: bigint('steps', { mode: 'number' }).notNull().default(0),
    ...tokenColumns(),
    ...costColumns(),
    durationMs: bigint('duration_ms', { mode: 'number' }).notNull().default(0),
  },
  // The key clusters one day's keys (every user, all time: one range read); the index finds one key's days.
  (t) => [primaryKey({ columns: [t.tenant, t.dim, t.day, t.key] }), index('usage_rollups_by_key').on(t.tenant, t.dim, t.key, t.day)],
);

/** A tenant's webhook endpoint: where to POST which task events, signed with its secret. */
export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    url: text('url').notNull(),
    events: text('events').notNull(),
    secret: text('secret').notNull(),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    /**
     * `webhook`: a `POST /webhooks` endpoint (Standard Webhooks, every task of the tenant).
     * `a2a`: an A2A push-notification config of one task (`taskId`), sent as A2A StreamResponse
     * JSON with its token or authorization header, in the same outbox.
     */
    kind: text('kind', { enum: ['webhook', 'a2a'] })
      .notNull()
      .default('webhook'),
    taskId: text('task_id'),
    /** The A2A config's own id (unique per task). */
    configId: text('config_id'),
    /** Sent as `X-A2A-Notification-Token`. */
    token: text('token'),
    /** Sent as `Authorization` (`<scheme> <credentials>`). */
    authorization: text('authorization'),
    /** The A2A protocol version the config was made with (`1.0` or `0.3`): the payload's format. */
    a2aVersion: text('a2a_version'),
    /** When its current run of failed attempts began (null once an attempt succeeds). */
    failingSince: bigint('failing_since', { mode: 'number' }),
    /** When it was disabled for failing longer than WEBHOOK_DISABLE_AFTER_MS, and why (the tenant sees both). */
    disabledAt: bigint('disabled_at', { mode: 'number' }),
    disabledReason: text('disabled_reason'),
  },
  (t) => [index('webhooks_tenant').on(t.tenant, t.id), index('webhooks_task').on(t.taskId)],
);

/**
 * The outbox: one row per delivery, written in the transaction of the event that causes it. Its
 * id is the `webhook-id` of every attempt.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    tenant: text('tenant').notNull(),
    event: text('event').notNull(),
    taskId: text('task_id').notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    attempts: bigint('attempts', { mode: 'number' }).notNull().default(0),
    nextAttemptAt: bigint('next_attempt_at', { mode: 'number' }).notNull(),
    lastError: text('last_error'),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    deliveredAt: bigint('delivered_at', { mode: 'number' }),
  },
  (t) => [index('webhook_deliveries_due').on(t.status, t.nextAttemptAt), index('webhook_deliveries_of').on(t.webhookId, t.id)],
);

/** A standing budget of a parent task or a user, per tenant. */
export const budgets = pgTable(
  'budgets',
  {
    tenant: text('tenant').notNull(),
    scope: text('scope', { enum: ['parent', 'user'] }).notNull(),
    scopeId: text('scope_id').notNull(),
    maxTokens: bigint('max_tokens', { mode: 'number' }),
    maxCostMicroUsd: bigint('max_cost_micro_usd', { mode: 'number' }),
    updatedAt: bigint('updated_at', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenant, t.scope, t.scopeId] })],
);

/**
 * Who changed what: budgets, webhooks, keys, approvals, deletions and erasures, per tenant, newest
 * first by id (a ULID). `key` is the caller key's fingerprint, never the key. Kept past the
 * retention of tasks.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    at: bigint('at', { mode: 'number' }).notNull(),
    key: text('key').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
  },
  (t) => [index('audit_log_tenant').on(t.tenant, t.id)],
);

/** API keys made by an admin (`POST /keys`): stored as their SHA-256 only, revoked by `DELETE /keys/:id`. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    role: text('role', { enum: ['admin', 'submit', 'read'] }).notNull(),
    name: text('name'),
    hash: text('hash').notNull().unique(),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    revokedAt: bigint('revoked_at', { mode: 'number' }),
  },
  (t) => [index('api_keys_tenant').on(t.tenant, t.id)],
);

/** A batch of replays (`POST /replays`): one row per (task, variant), each naming the replay it started (JSON). */
export const replayBatches = pgTable(
  'replay_batches',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    variants: text('variants').notNull(),
    rows: text('rows').notNull(),
  },
  (t) => [index('replay_batches_tenant').on(t.tenant, t.id)],
);
