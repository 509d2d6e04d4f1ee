import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';

/** Model fallback: a list of models, the next one after a provider error outlived its retries. */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-fallback-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'sturdy.md'),
    '---\nname: sturdy\ndescription: Falls back to a second model\nmodel: [primary-model, backup-model]\n---\nWork on.\n',
  );
  // Different prices: each call is billed at its own model's.
  const prices = path.join(dir, 'prices.json');
  writeFileSync(
    prices,
    JSON.stringify({ 'primary-model': { inputPerMTok: 1, outputPerMTok: 10 }, 'backup-model': { inputPerMTok: 100, outputPerMTok: 1000 } }),
  );
  svc = await startService({ model, dir, env: { PRICES_FILE: prices } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (payload: object) => {
  const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};

describe('model fallback', () => {
  it('runs the failed step again on the next model, bills each call at its own price, and names the last model', async () => {
    // The primary model answers the first step, then is overloaded.
    model.script('FALLBACK', (ctx) =>
      ctx.model === 'primary-model' && ctx.turn >= 1
        ? { status: 503, errorMessage: 'primary overloaded' }
        : ctx.turn === 0
          ? { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 1000, output: 100 } }
          : { toolCalls: [{ name: 'complete', args: { summary: 'done on the backup', paths: [] } }], usage: { input: 1000, output: 100 } },
    );
    const done = await run(taskBody({ subagent_type: 'sturdy', prompt: 'FALLBACK', context: { parentTaskId: 'T-fb', userId: 'u-fb' } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'done on the backup', model: 'backup-model', steps: 2 });
    // 1000 in + 100 out at $1/$10 per MTok = 2,000 µ$; at $100/$1000 = 200,000 µ$.
    expect(done.usage).toMatchObject({ inputTokens: 2000, outputTokens: 200, costMicroUsd: 202_000 });
    const served = model.requests.filter((r) => JSON.stringify(r.body.messages).includes('FALLBACK')).map((r) => r.body.model);
    expect(served).toEqual(['primary-model', 'primary-model', 'backup-model']);

    const events = await storedEvents(svc, done.id);
    const fallback = events.find((e) => e.type === 'model.fallback')!;
    expect(fallback.data).toMatchObject({ step: 2, from: 'primary-model', to: 'backup-model', reason: expect.stringContaining('primary overloaded') });
    expect(events.filter((e) => e.type === 'step.finished').map((e) => (e.data as { usage: { costMicroUsd: number } }).usage.costMicroUsd)).toEqual([
      2_000, 200_000,
    ]);

    // The roll-ups (what GET /usage reads unless a query needs the records) count each call under its model.
    const byModel = (await svc.inject({ url: '/usage?groupBy=model' })).json();
    expect(byModel.groups.map((g: { key: string; inputTokens: number }) => [g.key, g.inputTokens])).toEqual(
      expect.arrayContaining([
        ['primary-model', 1000],
        ['backup-model', 1000],
      ]),
    );
    const agents = (await svc.inject({ url: '/agents' })).json().agents;
    expect(agents.find((a: { type: string }) => a.type === 'sturdy')).toMatchObject({ model: 'primary-model', fallbackModels: ['backup-model'] });
  });

  it('takes options.model as a list too; a refused request (400) is not a reason to fall back', async () => {
    model.script('NO-FALLBACK', (ctx) => (ctx.model === 'first' ? { status: 400, errorMessage: 'bad request' } : { text: 'unreachable' }));
    const refused = await run(taskBody({ prompt: 'NO-FALLBACK', options: { model: ['first', 'second'] } }));
    expect(refused).toMatchObject({ status: 'error', error: { code: 'provider_error' }, model: 'first' });
    expect((await storedEvents(svc, refused.id)).some((e) => e.type === 'model.fallback')).toBe(false);

    model.script('LIST-FALLBACK', (ctx) => (ctx.model === 'first' ? { status: 429, errorMessage: 'slow down' } : { text: 'second answered' }));
    const done = await run(taskBody({ prompt: 'LIST-FALLBACK', options: { model: ['first', 'second'] } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'second answered', model: 'second' });
  });
});
