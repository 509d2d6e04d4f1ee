import { and, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import { ulid } from 'ulid';
import { tokenFields, usageOf, type TokenUsage } from '../shapes/usage.ts';
import type { ModelMessage } from 'ai';
import type { Pause, TaskBudget } from '../shapes/task.ts';
import type { Db } from './database.ts';
import { createRollupWriter } from './rollups.ts';
import { tasks, type NewTaskRow, type TaskRow } from './schema.ts';

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
}

/**
 * Tasks and their usage records. Token counts are added step by step in SQL, so what is stored is
 * always the sum of the steps that finished, whatever happens to the process afterwards.
 *
 * The per-task writes (insert, start, each step, finish) run for every task and step, so they are
 * prepared once as plain SQLite statements: building and preparing them through the query builder
 * on each call cost about 2 ms of CPU per task (BENCHMARKS.md). Dynamic reads stay with drizzle.
 */
export function createTaskStore(db: Db) {
  const sqlite = db.$client;
  const byId = db.select().from(tasks).where(eq(tasks.id, sql.placeholder('id'))).prepare();
  const insertTask = sqlite.prepare(
    `INSERT INTO tasks (id, tenant, parent_task_id, user_id, tool_call_id, subagent_type, description, request, status,
       idempotency_key, request_hash, created_at, session_id, previous_task_id, budget, trace_parent)
     VALUES (@id, @tenant, @parentTaskId, @userId, @toolCallId, @subagentType, @description, @request, @status,
       @idempotencyKey, @requestHash, @createdAt, @sessionId, @previousTaskId, @budget, @traceParent)`,
  );
  const startTask = sqlite.prepare(`UPDATE tasks SET status = 'running', model = ?, started_at = ? WHERE id = ?`);
  const insertRecord = sqlite.prepare(
    `INSERT INTO subagent_records (id, task_id, tenant, subagent_type, parent_task_id, user_id, tool_call_id, description, model,
       status, started_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)`,
  );
  // The token columns, from the one list of token fields (inputTokens → input_tokens).
  const tokenSql = tokenFields.map((f) => ({ column: f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), param: `@${f}` }));
  const usageSql = (table: string) =>
    sqlite.prepare(
      `UPDATE ${table} SET ${tokenSql.map((t) => `${t.column} = ${t.column} + ${t.param}`).join(', ')},
         cost_micro_usd = cost_micro_usd + coalesce(@costMicroUsd, 0),
         unpriced_tokens = unpriced_tokens + (CASE WHEN @costMicroUsd IS NULL THEN @totalTokens ELSE 0 END)
       WHERE ${table === 'tasks' ? 'id' : 'task_id'} = @taskId`,
    );
  const taskUsage = usageSql('tasks');
  const recordUsage = usageSql('subagent_records');
  const insertReport = sqlite.prepare(
    `INSERT INTO usage_reports (task_id, n, step, ${tokenSql.map((t) => t.column).join(', ')}, model, cost_micro_usd, at)
     VALUES (@taskId, (SELECT coalesce(max(n), 0) + 1 FROM usage_reports WHERE task_id = @taskId), @step,
       ${tokenSql.map((t) => t.param).join(', ')}, @model, @costMicroUsd, @at)`,
  );
  const addUsage = sqlite.transaction((params: TokenUsage & CallPrice & { taskId: string; step: number; at: number }) => {
    insertReport.run(params);
    taskUsage.run(params);
    recordUsage.run(params);
    rollup(params.taskId, {
      input_tokens: params.inputTokens,
      output_tokens: params.outputTokens,
      total_tokens: params.totalTokens,
      cached_input_tokens: params.cachedInputTokens,
      reasoning_tokens: params.reasoningTokens,
      cost_micro_usd: params.costMicroUsd ?? 0,
      unpriced_tokens: params.costMicroUsd === null ? params.totalTokens : 0,
    });
  });
  const taskStep = sqlite.prepare('UPDATE tasks SET steps = steps + 1 WHERE id = ?');
  const rollup = createRollupWriter(sqlite);
  const recordDuration = sqlite.prepare('SELECT duration_ms FROM subagent_records WHERE task_id = ?').pluck();
  const readMessages = sqlite.prepare('SELECT message FROM task_messages WHERE task_id = ? ORDER BY n').pluck();
  const insertMessage = sqlite.prepare(
    `INSERT INTO task_messages (task_id, n, step, message)
     VALUES (@taskId, (SELECT coalesce(max(n), 0) + 1 FROM task_messages WHERE task_id = @taskId), @step, @message)`,
  );
  const deleteMessages = sqlite.prepare('DELETE FROM task_messages WHERE task_id = ?');
  const countResume = sqlite.prepare('UPDATE tasks SET resumes = resumes + 1 WHERE id = ?');
  const pauseTask = sqlite.prepare(`UPDATE tasks SET status = 'paused', pause = ?, paused_at = ? WHERE id = ?`);
  const unpauseTask = sqlite.prepare(
    `UPDATE tasks SET status = 'running', pause = NULL, paused_ms = paused_ms + max(0, @at - coalesce(paused_at, @at)),
       paused_at = NULL, budget = coalesce(@budget, budget) WHERE id = @id AND status = 'paused'`,
  );
  const recordStatus = sqlite.prepare('UPDATE subagent_records SET status = ? WHERE task_id = ?');
  const pausedBefore = sqlite.prepare(`SELECT id FROM tasks WHERE status = 'paused' AND paused_at < ? ORDER BY paused_at`).pluck();
  const countCompaction = sqlite.prepare('UPDATE tasks SET compactions = compactions + 1 WHERE id = ?');
  const recordStep = sqlite.prepare('UPDATE subagent_records SET steps = steps + 1 WHERE task_id = ?');
  const recordUnreported = sqlite.prepare('UPDATE subagent_records SET usage_reported = 0 WHERE task_id = ?');
  const finishTask = sqlite.prepare(
    `UPDATE tasks SET status = @status, summary = @summary, artifacts = @artifacts, skipped = @skipped, output = @output,
       stop_reason = @stopReason, error_code = @errorCode, error_message = @errorMessage, completed_at = @completedAt
     WHERE id = @id`,
  );
  const finishRecord = sqlite.prepare(
    `UPDATE subagent_records SET status = @status, completed_at = @completedAt,
       duration_ms = max(0, @completedAt - started_at) WHERE task_id = @id`,
  );
  const markStarted = sqlite.transaction((task: TaskRow, model: string | null, startedAt: number) => {
    startTask.run(model, startedAt, task.id);
    insertRecord.run(
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
    );
    rollup(task.id, { tasks: 1 });
  });
  const finish = sqlite.transaction((taskId: string, f: FinishFields) => {
    const params = {
      id: taskId,
      status: f.status,
      summary: f.summary,
      artifacts: JSON.stringify(f.artifacts),
      skipped: JSON.stringify(f.skipped),
      output: f.output === undefined || f.output === null ? null : JSON.stringify(f.output),
      stopReason: f.stopReason,
      errorCode: f.errorCode,
      errorMessage: f.errorMessage,
      completedAt: f.completedAt,
    };
    finishTask.run(params);
    // A record's duration is written once, at its end (0 before): its roll-ups add the same.
    const before = recordDuration.get(taskId) as number | undefined;
    finishRecord.run(params);
    const after = recordDuration.get(taskId) as number | undefined;
    if (after !== undefined && after !== before) rollup(taskId, { duration_ms: after - (before ?? 0) });
  });

  return {
    insert(row: NewTaskRow): void {
      insertTask.run({
        id: row.id,
        tenant: row.tenant,
        parentTaskId: row.parentTaskId,
        userId: row.userId,
        toolCallId: row.toolCallId ?? null,
        subagentType: row.subagentType,
        description: row.description,
        request: JSON.stringify(row.request),
        status: row.status,
        idempotencyKey: row.idempotencyKey ?? null,
        requestHash: row.requestHash ?? null,
        createdAt: row.createdAt,
        sessionId: row.sessionId ?? row.id,
        previousTaskId: row.previousTaskId ?? null,
        budget: row.budget ? JSON.stringify(row.budget) : null,
        traceParent: row.traceParent ?? null,
      });
    },

    get(tenant: string, id: string): TaskRow | undefined {
      const row = byId.get({ id });
      return row && row.tenant === tenant ? row : undefined;
    },

    getById(id: string): TaskRow | undefined {
      return byId.get({ id });
    },

    findByIdempotencyKey(tenant: string, key: string): TaskRow | undefined {
      return db
        .select()
        .from(tasks)
        .where(and(eq(tasks.tenant, tenant), eq(tasks.idempotencyKey, key)))
        .get();
    },

    /** Frees an expired Idempotency-Key so a new task may take it. */
    clearIdempotencyKey(id: string): void {
      db.update(tasks).set({ idempotencyKey: null }).where(eq(tasks.id, id)).run();
    },

    /** Newest first; `cursor` is the id of the last task of the previous page. */
    list(tenant: string, filter: TaskFilter, limit: number, cursor?: string): TaskRow[] {
      const where: SQL[] = [eq(tasks.tenant, tenant)];
      if (filter.parentTaskId) where.push(eq(tasks.parentTaskId, filter.parentTaskId));
      if (filter.userId) where.push(eq(tasks.userId, filter.userId));
      if (filter.status) where.push(eq(tasks.status, filter.status));
      if (filter.sessionId) where.push(eq(tasks.sessionId, filter.sessionId));
      if (cursor) where.push(lt(tasks.id, cursor));
      return db.select().from(tasks).where(and(...where)).orderBy(desc(tasks.id)).limit(limit).all();
    },

    /** `queued → running`, and the task's one usage record, in one transaction. */
    markStarted(task: TaskRow, model: string | null, startedAt: number): void {
      markStarted(task, model, startedAt);
    },

    /** Adds one finished step's usage to the task and its record (call inside the event's transaction). */
    /**
     * Bills one model call's usage, as the provider reported it: a report row and the task's and
     * record's token counts, in one transaction, the moment the call ended.
     */
    addUsage(taskId: string, step: number, usage: TokenUsage, price: CallPrice, at: number): void {
      addUsage({ taskId, step, at, ...usageOf(usage), ...price });
    },

    /** The task ran in an agent that reported no usage: its record says its tokens are unknown. */
    usageUnreported(taskId: string): void {
      recordUnreported.run(taskId);
    },

    /** Counts a finished step on the task and its record (run inside the step's event transaction). */
    countStep(taskId: string): void {
      taskStep.run(taskId);
      recordStep.run(taskId);
      rollup(taskId, { steps: 1 });
    },

    /** The task's conversation, in order (empty before it started). */
    messages(taskId: string): ModelMessage[] {
      return (readMessages.all(taskId) as string[]).map((m) => JSON.parse(m) as ModelMessage);
    },

    /** Appends what a step added to the conversation (run inside the step's event transaction). */
    appendMessages(taskId: string, step: number, messages: ModelMessage[]): void {
      for (const m of messages) insertMessage.run({ taskId, step, message: JSON.stringify(m) });
    },

    /** Replaces the conversation with its compacted form and counts the compaction. */
    replaceMessages(taskId: string, step: number, messages: ModelMessage[]): void {
      deleteMessages.run(taskId);
      for (const m of messages) insertMessage.run({ taskId, step, message: JSON.stringify(m) });
      countCompaction.run(taskId);
    },

    /** `running → paused` (the task and its record), holding why (run inside the event's transaction). */
    pause(taskId: string, pause: Pause, at: number): void {
      pauseTask.run(JSON.stringify(pause), at, taskId);
      recordStatus.run('paused', taskId);
    },

    /** `paused → running`, adding the pause to the time it spent paused; `budget` replaces its own. False if it was not paused. */
    unpause(taskId: string, budget: TaskBudget | null, at: number): boolean {
      const changed = unpauseTask.run({ id: taskId, at, budget: budget ? JSON.stringify(budget) : null }).changes > 0;
      if (changed) recordStatus.run('running', taskId);
      return changed;
    },

    /** Paused tasks that paused before `cutoff` (epoch ms), oldest first. */
    pausedBefore(cutoff: number): string[] {
      return pausedBefore.all(cutoff) as string[];
    },

    /** Counts one resume after a crash. */
    countResume(taskId: string): void {
      countResume.run(taskId);
    },

    /** Writes the end state of a task and closes its record (if it started). Returns the new row. */
    finish(taskId: string, f: FinishFields): TaskRow {
      finish(taskId, f);
      return byId.get({ id: taskId })!;
    },

    /** Queued and running tasks of one parent, oldest first. */
    unfinishedOfParent(tenant: string, parentTaskId: string): TaskRow[] {
      return db
        .select()
        .from(tasks)
        .where(and(eq(tasks.tenant, tenant), eq(tasks.parentTaskId, parentTaskId), inArray(tasks.status, ['queued', 'running'])))
        .orderBy(tasks.id)
        .all();
    },

    /** Tasks a previous process left unfinished. */
    unfinished(): TaskRow[] {
      return db.select().from(tasks).where(inArray(tasks.status, ['queued', 'running'])).orderBy(tasks.id).all();
    },
  };
}

export type TaskStore = ReturnType<typeof createTaskStore>;
