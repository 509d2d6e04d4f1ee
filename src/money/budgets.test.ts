import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../test/support/task-systems.ts';
import { zeroUsage } from '../shapes/usage.ts';
import type { CreateTaskBody } from '../shapes/task.ts';
import { newTaskRow } from '../tasks/systems/admission.ts';
import { microUsd } from './budgets.ts';

const tokens = (total: number) => ({ ...zeroUsage(), inputTokens: total, totalTokens: total });

describe('budgets', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  function setup() {
    const sys = taskSystems();
    close = sys.close;
    const budgets = sys.deps.budgets;
    /** A running task (of parent P, user `u`, `parentTask` when a child) that has spent `spent` tokens at `cost` micro-dollars. */
    async function task(id: string, spent: number, cost: number, lineage?: { depth: number; parentTask: string | null; maxDepth: number }) {
      const body: CreateTaskBody = { subagent_type: 'general', description: id, prompt: 'p', context: { parentTaskId: 'P', userId: 'u' } };
      const row = newTaskRow(id, 'default', body, sys.clock.now, null, null, null, lineage);
      await sys.store.insert(row);
      await sys.store.markStarted(row, 'm', sys.clock.now);
      if (spent > 0) await sys.store.addUsage(id, 1, tokens(spent), { model: 'm', costMicroUsd: cost }, sys.clock.now);
      return (await sys.store.getById(id))!;
    }
    return { sys, budgets, task };
  }

  it('pauses a task at its own budget: tokens, then cost (in whole micro-dollars), then running time', async () => {
    const { sys, budgets, task } = setup();
    const t = await task('t', 1000, 2500);
    const since = new Date(sys.clock.now).toISOString();
    expect(await budgets.reached(t, { maxTokens: 1001, maxCostUsd: 0.01, maxDurationMs: 60_000 }, sys.clock.now)).toBeNull();
    expect(await budgets.reached(t, { maxTokens: 1000, maxCostUsd: 0.001 }, sys.clock.now)).toEqual({
      reason: 'budget',
      budget: 'task',
      measure: 'tokens',
      limit: 1000,
      spent: 1000,
      since,
    });
    expect(await budgets.reached(t, { maxCostUsd: 0.0025 }, sys.clock.now)).toMatchObject({ measure: 'costMicroUsd', limit: 2500, spent: 2500 });
    expect(await budgets.reached(t, { maxDurationMs: 5_000 }, sys.clock.now + 5_000)).toMatchObject({ measure: 'durationMs', limit: 5_000, spent: 5_000 });
    // Time spent paused does not count.
    expect(await budgets.reached({ ...t, pausedMs: 1 }, { maxDurationMs: 5_000 }, sys.clock.now + 5_000)).toBeNull();
  });

  it("pauses at a parent's or a user's standing budget, from what all their tasks spent", async () => {
    const { sys, budgets, task } = setup();
    await task('t-1', 600, 600);
    const t2 = await task('t-2', 500, 500);
    await budgets.put('default', 'user', 'u', { maxTokens: 2000, maxCostMicroUsd: null }, sys.clock.now);
    expect(await budgets.reached(t2, undefined, sys.clock.now)).toBeNull();
    await budgets.put('default', 'parent', 'P', { maxTokens: null, maxCostMicroUsd: 1100 }, sys.clock.now);
    expect(await budgets.reached(t2, undefined, sys.clock.now)).toMatchObject({ budget: 'parent', measure: 'costMicroUsd', limit: 1100, spent: 1100 });
    expect(await budgets.delete('default', 'parent', 'P')).toBe(true);
    expect(await budgets.delete('default', 'parent', 'P')).toBe(false);
    await budgets.put('default', 'user', 'u', { maxTokens: 1100, maxCostMicroUsd: null }, sys.clock.now);
    expect(await budgets.reached(t2, undefined, sys.clock.now)).toMatchObject({ budget: 'user', measure: 'tokens', spent: 1100 });
    // Another tenant's user of the same name spends nothing of it.
    expect(await budgets.spent('other', 'user', 'u')).toEqual({ tokens: 0, costMicroUsd: 0 });
  });

  it('counts a whole tree of nested tasks against the budget of the task that may start children, and of each ancestor', async () => {
    const { sys, budgets, task } = setup();
    const root = await task('root', 100, 100, { depth: 0, parentTask: null, maxDepth: 2 });
    const child = await task('child', 300, 300, { depth: 1, parentTask: 'root', maxDepth: 2 });
    await sys.db.sql.run('UPDATE tasks SET budget = ? WHERE id = ?', [JSON.stringify({ maxTokens: 400 }), 'root']);
    // The root's own check sums its tree.
    expect(await budgets.reached(root, { maxTokens: 400 }, sys.clock.now)).toMatchObject({ budget: 'task', spent: 400 });
    // The child has no budget of its own, but its ancestor's is reached: named.
    expect(await budgets.reached(child, undefined, sys.clock.now)).toMatchObject({ budget: 'task', measure: 'tokens', limit: 400, spent: 400, task: 'root' });
  });

  it('gives dollars in whole micro-dollars', () => {
    expect(microUsd(1.5)).toBe(1_500_000);
    expect(microUsd(0.0000015)).toBe(2);
    expect(microUsd(0.1 + 0.2)).toBe(300_000);
  });
});
