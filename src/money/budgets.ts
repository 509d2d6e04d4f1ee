import { createBudgetStore, type BudgetScope, type StandingBudget } from '../store/budget-store.ts';
import type { SqlClient } from '../store/sql-client.ts';
import type { BudgetedRow } from '../store/task-store.ts';
import { iso } from '../shapes/time.ts';
import type { BudgetPause, TaskBudget } from '../shapes/task.ts';

/** Whole micro-dollars of a dollar amount (budgets are given in dollars). */
export const microUsd = (usd: number) => Math.round(usd * 1_000_000);

/**
 * What of a task its budgets are checked on. `tree`: its own budget counts its whole tree's spend
 * even with no nesting (a task with candidates, whose attempts spend for it).
 */
export type BudgetedTask = Omit<BudgetedRow, 'budget'> & { tree?: boolean };

/** Does a budget limit spending (tokens or cost), not only time? */
const spends = (b: TaskBudget) => b.maxTokens !== undefined || b.maxCostUsd !== undefined;

/**
 * Budgets: a task's own (`options.budget`, raised on resume) and the standing budgets of a parent
 * task or a user, per tenant. What a parent or user has spent is the sum of its usage records,
 * running tasks included (their records count every call as it is billed), read from the roll-ups.
 */
export function createBudgets(sql: SqlClient) {
  const store = createBudgetStore(sql);
  return {
    ...store,

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
          (task.tree || task.depth < task.maxDepth) && spends(own)
            ? await store.treeSpent(task.id)
            : { tokens: task.totalTokens, costMicroUsd: task.costMicroUsd };
        const hit =
          over('task', 'tokens', own.maxTokens, spent.tokens) ??
          over('task', 'costMicroUsd', own.maxCostUsd === undefined ? undefined : microUsd(own.maxCostUsd), spent.costMicroUsd) ??
          over('task', 'durationMs', own.maxDurationMs, ran);
        if (hit) return hit;
      }
      // Nesting: every ancestor's own budget counts this task's spend too.
      if (task.parentTask) {
        for (const ancestor of await store.ancestorBudgets(task.id)) {
          if (!spends(ancestor.budget)) continue;
          const spent = await store.treeSpent(ancestor.id);
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
        const limits = standing ? standing[scope] : await store.get(task.tenant, scope, id);
        if (!limits) continue;
        const spent = await store.spent(task.tenant, scope, id);
        const hit = over(scope, 'tokens', limits.maxTokens, spent.tokens) ?? over(scope, 'costMicroUsd', limits.maxCostMicroUsd, spent.costMicroUsd);
        if (hit) return hit;
      }
      return null;
    },
  };
}

export type Budgets = ReturnType<typeof createBudgets>;
