import type {
  ApprovalAnswer,
  ApprovalRequest,
  Artifact,
  Candidate,
  CreateTaskBody,
  OutcomeResult,
  Pause,
  SkippedPath,
  StopReason,
  TaskBudget,
  TokenCounts,
  ToolAnswer,
  WorktreeState,
} from '../shapes/task.ts';
import type { ReplayBatchRow, ReplayState, ReplayVariant } from '../shapes/replay.ts';
import type { ModelMessage } from 'ai';
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { sql } from 'drizzle-orm';

/** Token columns shared by tasks, records and usage reports: integers, never null, one per token field. */
const tokenColumns = () =>
  ({
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    totalTokens: integer('total_tokens').notNull().default(0),
    cachedInputTokens: integer('cached_input_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
  }) satisfies Record<keyof TokenCounts, unknown>;

/** What the tokens of a task or record cost, and how many of them had no price. */
const costColumns = () => ({
  costMicroUsd: integer('cost_micro_usd').notNull().default(0),
  unpricedTokens: integer('unpriced_tokens').notNull().default(0),
});

export const tasks = sqliteTable(
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
    request: text('request', { mode: 'json' }).notNull().$type<CreateTaskBody>(),
    model: text('model'),
    status: text('status', { enum: ['queued', 'running', 'paused', 'completed', 'aborted', 'error'] }).notNull(),
    summary: text('summary'),
    artifacts: text('artifacts', { mode: 'json' }).$type<Artifact[]>(),
    skipped: text('skipped', { mode: 'json' }).$type<SkippedPath[]>(),
    output: text('output', { mode: 'json' }),
    steps: integer('steps').notNull().default(0),
    stopReason: text('stop_reason').$type<StopReason>(),
    ...tokenColumns(),
    ...costColumns(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    idempotencyKey: text('idempotency_key'),
    requestHash: text('request_hash'),
    createdAt: integer('created_at').notNull(),
    startedAt: integer('started_at'),
    completedAt: integer('completed_at'),
    /** The first task of a follow-up chain (its own id for a fresh task), and the one this one follows. */
    sessionId: text('session_id'),
    previousTaskId: text('previous_task_id'),
    /** Times the task was resumed after a crash. */
    resumes: integer('resumes').notNull().default(0),
    /** Times its conversation was compacted. */
    compactions: integer('compactions').notNull().default(0),
    /** While `paused`: why, and since when; `pausedMs` sums the time it spent paused. */
    pause: text('pause', { mode: 'json' }).$type<Pause>(),
    /** The W3C `traceparent` the caller sent with the task (its spans are children of it). */
    traceParent: text('trace_parent'),
    /** The task's own budget: `options.budget`, as raised by its resumes. */
    budget: text('budget', { mode: 'json' }).$type<TaskBudget>(),
    pausedAt: integer('paused_at'),
    /** An approval pause: when its unanswered requests are denied (epoch ms); null for a budget pause. */
    pauseUntil: integer('pause_until'),
    /**
     * The tool calls of the step that asked for approval, with their answers: kept after the task
     * goes on (a repeated answer is recognised), `ran` once the resumed run has acted on them.
     */
    waitingCalls: text('waiting_calls', { mode: 'json' }).$type<WaitingCalls>(),
    pausedMs: integer('paused_ms').notNull().default(0),
    /**
     * On PostgreSQL, the instance running the task (null while nobody runs it) and until when its
     * lease holds (epoch ms): the owner renews it; past it another instance takes the task over.
     * Always null on SQLite, where one process runs everything.
     */
    owner: text('owner'),
    leaseUntil: integer('lease_until'),
    /** Why a `running` task nobody owns runs again when claimed: `restart` or `budget`. */
    resumeReason: text('resume_reason'),
    /**
     * On PostgreSQL, what the task is doing as its owner last said (with each lease renewal): what
     * another instance answers as its progress. JSON of the liveness state; null on SQLite.
     */
    activity: text('activity', { mode: 'json' }).$type<Activity>(),
    /** Nesting: how deep the task is (0 for one the caller started), the task that started it, and the root's limit. */
    depth: integer('depth').notNull().default(0),
    parentTask: text('parent_task'),
    maxDepth: integer('max_depth').notNull().default(0),
    /** 1 while the task waits for a child of its own: it counts against no running quota then. */
    waitingOnChild: integer('waiting_on_child').notNull().default(0),
    /** A child its lead started in the background (`run_in_background`): it is cancelled when its lead ends. */
    background: integer('background', { mode: 'boolean' }).notNull().default(false),
    /** When `DELETE /tasks/:id`, the retention sweep or a user's erasure purged its content (epoch ms); null otherwise. */
    purgedAt: integer('purged_at'),
    /** A worktree task's changes once it ended, when they were applied and its copy removed; null otherwise. */
    worktree: text('worktree', { mode: 'json' }).$type<WorktreeState>(),
    /** A replay (POST /tasks/:id/replay): the task it replays, how, where it left the record, and once it ended how it compares; null otherwise. */
    replay: text('replay', { mode: 'json' }).$type<ReplayState>(),
    /** A task with an outcome: where its checks of `complete` stand, once the first ran (or the run ended); null otherwise. */
    outcome: text('outcome', { mode: 'json' }).$type<OutcomeResult>(),
    /** A task with `options.candidates`: its attempts (child tasks) as last seen, the selected one marked; null otherwise. */
    candidates: text('candidates', { mode: 'json' }).$type<Candidate[]>(),
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

export const subagentRecords = sqliteTable(
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
    steps: integer('steps').notNull().default(0),
    ...tokenColumns(),
    ...costColumns(),
    status: text('status').notNull(),
    startedAt: integer('started_at').notNull(),
    completedAt: integer('completed_at'),
    durationMs: integer('duration_ms').notNull().default(0),
    /** False when the task ran in an external agent that reported no usage: its tokens are unknown, not zero. */
    usageReported: integer('usage_reported', { mode: 'boolean' }).notNull().default(true),
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
export const usageReports = sqliteTable(
  'usage_reports',
  {
    taskId: text('task_id').notNull(),
    n: integer('n').notNull(),
    step: integer('step').notNull(),
    ...tokenColumns(),
    /** The model that was called, and what the call cost (null: the model has no price). */
    model: text('model'),
    costMicroUsd: integer('cost_micro_usd'),
    at: integer('at').notNull(),
    /** The model call's own key: a write repeated after a lost COMMIT answer bills it once. */
    callKey: text('call_key'),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] }), uniqueIndex('usage_reports_call').on(t.taskId, t.callKey)],
);

export const taskEvents = sqliteTable(
  'task_events',
  {
    taskId: text('task_id').notNull(),
    seq: integer('seq').notNull(),
    type: text('type').notNull(),
    at: integer('at').notNull(),
    data: text('data').notNull(),
    /** `<parentTaskId>@<tenant>` and the event's place among all events of that parent (the parent stream's cursor). */
    parentKey: text('parent_key'),
    parentSeq: integer('parent_seq'),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] }), index('task_events_parent').on(t.parentKey, t.parentSeq)],
);

/**
 * A task's conversation as the model sees it (the system prompt aside): one row per message, in
 * order, written with the step that added it (step 0: what the task started with). Compaction
 * replaces the rows.
 */
export const taskMessages = sqliteTable(
  'task_messages',
  {
    taskId: text('task_id').notNull(),
    n: integer('n').notNull(),
    step: integer('step').notNull(),
    message: text('message', { mode: 'json' }).notNull().$type<ModelMessage>(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] })],
);

/**
 * Steering messages accepted for a task and not yet handed to its model: in the database, so they
 * reach the task on whichever instance runs it, and survive a restart. Taken at its next step.
 */
export const taskInbox = sqliteTable(
  'task_inbox',
  {
    taskId: text('task_id').notNull(),
    n: integer('n').notNull(),
    text: text('text').notNull(),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.n] })],
);

/**
 * Sums of the usage records, kept in the same transactions as the records: per tenant, per
 * dimension (`all`, `user`, `parent`, `type`, `model`) and key, per UTC day of the records' start
 * and for all time (`day` = `*`). `GET /usage` reads them instead of a million records.
 */
export const usageRollups = sqliteTable(
  'usage_rollups',
  {
    tenant: text('tenant').notNull(),
    dim: text('dim').notNull(),
    key: text('key').notNull(),
    day: text('day').notNull(),
    tasks: integer('tasks').notNull().default(0),
    steps: integer('steps').notNull().default(0),
    ...tokenColumns(),
    ...costColumns(),
    durationMs: integer('duration_ms').notNull().default(0),
  },
  // The key clusters one day's keys (every user, all time: one range read); the index finds one
  // key's days (a user by day). The table is WITHOUT ROWID (added by hand to migration 0005).
  (t) => [primaryKey({ columns: [t.tenant, t.dim, t.day, t.key] }), index('usage_rollups_by_key').on(t.tenant, t.dim, t.key, t.day)],
);

/** A tenant's webhook endpoint: where to POST which task events, signed with its secret. */
export const webhooks = sqliteTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    url: text('url').notNull(),
    events: text('events', { mode: 'json' }).notNull().$type<string[]>(),
    secret: text('secret').notNull(),
    createdAt: integer('created_at').notNull(),
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
    failingSince: integer('failing_since'),
    /** When it was disabled for failing longer than WEBHOOK_DISABLE_AFTER_MS, and why (the tenant sees both). */
    disabledAt: integer('disabled_at'),
    disabledReason: text('disabled_reason'),
  },
  (t) => [index('webhooks_tenant').on(t.tenant, t.id), index('webhooks_task').on(t.taskId)],
);

/**
 * The outbox: one row per delivery, written in the transaction of the event that causes it. Its
 * id is the `webhook-id` of every attempt.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    tenant: text('tenant').notNull(),
    event: text('event').notNull(),
    taskId: text('task_id').notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    deliveredAt: integer('delivered_at'),
  },
  (t) => [index('webhook_deliveries_due').on(t.status, t.nextAttemptAt), index('webhook_deliveries_of').on(t.webhookId, t.id)],
);

/** A standing budget of a parent task or a user, per tenant. */
export const budgets = sqliteTable(
  'budgets',
  {
    tenant: text('tenant').notNull(),
    scope: text('scope', { enum: ['parent', 'user'] }).notNull(),
    scopeId: text('scope_id').notNull(),
    maxTokens: integer('max_tokens'),
    maxCostMicroUsd: integer('max_cost_micro_usd'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenant, t.scope, t.scopeId] })],
);

/** A running task's liveness as its owner instance last stored it (epoch ms). */
/**
 * The calls of the step that waits on the caller: all of them (allowed ones ran already), each
 * asked one (`ask`: an approval; `client`: a caller-run tool's call) with a request id and its
 * answer as given.
 */
export interface WaitingCalls {
  step: number;
  calls: WaitingCall[];
  /** The resumed run has acted on the answers (their results are in the conversation). */
  ran: boolean;
  /**
   * The calls wait in a process that runs on (an ACP agent's permission requests): the task stays
   * `running`, holding its slot and lease, and its runner reads the answers from here.
   */
  live?: boolean;
  /**
   * A live wait that came while a step's approved calls ran (a command asked about a host): their
   * record, put back when the wait ends; a run cut meanwhile finds their started calls here.
   */
  behind?: WaitingCalls;
}

export type WaitingCall = ApprovalRequest & {
  rule: string | null;
  requestId: string;
  /**
   * An allowed call: when the resumed run started it (epoch ms), stored before it acts on the
   * world. Started but not `ran`, its run was cut (a crash, a takeover): it never runs again.
   */
  startedAt?: number;
} & ({ decision: 'allow' | 'deny' | 'ask'; answer: ApprovalAnswer | null } | { decision: 'client'; answer: ToolAnswer | null });

export interface Activity {
  phase: 'model' | 'tool';
  step: number;
  tool?: string;
  phaseSince: number;
  lastActivityAt: number;
}

export type TaskRow = typeof tasks.$inferSelect;
export type NewTaskRow = typeof tasks.$inferInsert;
export type RecordRow = typeof subagentRecords.$inferSelect;

/**
 * Who changed what: budgets, webhooks, keys, approvals, deletions and erasures, per tenant, newest
 * first by id (a ULID). `key` is the caller key's fingerprint, never the key. Kept past the
 * retention of tasks.
 */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    at: integer('at').notNull(),
    key: text('key').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
  },
  (t) => [index('audit_log_tenant').on(t.tenant, t.id)],
);

/** API keys made by an admin (`POST /keys`): stored as their SHA-256 only, revoked by `DELETE /keys/:id`. */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    role: text('role', { enum: ['admin', 'submit', 'read'] }).notNull(),
    name: text('name'),
    hash: text('hash').notNull().unique(),
    createdAt: integer('created_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('api_keys_tenant').on(t.tenant, t.id)],
);

/** A batch of replays (`POST /replays`): one row per (task, variant), each naming the replay it started (JSON). */
export const replayBatches = sqliteTable(
  'replay_batches',
  {
    id: text('id').primaryKey(),
    tenant: text('tenant').notNull(),
    createdAt: integer('created_at').notNull(),
    variants: text('variants', { mode: 'json' }).notNull().$type<ReplayVariant[]>(),
    rows: text('rows', { mode: 'json' }).notNull().$type<ReplayBatchRow[]>(),
  },
  (t) => [index('replay_batches_tenant').on(t.tenant, t.id)],
);
