import { and, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm';
import type { Db } from './database';
import { subagentRecords as r, type RecordRow } from './schema';

export interface UsageFilter {
  userId?: string;
  parentTaskId?: string;
  subagentType?: string;
  model?: string;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
}

export type UsageGroupBy = 'user' | 'parentTask' | 'subagentType' | 'model' | 'day';

const groupColumns: Record<UsageGroupBy, SQL> = {
  user: sql`${r.userId}`,
  parentTask: sql`${r.parentTaskId}`,
  subagentType: sql`${r.subagentType}`,
  model: sql`coalesce(${r.model}, '')`,
  day: sql`strftime('%Y-%m-%d', ${r.startedAt} / 1000, 'unixepoch')`,
};

const sums = {
  tasks: sql<number>`count(*)`.mapWith(Number),
  steps: sql<number>`coalesce(sum(${r.steps}), 0)`.mapWith(Number),
  inputTokens: sql<number>`coalesce(sum(${r.inputTokens}), 0)`.mapWith(Number),
  outputTokens: sql<number>`coalesce(sum(${r.outputTokens}), 0)`.mapWith(Number),
  totalTokens: sql<number>`coalesce(sum(${r.totalTokens}), 0)`.mapWith(Number),
  cachedInputTokens: sql<number>`coalesce(sum(${r.cachedInputTokens}), 0)`.mapWith(Number),
  reasoningTokens: sql<number>`coalesce(sum(${r.reasoningTokens}), 0)`.mapWith(Number),
  durationMs: sql<number>`coalesce(sum(${r.durationMs}), 0)`.mapWith(Number),
};

export type UsageTotals = { [K in keyof typeof sums]: number };

/** Usage records: sums for billing and the raw rows. Always scoped to one tenant. */
export function createUsageStore(db: Db) {
  function where(tenant: string, f: UsageFilter): SQL {
    const c: SQL[] = [eq(r.tenant, tenant)];
    if (f.userId) c.push(eq(r.userId, f.userId));
    if (f.parentTaskId) c.push(eq(r.parentTaskId, f.parentTaskId));
    if (f.subagentType) c.push(eq(r.subagentType, f.subagentType));
    if (f.model) c.push(eq(r.model, f.model));
    if (f.from !== undefined) c.push(gte(r.startedAt, f.from));
    if (f.to !== undefined) c.push(lt(r.startedAt, f.to));
    return and(...c)!;
  }

  return {
    totals(tenant: string, f: UsageFilter): UsageTotals {
      return db.select(sums).from(r).where(where(tenant, f)).get() as UsageTotals;
    },

    groups(tenant: string, f: UsageFilter, groupBy: UsageGroupBy): Array<UsageTotals & { key: string }> {
      const key = groupColumns[groupBy];
      return db
        .select({ key: sql<string>`${key}`.mapWith(String), ...sums })
        .from(r)
        .where(where(tenant, f))
        .groupBy(key)
        .orderBy(key)
        .all();
    },

    /** Newest first; `cursor` is the id of the last record of the previous page. */
    records(tenant: string, f: UsageFilter, limit: number, cursor?: string): RecordRow[] {
      const c = where(tenant, f);
      return db
        .select()
        .from(r)
        .where(cursor ? and(c, lt(r.id, cursor)) : c)
        .orderBy(desc(r.id))
        .limit(limit)
        .all();
    },
  };
}

export type UsageStore = ReturnType<typeof createUsageStore>;
