import { and, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import { ulid } from 'ulid';
import type { Usage } from '../tasks/task-schemas';
import type { Db } from './database';
import { subagentRecords, tasks, type NewTaskRow, type TaskRow } from './schema';

export interface TaskFilter {
  parentTaskId?: string;
  userId?: string;
  status?: TaskRow['status'];
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

const usageSet = (u: Usage) => ({
  inputTokens: sql`${tasks.inputTokens} + ${u.inputTokens}`,
  outputTokens: sql`${tasks.outputTokens} + ${u.outputTokens}`,
  totalTokens: sql`${tasks.totalTokens} + ${u.totalTokens}`,
  cachedInputTokens: sql`${tasks.cachedInputTokens} + ${u.cachedInputTokens}`,
  reasoningTokens: sql`${tasks.reasoningTokens} + ${u.reasoningTokens}`,
  steps: sql`${tasks.steps} + 1`,
});

const recordUsageSet = (u: Usage) => ({
  inputTokens: sql`${subagentRecords.inputTokens} + ${u.inputTokens}`,
  outputTokens: sql`${subagentRecords.outputTokens} + ${u.outputTokens}`,
  totalTokens: sql`${subagentRecords.totalTokens} + ${u.totalTokens}`,
  cachedInputTokens: sql`${subagentRecords.cachedInputTokens} + ${u.cachedInputTokens}`,
  reasoningTokens: sql`${subagentRecords.reasoningTokens} + ${u.reasoningTokens}`,
  steps: sql`${subagentRecords.steps} + 1`,
});

/**
 * Tasks and their usage records. Token counts are added step by step in SQL, so what is stored is
 * always the sum of the steps that finished, whatever happens to the process afterwards.
 */
export function createTaskStore(db: Db) {
  return {
    insert(row: NewTaskRow): void {
      db.insert(tasks).values(row).run();
    },

    get(tenant: string, id: string): TaskRow | undefined {
      return db.select().from(tasks).where(and(eq(tasks.tenant, tenant), eq(tasks.id, id))).get();
    },

    getById(id: string): TaskRow | undefined {
      return db.select().from(tasks).where(eq(tasks.id, id)).get();
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
      if (cursor) where.push(lt(tasks.id, cursor));
      return db.select().from(tasks).where(and(...where)).orderBy(desc(tasks.id)).limit(limit).all();
    },

    /** `queued → running`, and the task's one usage record, in one transaction. */
    markStarted(task: TaskRow, model: string | null, startedAt: number): void {
      db.transaction((tx) => {
        tx.update(tasks).set({ status: 'running', model, startedAt }).where(eq(tasks.id, task.id)).run();
        tx.insert(subagentRecords)
          .values({
            id: `rec_${ulid()}`,
            taskId: task.id,
            tenant: task.tenant,
            subagentType: task.subagentType,
            parentTaskId: task.parentTaskId,
            userId: task.userId,
            toolCallId: task.toolCallId,
            description: task.description,
            model,
            status: 'running',
            startedAt,
          })
          .run();
      });
    },

    /** Adds one finished step's usage to the task and its record (call inside the event's transaction). */
    addStepUsage(taskId: string, usage: Usage): void {
      db.update(tasks).set(usageSet(usage)).where(eq(tasks.id, taskId)).run();
      db.update(subagentRecords).set(recordUsageSet(usage)).where(eq(subagentRecords.taskId, taskId)).run();
    },

    /** Writes the end state of a task and closes its record (if it started). Returns the new row. */
    finish(taskId: string, f: FinishFields): TaskRow {
      return db.transaction((tx) => {
        const row = tx
          .update(tasks)
          .set({
            status: f.status,
            summary: f.summary,
            artifacts: f.artifacts,
            skipped: f.skipped,
            output: f.output ?? null,
            stopReason: f.stopReason,
            errorCode: f.errorCode,
            errorMessage: f.errorMessage,
            completedAt: f.completedAt,
          })
          .where(eq(tasks.id, taskId))
          .returning()
          .get();
        tx.update(subagentRecords)
          .set({
            status: f.status,
            completedAt: f.completedAt,
            durationMs: sql`max(0, ${f.completedAt} - ${subagentRecords.startedAt})`,
          })
          .where(eq(subagentRecords.taskId, taskId))
          .run();
        return row;
      });
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
