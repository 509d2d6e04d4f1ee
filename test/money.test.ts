import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type ScriptedTurn } from '../scripted-model/server';
import { metric, startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

let model: ScriptedModel;
let svc: TestService;
beforeAll(async () => {
  model = await startScriptedModel();
  svc = await startService({ model });
});
afterAll(async () => {
  await svc.close();
  await model.close();
});

const post = (s: TestService, url: string, payload?: object) => s.inject({ method: 'POST', url, payload });
const task = async (s: TestService, id: string) => (await s.inject({ url: `/tasks/${id}` })).json();
/** `steps` list_files steps of 100 input + 10 output tokens each, then complete (100 + 10). */
const steps = (n: number): ScriptedTurn[] => [
  ...Array.from({ length: n }, () => ({ toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 100, output: 10 } })),
  { toolCalls: [{ name: 'complete', args: { summary: 'all steps done', paths: [] } }], usage: { input: 100, output: 10 } },
];
const until_ = (s: TestService, id: string, status: string) => until(async () => (await task(s, id)).status === status);

describe('prices', () => {
  it('costs each call in whole micro-dollars, in the task, its events, its record and /usage', async () => {
    model.script('PRICED', [
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 1000, output: 100, cached: 400 } },
      { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 333, output: 7 } },
    ]);
    const out = (await post(svc, '/tasks?wait=true', taskBody({ prompt: 'PRICED', context: { parentTaskId: 'T-price', userId: 'u-price' } }))).json();
    // gpt-4.1-mini: $0.40 input, $0.10 cached input, $1.60 output per million tokens.
    // 600 × 0.4 + 400 × 0.1 + 100 × 1.6 = 440; 333 × 0.4 + 7 × 1.6 = 144.4 → 144
    expect(out.usage).toMatchObject({ inputTokens: 1333, outputTokens: 107, costMicroUsd: 584 });
    const finished = (await storedEvents(svc, out.id)).filter((e) => e.type === 'step.finished').map((e) => e.data.usage.costMicroUsd);
    expect(finished).toEqual([440, 144]);
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-price' })).json().records;
    expect(records).toMatchObject([{ costMicroUsd: 584, unpricedTokens: 0 }]);
    const totals = (await svc.inject({ url: '/usage?parentTaskId=T-price' })).json().totals;
    expect(totals).toMatchObject({ costMicroUsd: 584, unpricedTokens: 0 });
    expect(await metric(svc, 'subagentd_model_cost_usd_total')).toBeGreaterThanOrEqual(0.000584);
  });

  it('shows a model with no price: costMicroUsd null, its tokens as unpricedTokens', async () => {
    model.script('UNPRICED', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 50, output: 5 } }]);
    const out = (
      await post(
        svc,
        '/tasks?wait=true',
        taskBody({ prompt: 'UNPRICED', options: { model: 'my-local-llama' }, context: { parentTaskId: 'T-unpriced', userId: 'u' } }),
      )
    ).json();
    expect(out.usage).toMatchObject({ totalTokens: 55, costMicroUsd: null });
    expect((await svc.inject({ url: '/usage/records?parentTaskId=T-unpriced' })).json().records).toMatchObject([{ costMicroUsd: null, unpricedTokens: 55 }]);
    expect((await svc.inject({ url: '/usage?parentTaskId=T-unpriced' })).json().totals).toMatchObject({ costMicroUsd: 0, unpricedTokens: 55 });
  });

  it('takes PRICES_FILE before the package, and refuses a broken one at start', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-prices-'));
    const file = path.join(dir, 'prices.json');
    writeFileSync(file, JSON.stringify({ 'my-local-llama': { inputPerMTok: 2, cachedInputPerMTok: 0.5, outputPerMTok: 8 } }));
    const own = await startService({ model, env: { PRICES_FILE: file } });
    try {
      model.script('OWN-PRICE', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 1000, output: 100, cached: 200 } }]);
      const out = (await post(own, '/tasks?wait=true', taskBody({ prompt: 'OWN-PRICE', options: { model: 'my-local-llama' } }))).json();
      // 800 × 2 + 200 × 0.5 + 100 × 8 = 2500
      expect(out.usage.costMicroUsd).toBe(2500);
    } finally {
      await own.close();
    }
    writeFileSync(file, JSON.stringify({ 'my-local-llama': { inputPerMTok: 'two' } }));
    await expect(startService({ model, env: { PRICES_FILE: file } })).rejects.toThrow(/PRICES_FILE .*my-local-llama\.inputPerMTok/);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('budgets that pause', () => {
  it('pauses a task at its own budget, frees its slot, refuses a resume that stays over it, and completes once raised', async () => {
    model.script('TASK-BUDGET', steps(4));
    const { id } = (
      await post(svc, '/tasks', taskBody({ prompt: 'TASK-BUDGET', options: { budget: { maxTokens: 200 } }, context: { parentTaskId: 'T-tb', userId: 'u' } }))
    ).json();
    await until_(svc, id, 'paused');
    const paused = await task(svc, id);
    // Two steps of 110 tokens: the third call would start past 200.
    expect(paused).toMatchObject({
      status: 'paused',
      steps: 2,
      usage: { totalTokens: 220 },
      pause: { reason: 'budget', budget: 'task', measure: 'tokens', limit: 200, spent: 220 },
    });
    expect(await metric(svc, 'subagentd_tasks_running')).toBe(0);
    const refused = await post(svc, `/tasks/${id}/resume`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'budget_exceeded', details: { budget: 'task', measure: 'tokens' } });

    const resumed = await post(svc, `/tasks/${id}/resume`, { budget: { maxTokens: 10_000 } });
    expect(resumed.statusCode).toBe(202);
    const done = await taskEnd(svc, id);
    expect(done).toMatchObject({ status: 'completed', summary: 'all steps done', steps: 5, usage: { totalTokens: 550 }, pause: null });
    const types = (await storedEvents(svc, id)).map((e) => e.type).filter((t) => t.startsWith('task.'));
    expect(types).toEqual(['task.started', 'task.paused', 'task.resumed', 'task.finished']);
    const resumedEvent = (await storedEvents(svc, id)).find((e) => e.type === 'task.resumed')!;
    expect(resumedEvent.data).toEqual({ fromStep: 3, attempt: 0, reason: 'budget' });
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-tb' })).json().records;
    expect(records).toMatchObject([{ taskId: id, status: 'completed', steps: 5, totalTokens: 550 }]);
    expect((await post(svc, `/tasks/${id}/resume`)).json().error.code).toBe('task_not_paused');
  });

  it('pauses every task of a parent at its standing budget; raising it lets them resume', async () => {
    const put = (body: object) => svc.inject({ method: 'PUT', url: '/budgets/parent/T-pb', payload: body });
    expect((await put({ maxTokens: 300 })).json()).toEqual({
      scope: 'parent',
      id: 'T-pb',
      maxTokens: 300,
      maxCostUsd: null,
      spent: { tokens: 0, costMicroUsd: 0 },
    });
    model.script('PARENT-BUDGET', steps(3));
    const a = (await post(svc, '/tasks', taskBody({ prompt: 'PARENT-BUDGET a', context: { parentTaskId: 'T-pb', userId: 'u' } }))).json().id;
    const b = (await post(svc, '/tasks', taskBody({ prompt: 'PARENT-BUDGET b', context: { parentTaskId: 'T-pb', userId: 'u' } }))).json().id;
    await until_(svc, a, 'paused');
    await until_(svc, b, 'paused');
    expect((await task(svc, a)).pause).toMatchObject({ budget: 'parent', measure: 'tokens', limit: 300 });
    const spent = (await svc.inject({ url: '/budgets/parent/T-pb' })).json().spent.tokens;
    expect(spent).toBe((await task(svc, a)).usage.totalTokens + (await task(svc, b)).usage.totalTokens);
    expect((await post(svc, `/tasks/${a}/resume`)).statusCode).toBe(409);

    await put({ maxTokens: 100_000 });
    for (const id of [a, b]) expect((await post(svc, `/tasks/${id}/resume`)).statusCode).toBe(202);
    for (const id of [a, b]) expect((await taskEnd(svc, id)).status).toBe('completed');
    expect((await svc.inject({ method: 'DELETE', url: '/budgets/parent/T-pb' })).statusCode).toBe(204);
    expect((await svc.inject({ url: '/budgets/parent/T-pb' })).statusCode).toBe(404);
    expect((await svc.inject({ method: 'DELETE', url: '/budgets/parent/T-pb' })).statusCode).toBe(404);
  });

  it("pauses at a user's cost budget in dollars", async () => {
    // Each step costs 100 × 0.4 + 10 × 1.6 = 56 micro-dollars; the budget is 100.
    await svc.inject({ method: 'PUT', url: '/budgets/user/u-cost', payload: { maxCostUsd: 0.0001 } });
    model.script('USER-BUDGET', steps(3));
    const id = (await post(svc, '/tasks', taskBody({ prompt: 'USER-BUDGET', context: { parentTaskId: 'T-ub', userId: 'u-cost' } }))).json().id;
    await until_(svc, id, 'paused');
    expect(await task(svc, id)).toMatchObject({ steps: 2, pause: { budget: 'user', measure: 'costMicroUsd', limit: 100, spent: 112 } });
    expect((await svc.inject({ url: '/budgets/user/u-cost' })).json()).toMatchObject({ maxCostUsd: 0.0001, spent: { costMicroUsd: 112 } });
    const cancelled = await post(svc, `/tasks/${id}/cancel`);
    expect(cancelled.json()).toMatchObject({ status: 'aborted', error: { code: 'cancelled' }, pause: null });
  });

  it("pauses at a task's running time, pauses not counted", async () => {
    model.script('DURATION-BUDGET', [{ delayMs: 400, toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 10, output: 1 } }, ...steps(0)]);
    const id = (await post(svc, '/tasks', taskBody({ prompt: 'DURATION-BUDGET', options: { budget: { maxDurationMs: 300 } } }))).json().id;
    await until_(svc, id, 'paused');
    const paused = await task(svc, id);
    expect(paused).toMatchObject({ steps: 1, pause: { budget: 'task', measure: 'durationMs', limit: 300 } });
    expect(paused.pause.spent).toBeGreaterThanOrEqual(400);
    // Three seconds later, with the limit raised by a second and a half: were the pause counted, the
    // task would pause again at once; it is not, and the last step has that long on a busy machine.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await post(svc, `/tasks/${id}/resume`, { budget: { maxDurationMs: paused.pause.spent + 1500 } })).statusCode).toBe(202);
    expect((await taskEnd(svc, id)).status).toBe('completed');
  });

  it('refuses bad budgets with 400', async () => {
    expect((await svc.inject({ method: 'PUT', url: '/budgets/team/x', payload: { maxTokens: 5 } })).statusCode).toBe(400);
    expect((await svc.inject({ method: 'PUT', url: '/budgets/user/x', payload: {} })).statusCode).toBe(400);
    expect((await post(svc, '/tasks', taskBody({ options: { budget: { maxTokens: -1 } } }))).statusCode).toBe(400);
  });
});

describe('paused tasks over time', () => {
  it('stay paused across a restart and resume after it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pause-restart-'));
    const first = await startService({ model, dir });
    model.script('PAUSE-RESTART', steps(2));
    const id = (await post(first, '/tasks', taskBody({ prompt: 'PAUSE-RESTART', options: { budget: { maxTokens: 100 } } }))).json().id;
    await until_(first, id, 'paused');
    await first.close();
    const second = await startService({ model, dir });
    try {
      expect((await task(second, id)).status).toBe('paused');
      expect((await post(second, `/tasks/${id}/resume`, { budget: { maxTokens: 5000 } })).statusCode).toBe(202);
      expect(await taskEnd(second, id)).toMatchObject({ status: 'completed', steps: 3, usage: { totalTokens: 330 } });
    } finally {
      await second.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('end aborted/budget_exceeded after PAUSED_TTL_MS', async () => {
    const short = await startService({ model, env: { PAUSED_TTL_MS: '1000' } });
    try {
      model.script('PAUSE-TTL', steps(2));
      const id = (await post(short, '/tasks', taskBody({ prompt: 'PAUSE-TTL', options: { budget: { maxTokens: 100 } } }))).json().id;
      await until_(short, id, 'paused');
      const ended = await taskEnd(short, id, { ms: 10_000 });
      expect(ended).toMatchObject({ status: 'aborted', error: { code: 'budget_exceeded' }, steps: 1, usage: { totalTokens: 110 } });
    } finally {
      await short.close();
    }
  });
});
