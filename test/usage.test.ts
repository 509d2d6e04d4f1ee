import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { createTaskStore } from '../src/store/task-store';

let svc: TestService;
const ids: string[] = [];
beforeAll(async () => {
  svc = await startService();
  svc.model.script('BILL-A', [
    { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 100, output: 10, cached: 40 } },
    { toolCalls: [{ name: 'complete', args: { summary: 'a', paths: [] } }], usage: { input: 200, output: 20, reasoning: 7 } },
  ]);
  svc.model.script('BILL-B', [{ toolCalls: [{ name: 'complete', args: { summary: 'b', paths: [] } }], usage: { input: 1000, output: 100 } }]);
  const runs = [
    { prompt: 'BILL-A', userId: 'u-1', parentTaskId: 'P-1', subagent_type: 'general' },
    { prompt: 'BILL-A', userId: 'u-1', parentTaskId: 'P-2', subagent_type: 'explore' },
    { prompt: 'BILL-B', userId: 'u-2', parentTaskId: 'P-2', subagent_type: 'general', model: 'big-model' },
  ];
  for (const r of runs) {
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({
        subagent_type: r.subagent_type,
        prompt: r.prompt,
        context: { parentTaskId: r.parentTaskId, userId: r.userId },
        ...(r.model ? { options: { model: r.model } } : {}),
      }),
    });
    ids.push(res.json().id);
  }
  // A shell task is billed with zero tokens.
  await svc.inject({
    method: 'POST',
    url: '/tasks?wait=true',
    payload: taskBody({ subagent_type: 'shell', prompt: undefined, command: 'true', context: { parentTaskId: 'P-3', userId: 'u-3' } }),
  });
});
afterAll(() => svc.close());

const usage = async (q: string) => {
  const res = await svc.inject({ url: `/usage${q}` });
  expect(res.statusCode).toBe(200);
  return res.json();
};

describe('GET /usage', () => {
  it('sums every record', async () => {
    const u = await usage('');
    expect(u.totals).toMatchObject({
      tasks: 4,
      steps: 5,
      inputTokens: 1600,
      outputTokens: 160,
      totalTokens: 1760,
      cachedInputTokens: 80,
      reasoningTokens: 14,
    });
    expect(u.totals.durationMs).toBeGreaterThanOrEqual(0);
    expect(u.groups).toEqual([]);
  });

  it('groups by user, parent task, subagent type, model and day', async () => {
    const byUser = await usage('?groupBy=user');
    expect(byUser.groups.map((g: any) => [g.key, g.tasks, g.inputTokens])).toEqual([
      ['u-1', 2, 600],
      ['u-2', 1, 1000],
      ['u-3', 1, 0],
    ]);
    const byParent = await usage('?groupBy=parentTask');
    expect(byParent.groups.map((g: any) => [g.key, g.totalTokens])).toEqual([
      ['P-1', 330],
      ['P-2', 1430],
      ['P-3', 0],
    ]);
    const byType = await usage('?groupBy=subagentType');
    expect(byType.groups.map((g: any) => [g.key, g.tasks, g.steps])).toEqual([
      ['explore', 1, 2],
      ['general', 2, 3],
      ['shell', 1, 0],
    ]);
    const byModel = await usage('?groupBy=model');
    expect(byModel.groups.map((g: any) => [g.key, g.tasks])).toEqual([
      ['', 1],
      ['big-model', 1],
      ['gpt-4.1-mini', 2],
    ]);
    const byDay = await usage('?groupBy=day');
    expect(byDay.groups).toHaveLength(1);
    expect(byDay.groups[0].key).toBe(new Date().toISOString().slice(0, 10));
    expect(byDay.groups[0].tasks).toBe(4);
  });

  it('pages the groups in key order: limit, then nextCursor as cursor, the same from roll-ups and records', async () => {
    for (const source of ['auto', 'records']) {
      const first = await usage(`?groupBy=parentTask&limit=2&source=${source}`);
      expect(first.groups.map((g: any) => g.key)).toEqual(['P-1', 'P-2']);
      expect(first.nextCursor).toBe('P-2');
      const second = await usage(`?groupBy=parentTask&limit=2&source=${source}&cursor=${first.nextCursor}`);
      expect(second.groups.map((g: any) => [g.key, g.totalTokens])).toEqual([['P-3', 0]]);
      expect(second.nextCursor).toBeNull();
      // Totals do not depend on the page.
      expect(second.totals).toEqual(first.totals);
    }
    expect((await usage('?groupBy=user&limit=1&cursor=u-1')).groups.map((g: any) => g.key)).toEqual(['u-2']);
    expect((await usage('')).nextCursor).toBeNull();
    expect((await svc.inject({ url: '/usage?groupBy=user&limit=10001' })).statusCode).toBe(400);
  });

  it('filters by user, parent task, type, model and time', async () => {
    expect((await usage('?userId=u-1')).totals).toMatchObject({ tasks: 2, inputTokens: 600, cachedInputTokens: 80, reasoningTokens: 14 });
    expect((await usage('?parentTaskId=P-2&groupBy=user')).groups.map((g: any) => g.key)).toEqual(['u-1', 'u-2']);
    expect((await usage('?subagent_type=explore')).totals.tasks).toBe(1);
    expect((await usage('?model=big-model')).totals.outputTokens).toBe(100);
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await usage(`?from=${future}`)).totals.tasks).toBe(0);
    expect((await usage(`?to=${future}`)).totals.tasks).toBe(4);
    expect((await usage('?from=2000-01-01&to=2000-01-02')).totals).toMatchObject({ tasks: 0, inputTokens: 0 });
  });
});

describe('GET /usage/records', () => {
  it('pages through the raw records newest first', async () => {
    const p1 = (await svc.inject({ url: '/usage/records?limit=3' })).json();
    expect(p1.records).toHaveLength(3);
    expect(p1.records[0]).toMatchObject({ subagent_type: 'shell', userId: 'u-3', steps: 0, totalTokens: 0, status: 'completed' });
    expect(p1.records[1].taskId).toBe(ids[2]);
    expect(p1.nextCursor).toEqual(expect.any(String));
    const p2 = (await svc.inject({ url: `/usage/records?limit=3&cursor=${p1.nextCursor}` })).json();
    expect(p2.records.map((r: any) => r.taskId)).toEqual([ids[0]]);
    expect(p2.nextCursor).toBeNull();
    for (const r of [...p1.records, ...p2.records]) {
      expect(Object.keys(r).sort()).toEqual(
        [
          'cachedInputTokens',
          'completedAt',
          'costMicroUsd',
          'description',
          'durationMs',
          'id',
          'inputTokens',
          'model',
          'outputTokens',
          'parentTaskId',
          'reasoningTokens',
          'startedAt',
          'status',
          'steps',
          'subagent_type',
          'taskId',
          'toolCallId',
          'totalTokens',
          'unpricedTokens',
          'usageReported',
          'userId',
        ].sort(),
      );
    }
  });
});

describe('a call billed once, whatever the database answered', () => {
  it('bills a call whose write is repeated (its COMMIT answer lost) once, and another call again', async () => {
    const own = await startService();
    try {
      own.model.script('BILL-ONCE', [{ toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [] } }], usage: { input: 50, output: 5 } }]);
      const id = (
        await own.inject({
          method: 'POST',
          url: '/tasks?wait=true',
          payload: taskBody({ prompt: 'BILL-ONCE', context: { parentTaskId: 'P-once', userId: 'u' } }),
        })
      ).json().id;
      const store = createTaskStore(own.db.sql);
      const call = { inputTokens: 7, outputTokens: 1, totalTokens: 8, cachedInputTokens: 0, reasoningTokens: 0 };
      // What the storage guard does after a lost answer: the same write, the same call key.
      await store.addUsage(id, 1, call, { model: 'gpt-4.1-mini', costMicroUsd: 3 }, Date.now(), 'call-key-1');
      await store.addUsage(id, 1, call, { model: 'gpt-4.1-mini', costMicroUsd: 3 }, Date.now(), 'call-key-1');
      expect((await own.inject({ url: `/tasks/${id}` })).json().usage).toMatchObject({ inputTokens: 57, outputTokens: 6 });
      await store.addUsage(id, 1, call, { model: 'gpt-4.1-mini', costMicroUsd: 3 }, Date.now(), 'call-key-2');
      expect((await own.inject({ url: `/tasks/${id}` })).json().usage).toMatchObject({ inputTokens: 64, outputTokens: 7 });
      const totals = (await own.inject({ url: '/usage?parentTaskId=P-once' })).json().totals;
      expect(totals).toMatchObject({ inputTokens: 64, outputTokens: 7 });
    } finally {
      await own.close();
    }
  });
});
