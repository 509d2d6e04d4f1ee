import { and, desc, eq, gt, gte, lt, ne, sql, type SQL } from 'drizzle-orm';
import { QueryBuilder, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Dialect } from './sql-client.ts';
import type { JsonPage, SqlReader } from './read-worker.ts';
import { subagentRecords as r, usageRollups as u } from './schema.ts';
import { daySql, type RollupDim } from './rollups.ts';
import { tokenFields, type Usage } from '../shapes/usage.ts';
import type { StoredUsageRecord, UsageTotals } from '../shapes/usage-report.ts';

type TokenField = keyof Usage;

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

/** Where `/usage` sums come from: the roll-ups when they can answer (`auto`), or the raw records. */
export type UsageSource = 'auto' | 'records';

/** The roll-up dimension of each groupBy (day is a column of every dimension). */
const rollupDimOf: Record<Exclude<UsageGroupBy, 'day'>, RollupDim> = { user: 'user', parentTask: 'parent', subagentType: 'type', model: 'model' };
const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const groupColumnsOf = (dialect: Dialect): Record<UsageGroupBy, SQL> => ({
  user: sql`${r.userId}`,
  parentTask: sql`${r.parentTaskId}`,
  subagentType: sql`${r.subagentType}`,
  model: sql`coalesce(${r.model}, '')`,
  day: sql.raw(daySql(dialect, '"subagent_records"."started_at"')),
});

const sumOf = (column: SQLiteColumn) => sql<number>`coalesce(sum(${column}), 0)`.mapWith(Number);
const sums = {
  tasks: sql<number>`count(*)`.mapWith(Number),
  steps: sumOf(r.steps),
  ...(Object.fromEntries(tokenFields.map((f) => [f, sumOf(r[f])])) as Record<TokenField, ReturnType<typeof sumOf>>),
  costMicroUsd: sumOf(r.costMicroUsd),
  unpricedTokens: sumOf(r.unpricedTokens),
  durationMs: sumOf(r.durationMs),
} satisfies Record<keyof UsageTotals, unknown>;

/** The same sums over roll-up rows (their `tasks` is already a count). */
const rollupSums = {
  tasks: sumOf(u.tasks),
  steps: sumOf(u.steps),
  ...(Object.fromEntries(tokenFields.map((f) => [f, sumOf(u[f])])) as Record<TokenField, ReturnType<typeof sumOf>>),
  costMicroUsd: sumOf(u.costMicroUsd),
  unpricedTokens: sumOf(u.unpricedTokens),
  durationMs: sumOf(u.durationMs),
} satisfies Record<keyof UsageTotals, unknown>;

/** The columns of one roll-up row, in the order of the sums. */
const rollupColumns = {
  tasks: u.tasks,
  steps: u.steps,
  ...(Object.fromEntries(tokenFields.map((f): [TokenField, SQLiteColumn] => [f, u[f]])) as Record<TokenField, SQLiteColumn>),
  costMicroUsd: u.costMicroUsd,
  unpricedTokens: u.unpricedTokens,
  durationMs: u.durationMs,
} satisfies Record<keyof UsageTotals, unknown>;

const sumNames = Object.keys(sums) as Array<keyof UsageTotals>;
const toTotals = (values: unknown[]): UsageTotals => Object.fromEntries(sumNames.map((name, i) => [name, Number(values[i] ?? 0)])) as UsageTotals;

/** The record fields of `GET /usage/records` (times as epoch ms), in the order the reader answers them. */
const recordColumns: Record<keyof UsageRecord, SQLiteColumn> = {
  id: r.id,
  taskId: r.taskId,
  subagent_type: r.subagentType,
  parentTaskId: r.parentTaskId,
  userId: r.userId,
  toolCallId: r.toolCallId,
  description: r.description,
  model: r.model,
  steps: r.steps,
  ...(Object.fromEntries(tokenFields.map((f): [TokenField, SQLiteColumn] => [f, r[f]])) as Record<TokenField, SQLiteColumn>),
  costMicroUsd: r.costMicroUsd,
  unpricedTokens: r.unpricedTokens,
  status: r.status,
  startedAt: r.startedAt,
  completedAt: r.completedAt,
  durationMs: r.durationMs,
  usageReported: r.usageReported,
};
export type UsageRecord = StoredUsageRecord;
export type { UsageTotals };
const recordNames = Object.keys(recordColumns) as Array<keyof UsageRecord>;

/** A page of groups: at most `limit`, those whose key sorts after `cursor`. */
export interface GroupPage {
  limit: number;
  cursor?: string;
}

/**
 * Usage records: sums for billing and the raw rows, always scoped to one tenant. Queries are built
 * here and run by `reader` (on SQLite a worker thread: a sum over a million records takes most of a
 * second, which must not stall the streams of running tasks).
 */
export function createUsageStore(dialect: Dialect, reader: SqlReader) {
  // Statements are built with drizzle's SQLite builder; what it writes runs on PostgreSQL too
  // (quoted names, `?` parameters), the one dialect-bound expression aside (the day of a record).
  const db = new QueryBuilder();
  const groupColumns = groupColumnsOf(dialect);
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

  /**
   * The roll-up rows that hold the answer, or null when only the records can give it: at most one
   * of userId/parentTaskId/subagent_type/model (and then grouped by day or not grouped), `from` and
   * `to` on UTC day boundaries.
   */
  function rollupRows(tenant: string, f: UsageFilter, groupBy: UsageGroupBy | undefined): { where: SQL; by: SQL | null; oneRowPerKey: boolean } | null {
    const filters = (
      [
        ['user', f.userId],
        ['parent', f.parentTaskId],
        ['type', f.subagentType],
        ['model', f.model],
      ] as const
    ).filter(([, v]) => v !== undefined);
    if (filters.length > 1) return null;
    if ((f.from !== undefined && f.from % DAY_MS !== 0) || (f.to !== undefined && f.to % DAY_MS !== 0)) return null;
    if (filters.length === 1 && groupBy !== undefined && groupBy !== 'day') return null;
    const [dim, key]: readonly [RollupDim, string | undefined] = filters[0] ?? (groupBy && groupBy !== 'day' ? [rollupDimOf[groupBy], undefined] : ['all', '']);
    const c: SQL[] = [eq(u.tenant, tenant), eq(u.dim, dim)];
    if (key !== undefined) c.push(eq(u.key, key));
    if (groupBy === 'day' || f.from !== undefined || f.to !== undefined) {
      c.push(ne(u.day, '*'));
      if (f.from !== undefined) c.push(gte(u.day, dayOf(f.from)));
      if (f.to !== undefined) c.push(lt(u.day, dayOf(f.to)));
    } else {
      c.push(eq(u.day, '*'));
    }
    const allTime = !(groupBy === 'day' || f.from !== undefined || f.to !== undefined);
    return { where: and(...c)!, by: groupBy === undefined ? null : groupBy === 'day' ? sql`${u.day}` : sql`${u.key}`, oneRowPerKey: allTime };
  }

  /** The query of `GET /usage`'s groups: the roll-ups when they hold the answer, else the records. */
  function groupsQuery(tenant: string, f: UsageFilter, groupBy: UsageGroupBy, source: UsageSource, page: GroupPage) {
    const plan = source === 'auto' ? rollupRows(tenant, f, groupBy) : null;
    const rows = page.limit + 1;
    if (plan?.by && plan.oneRowPerKey) {
      // All time: one row per key, already in key order in the table's own key (no GROUP BY,
      // which would send the planner to the other index and through every day's row).
      const c = page.cursor === undefined ? plan.where : and(plan.where, gt(u.key, page.cursor))!;
      return db
        .select({ key: u.key, ...rollupColumns })
        .from(u)
        .where(c)
        .orderBy(u.day, u.key)
        .limit(rows)
        .toSQL();
    }
    if (plan?.by) {
      const c = page.cursor === undefined ? plan.where : and(plan.where, sql`${plan.by} > ${page.cursor}`)!;
      return db
        .select({ key: sql<string>`${plan.by}`, ...rollupSums })
        .from(u)
        .where(c)
        .groupBy(plan.by)
        .orderBy(plan.by)
        .limit(rows)
        .toSQL();
    }
    const key = groupColumns[groupBy];
    const c = page.cursor === undefined ? where(tenant, f) : and(where(tenant, f), sql`${key} > ${page.cursor}`)!;
    return db
      .select({ key: sql<string>`${key}`, ...sums })
      .from(r)
      .where(c)
      .groupBy(key)
      .orderBy(key)
      .limit(rows)
      .toSQL();
  }

  return {
    async totals(tenant: string, f: UsageFilter, source: UsageSource = 'auto'): Promise<UsageTotals> {
      const plan = source === 'auto' ? rollupRows(tenant, f, undefined) : null;
      const [row] = await reader.all(plan ? db.select(rollupSums).from(u).where(plan.where).toSQL() : db.select(sums).from(r).where(where(tenant, f)).toSQL());
      return toTotals(row ?? []);
    },

    /**
     * The groups as the JSON array `GET /usage` answers (`[{ key, tasks, ... }]`), built where the
     * rows are read: 10,000 groups cross from the reader thread as one string.
     */
    groupsJson(tenant: string, f: UsageFilter, groupBy: UsageGroupBy, source: UsageSource = 'auto', page: GroupPage = { limit: 1000 }): Promise<JsonPage> {
      return reader.json(groupsQuery(tenant, f, groupBy, source, page), ['key', ...sumNames], page.limit);
    },

    /** Newest first; `cursor` is the id of the last record of the previous page. */
    async records(tenant: string, f: UsageFilter, limit: number, cursor?: string): Promise<UsageRecord[]> {
      const c = where(tenant, f);
      const rows = await reader.all(
        db
          .select(recordColumns)
          .from(r)
          .where(cursor ? and(c, lt(r.id, cursor)) : c)
          .orderBy(desc(r.id))
          .limit(limit)
          .toSQL(),
      );
      return rows.map((values) => Object.fromEntries(recordNames.map((n, i) => [n, values[i]])) as UsageRecord);
    },
  };
}

export type UsageStore = ReturnType<typeof createUsageStore>;
