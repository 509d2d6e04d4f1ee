import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { metric, startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { until as waitUntil } from './support/until';

const completeAfter = (delayMs: number) => [{ delayMs, toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }];

describe('queue: concurrency cap, fairness, bound', () => {
  let svc: TestService;
  let model: ScriptedModel;
  beforeAll(async () => {
    model = await startScriptedModel();
    svc = await startService({ model, env: { MAX_CONCURRENT_TASKS: '2', MAX_QUEUED_TASKS: '12' } });
  });
  afterAll(async () => {
    await svc.close();
    await model.close();
  });

  it('never runs more than MAX_CONCURRENT_TASKS at once, and all complete', async () => {
    // Long enough that no task ends before the ten are submitted, however slow the machine.
    model.script('CAP', completeAfter(500));
    const ids = [];
    for (let i = 0; i < 10; i++) {
      const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: `CAP ${i}` }) });
      expect(res.statusCode).toBe(202);
      ids.push(res.json().id);
    }
    expect([await metric(svc, 'subagentd_tasks_running'), await metric(svc, 'subagentd_tasks_queued')]).toEqual([2, 8]);
    const queued = (await svc.inject({ url: `/tasks/${ids[9]}` })).json();
    expect(queued).toMatchObject({ status: 'queued', startedAt: null });
    const ends = await Promise.all(ids.map((id) => taskEnd(svc, id)));
    expect(ends.every((t) => t.status === 'completed')).toBe(true);
    expect(model.maxInFlight).toBe(2);
  });

  it("serves users fairly: a burst does not starve another user's single task", async () => {
    // No model answer before the single task is stored: a slow submit (PostgreSQL under load) cannot
    // let a burst task end, and another start, before the single one is queued.
    let stored!: () => void;
    const singleStored = new Promise<void>((r) => (stored = r));
    model.script('FAIR', () => ({ waitFor: singleStored, delayMs: 100, toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }));
    const burst = [];
    for (let i = 0; i < 6; i++) {
      burst.push(
        (
          await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: `FAIR a${i}`, context: { parentTaskId: 'T-f', userId: 'u-burst' } }) })
        ).json().id,
      );
    }
    const single = (
      await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'FAIR b', context: { parentTaskId: 'T-f', userId: 'u-single' } }) })
    ).json().id;
    stored();
    const ends = await Promise.all([...burst, single].map((id) => taskEnd(svc, id)));
    const started = (id: string) => Date.parse(ends.find((t) => t.id === id)!.startedAt);
    // Two burst tasks took both slots at once; the single user's task started no later than any of
    // the four burst tasks that were queued before it.
    for (const id of burst.slice(2)) expect(started(single)).toBeLessThanOrEqual(started(id));
  });

  it('answers 429 with Retry-After when the queue is full', async () => {
    model.script('FULL', completeAfter(300));
    const ids: string[] = [];
    let refused;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: `FULL ${i}` }) });
      if (res.statusCode === 429) refused = res;
      else ids.push(res.json().id);
    }
    expect(ids).toHaveLength(14); // 2 running + 12 queued
    expect(refused?.headers['retry-after']).toBe('5');
    expect(refused?.json().error.code).toBe('queue_full');
    await Promise.all(ids.map((id) => taskEnd(svc, id)));
  });
});

describe('cancel', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { MAX_CONCURRENT_TASKS: '1' } });
  });
  afterAll(() => svc.close());

  it('cancels a queued task: it never runs and has no record', async () => {
    svc.model.script('BLOCKER', completeAfter(400));
    const blocker = (
      await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'BLOCKER', context: { parentTaskId: 'T-cq', userId: 'u' } }) })
    ).json().id;
    const queued = (
      await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'NEVER-RUNS', context: { parentTaskId: 'T-cq', userId: 'u' } }) })
    ).json().id;
    const res = await svc.inject({ method: 'POST', url: `/tasks/${queued}/cancel` });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ status: 'aborted', error: { code: 'cancelled' }, startedAt: null, steps: 0 });
    await taskEnd(svc, blocker);
    expect(svc.model.requests.some((r) => JSON.stringify(r.body).includes('NEVER-RUNS'))).toBe(false);
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-cq' })).json().records;
    expect(records.map((r: { taskId: string }) => r.taskId)).toEqual([blocker]);
    expect((await storedEvents(svc, queued)).map((e) => e.type)).toEqual(['task.finished']);
  });

  it("cancels while a tool runs: the command's processes are killed at once", async () => {
    svc.model.script('CANCEL-TOOL', [
      { toolCalls: [{ name: 'bash', args: { command: 'setsid sleep 5151 & sleep 5252' } }], usage: { input: 30, output: 3 } },
      { toolCalls: [{ name: 'complete', args: { summary: 'never', paths: [] } }] },
    ]);
    const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'CANCEL-TOOL' }) })).json().id;
    const until = Date.now() + 10_000;
    while (!execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes('sleep 5252') && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    // Killed with the task: gone well before their 5,000 s (a busy machine takes a moment to reap).
    await waitUntil(async () => !/sleep (5151|5252)/.test(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })), 20_000);
    // The step never finished, but the provider reported its tokens before the tool ran: billed once.
    const out = (await svc.inject({ url: `/tasks/${id}` })).json();
    expect(out).toMatchObject({ steps: 0, usage: { inputTokens: 30, outputTokens: 3, totalTokens: 33 } });
    const records = (await svc.inject({ url: `/usage/records?parentTaskId=${out.context.parentTaskId}&limit=100` })).json().records;
    expect(records.filter((r: { taskId: string }) => r.taskId === id)).toMatchObject([{ inputTokens: 30, outputTokens: 3, status: 'aborted' }]);
  });

  it('cancels while waiting for the model', async () => {
    svc.model.script('CANCEL-MODEL', completeAfter(30_000));
    const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'CANCEL-MODEL' }) })).json().id;
    while (!svc.model.requests.some((r) => JSON.stringify(r.body).includes('CANCEL-MODEL'))) await new Promise((r) => setTimeout(r, 10));
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
  });

  it('answers 202 with the task as it is when it already finished, and 404 for an unknown one', async () => {
    svc.model.script('DONE-ALREADY', completeAfter(0));
    const out = (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'DONE-ALREADY' }) })).json();
    const res = await svc.inject({ method: 'POST', url: `/tasks/${out.id}/cancel` });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual(out);
    expect((await svc.inject({ method: 'POST', url: '/tasks/tsk_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel' })).statusCode).toBe(404);
  });
});

describe('timeouts', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { TASK_TIMEOUT_MS: '400' } });
  });
  afterAll(() => svc.close());

  it('caps options.timeoutMs at TASK_TIMEOUT_MS', async () => {
    svc.model.script('CAPPED-TIMEOUT', completeAfter(30_000));
    const out = (
      await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'CAPPED-TIMEOUT', options: { timeoutMs: 600_000 } }) })
    ).json();
    expect(out).toMatchObject({ status: 'aborted', error: { code: 'timeout' } });
    expect(Date.parse(out.completedAt) - Date.parse(out.startedAt)).toBeLessThan(5000);
  });
});

describe('Idempotency-Key', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(() => svc.close());

  it('returns the first task for the same key and body, 409 for another body, and never runs twice', async () => {
    svc.model.script('IDEM', completeAfter(50));
    const body = taskBody({ prompt: 'IDEM once' });
    const first = await svc.inject({ method: 'POST', url: '/tasks', payload: body, headers: { 'idempotency-key': 'call_idem_1' } });
    expect(first.statusCode).toBe(202);
    // Key order in the body does not matter.
    const reordered = { context: body.context, prompt: body.prompt, description: body.description, subagent_type: body.subagent_type };
    const again = await svc.inject({ method: 'POST', url: '/tasks', payload: reordered, headers: { 'idempotency-key': 'call_idem_1' } });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(first.json().id);
    const waited = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: body, headers: { 'idempotency-key': 'call_idem_1' } });
    expect(waited.statusCode).toBe(200);
    expect(waited.json()).toMatchObject({ id: first.json().id, status: 'completed' });
    const conflict = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ prompt: 'IDEM other' }),
      headers: { 'idempotency-key': 'call_idem_1' },
    });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.code).toBe('idempotency_conflict');
    expect(svc.model.requests.filter((r) => JSON.stringify(r.body).includes('IDEM once'))).toHaveLength(1);
  });

  it('holds when two identical requests race over real HTTP', async () => {
    svc.model.script('RACE', completeAfter(50));
    const send = () =>
      fetch(`${svc.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'race-key' },
        body: JSON.stringify(taskBody({ prompt: 'RACE' })),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { id: string } }));
    const results = await Promise.all([send(), send(), send(), send()]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 202]);
    await taskEnd(svc, results[0].body.id);
    expect(svc.model.requests.filter((r) => JSON.stringify(r.body).includes('RACE'))).toHaveLength(1);
    const list = (await svc.inject({ url: '/tasks?parentTaskId=T-1&limit=200' })).json().tasks;
    expect(list.filter((t: { summary: string | null; id: string }) => t.id === results[0].body.id)).toHaveLength(1);
  });
});
