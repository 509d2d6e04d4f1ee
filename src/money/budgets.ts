import type { SqlClient } from '../store/sql-client.ts';
import type { BudgetedRow } from '../store/task-store.ts';
import { iso } from '../shapes/time.ts';
import type { BudgetPause, TaskBudget } from '../shapes/task.ts';

export type BudgetScope = 'parent' | 'user';

/** A standing budget as stored: limits in tokens and whole micro-dollars (null: no limit). */
export interface StandingBudget {
  maxTokens: number | null;
  maxCostMicroUsd: number | null;
}

export interface Spent {
  tokens: number;
  costMicroUsd: number;
}

/** Whole micro-dollars of a dollar amount (budgets are given in dollars). */
export const microUsd = (usd: number) => Math.round(usd * 1_000_000);

/**
 * Budgets: a task's own (`options.budget`, raised on resume) and the standing budgets of a parent
 * task or a user, per tenant. What a parent or user has spent is the sum of its usage records,
 * running tasks included (their records count every call as it is billed), read from the roll-ups.
 */
/** What of a task its budgets are checked on. */
export type BudgetedTask = Omit<BudgetedRow, 'budget'>;

/** Does a budget limit spending (tokens or cost), not only time? */
const spends = (b: TaskBudget) => b.maxTokens !== undefined || b.maxCostUsd !== undefined;

/** Chains are bounded by `maxDepth`; the bound guards against a cycle in stored rows. */
const TREE_SPENT = `WITH RECURSIVE down (id, hops) AS (
     SELECT CAST(? AS TEXT), 0
     UNION ALL SELECT t.id, down.hops + 1 FROM tasks t JOIN down ON t.parent_task = down.id WHERE down.hops < 64)
   SELECT CAST(coalesce(sum(t.total_tokens), 0) AS BIGINT) AS tokens, CAST(coalesce(sum(t.cost_micro_usd), 0) AS BIGINT) AS "costMicroUsd"
   FROM tasks t JOIN down ON t.id = down.id`;
const ANCESTOR_BUDGETS = `WITH RECURSIVE up (id, parent_task, hops) AS (
     SELECT id, parent_task, 0 FROM tasks WHERE id = ?
     UNION ALL SELECT t.id, t.parent_task, up.hops + 1 FROM tasks t JOIN up ON t.id = up.parent_task WHERE up.hops < 64)
   SELECT t.id, t.budget FROM up JOIN tasks t ON t.id = up.id WHERE up.hops > 0 AND t.budget IS NOT NULL ORDER BY up.hops`;

export function createBudgets(sql: SqlClient) {
  const budgets = {
    async get(tenant: string, scope: BudgetScope, id: string): Promise<StandingBudget | null> {
      const row = await sql.get<StandingBudget>(
        'SELECT max_tokens AS "maxTokens", max_cost_micro_usd AS "maxCostMicroUsd" FROM budgets WHERE tenant = ? AND scope = ? AND scope_id = ?',
        [tenant, scope, id],
      );
      return row ?? null;
    },
    async put(tenant: string, scope: BudgetScope, id: string, b: StandingBudget, now: number): Promise<void> {
      await sql.run(
        `INSERT INTO budgets (tenant, scope, scope_id, max_tokens, max_cost_micro_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant, scope, scope_id) DO UPDATE SET max_tokens = excluded.max_tokens,
           max_cost_micro_usd = excluded.max_cost_micro_usd, updated_at = excluded.updated_at`,
        [tenant, scope, id, b.maxTokens, b.maxCostMicroUsd, now],
      );
    },
    /** True when there was one to delete. */
    async delete(tenant: string, scope: BudgetScope, id: string): Promise<boolean> {
      return (await sql.run('DELETE FROM budgets WHERE tenant = ? AND scope = ? AND scope_id = ?', [tenant, scope, id])) > 0;
    },
    /**
     * What a scope spent: its all-time roll-up row (kept in the records' own transactions), one key
     * lookup before every model call, however many records the parent or user has.
     */
    async spent(tenant: string, scope: BudgetScope, id: string): Promise<Spent> {
      const row = await sql.get<Spent>(
        `SELECT total_tokens AS tokens, cost_micro_usd AS "costMicroUsd" FROM usage_rollups WHERE tenant = ? AND dim = ? AND day = '*' AND key = ?`,
        [tenant, scope, id],
      );
      return row ?? { tokens: 0, costMicroUsd: 0 };
    },

    /** What a task and all its descendants spent (nesting). */
    async treeSpent(taskId: string): Promise<Spent> {
      const row = await sql.get<{ tokens: unknown; costMicroUsd: unknown }>(TREE_SPENT, [taskId]);
      return { tokens: Number(row?.tokens ?? 0), costMicroUsd: Number(row?.costMicroUsd ?? 0) };
    },
    /** The own budgets of a task's ancestors, nearest first (those that have one). */
    async ancestorBudgets(taskId: string): Promise<Array<{ id: string; budget: TaskBudget }>> {
      const rows = await sql.all<{ id: string; budget: string }>(ANCESTOR_BUDGETS, [taskId]);
      return rows.map((r) => ({ id: r.id, budget: JSON.parse(r.budget) as TaskBudget }));
    },

    /**
     * The first budget `task` has reached, checked in this order: its own (tokens, cost, running
     * time), its parent's, its user's; null when it may make its next model call. `standing`: the
     * parent's and user's budgets, when the caller read them already (the task store's `beforeCall`).
     */
    async reached(
      task: BudgetedTask,
      own: TaskBudget | undefined,
      now: number,
      standing?: Record<BudgetScope, StandingBudget | null>,
    ): Promise<BudgetPause | null> {
      const since = iso(now);
      const over = (budget: BudgetPause['budget'], measure: BudgetPause['measure'], limit: number | null | undefined, spent: number): BudgetPause | null =>
        limit !== null && limit !== undefined && spent >= limit ? { reason: 'budget', budget, measure, limit, spent, since } : null;
      if (own) {
        const ran = now - (task.startedAt ?? now) - task.pausedMs;
        // A task that may start children spends what its whole tree spends.
        const spent =
          task.depth < task.maxDepth && spends(own) ? await budgets.treeSpent(task.id) : { tokens: task.totalTokens, costMicroUsd: task.costMicroUsd };
        const hit =
          over('task', 'tokens', own.maxTokens, spent.tokens) ??
          over('task', 'costMicroUsd', own.maxCostUsd === undefined ? undefined : microUsd(own.maxCostUsd), spent.costMicroUsd) ??
          over('task', 'durationMs', own.maxDurationMs, ran);
        if (hit) return hit;
      }
      // Nesting: every ancestor's own budget counts this task's spend too.
      if (task.parentTask) {
        for (const ancestor of await budgets.ancestorBudgets(task.id)) {
          if (!spends(ancestor.budget)) continue;
          const spent = await budgets.treeSpent(ancestor.id);
          const { maxTokens, maxCostUsd } = ancestor.budget;
          const hit =
            over('task', 'tokens', maxTokens, spent.tokens) ??
            over('task', 'costMicroUsd', maxCostUsd === undefined ? undefined : microUsd(maxCostUsd), spent.costMicroUsd);
          if (hit) return { ...hit, task: ancestor.id };
        }
      }
      for (const [scope, id] of [
        ['parent', task.parentTaskId],
        ['user', task.userId],
      ] as const) {
        const limits = standing ? standing[scope] : await budgets.get(task.tenant, scope, id);
        if (!limits) continue;
        const spent = await budgets.spent(task.tenant, scope, id);
        const hit = over(scope, 'tokens', limits.maxTokens, spent.tokens) ?? over(scope, 'costMicroUsd', limits.maxCostMicroUsd, spent.costMicroUsd);
        if (hit) return hit;
      }
      return null;
    },
  };
  return budgets;
}

export type Budgets = ReturnType<typeof createBudgets>;
