import type { TaskBudget } from '../shapes/task.ts';
import type { SqlClient } from './sql-client.ts';

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

/** The standing budgets of parents and users (per tenant), and what a scope or a task tree spent. */
export function createBudgetStore(sql: SqlClient) {
  return {
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
  };
}

export type BudgetStore = ReturnType<typeof createBudgetStore>;
