import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type ScriptedTurn, type TurnContext } from '../scripted-model/server';
import { startService, taskBody, type TestService } from './support/harness';

/**
 * Candidates at their edges: copies kept while the task runs (WORKTREE_TTL_MS is one second here),
 * attempts waiting on their task's budget (PAUSED_TTL_MS one second), the kept attempt's own id,
 * and what admission refuses.
 */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-cand-guards-'));
  mkdirSync(path.join(dir, 'agents'));
  svc = await startService({ model, dir, env: { WORKTREE_TTL_MS: '1000', PAUSED_TTL_MS: '1000', DEFAULT_MODEL: 'model-a', MAX_QUEUED_PER_TENANT: '4' } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (payload: object, wait = true) =>
  fetch(`${svc.url}/tasks${wait ? '?wait=true' : ''}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
const bodyOf = (res: Response): Promise<any> => res.json();
const write = (p: string, content: string): ScriptedTurn => ({ toolCalls: [{ name: 'write_file', args: { path: p, content } }] });
const complete = (summary: string, paths: string[]): ScriptedTurn => ({ toolCalls: [{ name: 'complete', args: { summary, paths } }] });
const outcome = { verify: { command: 'grep -q right answer.txt' }, maxIterations: 1 };
const candidatesTask = (prompt: string, parentTaskId: string, candidates: object) =>
  taskBody({ prompt, context: { parentTaskId, userId: 'u' }, options: { isolation: 'worktree', outcome, candidates } });

describe('candidates at their edges', () => {
  it('an attempt that ended keeps its copy past WORKTREE_TTL_MS while a sibling runs: the task keeps its changes', async () => {
    model.script('CANDG-TTL', (ctx: TurnContext) => {
      // The second attempt's first answer comes well after the first attempt's copy would have expired.
      if (ctx.model === 'model-b') return ctx.turn === 0 ? { ...write('answer.txt', 'wrong'), delayMs: 3500 } : complete('slow b', ['answer.txt']);
      return ctx.turn === 0 ? write('answer.txt', 'right') : complete('fast a', ['answer.txt']);
    });
    const res = await post(candidatesTask('CANDG-TTL', 'T-candg-ttl', { n: 2, models: ['model-a', 'model-b'] }));
    const done = await bodyOf(res);
    expect(done).toMatchObject({ status: 'completed', summary: 'fast a', changes: { added: ['answer.txt'] } });
    expect(await (await fetch(`${svc.url}/tasks/${done.id}/files/answer.txt`)).text()).toBe('right');
    // The kept attempt's own id says where its copy went, for an apply and a diff alike.
    const kept = done.candidates.find((c: any) => c.selected).taskId;
    for (const res of [await fetch(`${svc.url}/tasks/${kept}/apply`, { method: 'POST' }), await fetch(`${svc.url}/tasks/${kept}/changes.diff`)]) {
      expect(res.status).toBe(410);
      expect((await bodyOf(res)).error).toMatchObject({ code: 'worktree_removed', message: expect.stringContaining(`kept by its task ${done.id}`) });
    }
    // A follow-up of the task is refused, naming the kept attempt, whose conversation it is; that one continues.
    const follow = await post({ ...candidatesTask('CANDG-TTL', 'T-candg-ttl', { n: 2 }), options: {}, task_id: done.id }, false);
    expect(follow.status).toBe(400);
    expect((await bodyOf(follow)).error).toMatchObject({
      details: [{ field: 'body.task_id', message: expect.stringContaining(`task_id "${kept}"`) }],
    });
    expect((await post({ ...candidatesTask('CANDG-TTL', 'T-candg-ttl', { n: 2 }), options: {}, task_id: kept }, false)).status).toBe(202);
    // Once the task ended, the attempt it did not keep expires as any other copy does.
    const other = done.candidates.find((c: any) => !c.selected).taskId;
    await expect.poll(async () => (await fetch(`${svc.url}/tasks/${other}/changes.diff`)).status, { timeout: 10_000, interval: 300 }).toBe(410);
  });

  it("attempts paused at the task's budget wait on the task: the pause sweep ends the task, and the attempts with it, not them first", async () => {
    // Each call is 1,100 tokens, the budget 2,000: the attempts pause before a second call, then the task.
    const spend = { usage: { input: 1000, output: 100 } };
    model.script('CANDG-EXPIRE', (ctx: TurnContext) =>
      ctx.turn === 0 ? { ...write('answer.txt', 'right'), ...spend } : { ...complete('spent', ['answer.txt']), ...spend },
    );
    const res = await post(
      taskBody({
        prompt: 'CANDG-EXPIRE',
        context: { parentTaskId: 'T-candg-expire', userId: 'u' },
        options: { isolation: 'worktree', outcome, budget: { maxTokens: 2000 }, candidates: { n: 2 } },
      }),
      false,
    );
    const id = (await bodyOf(res)).id as string;
    // The attempts paused first (and so longer): the sweep ends the task once it expired, which ends them.
    await expect.poll(async () => (await bodyOf(await fetch(`${svc.url}/tasks/${id}`))).status, { timeout: 20_000, interval: 200 }).toBe('aborted');
    const task = await bodyOf(await fetch(`${svc.url}/tasks/${id}`));
    expect(task.error).toMatchObject({ code: 'budget_exceeded' });
    const waited = (task.candidates as any[]).filter((c) => c.status !== 'completed');
    expect(waited.length).toBeGreaterThan(0);
    for (const c of waited) {
      await expect.poll(async () => (await bodyOf(await fetch(`${svc.url}/tasks/${c.taskId}`))).status, { timeout: 10_000 }).toBe('aborted');
      expect((await bodyOf(await fetch(`${svc.url}/tasks/${c.taskId}`))).error).toMatchObject({ code: 'parent_ended' });
    }
  });

  it('refuses more models than attempts, a blank model, and more attempts than the tenant may queue (a task with two is admitted above)', async () => {
    const refused = async (candidates: object) => {
      const res = await post(candidatesTask('x', 'T-candg-400', candidates), false);
      expect(res.status).toBe(400);
      return (await bodyOf(res)).error;
    };
    expect(await refused({ n: 2, models: ['model-a', 'model-b', 'model-c'] })).toMatchObject({
      code: 'invalid_request',
      details: [{ field: 'body.options.candidates.models', message: expect.stringContaining('3 models for 2 attempts') }],
    });
    expect(await refused({ n: 2, models: [' ', 'model-a'] })).toMatchObject({
      details: [{ field: 'body.options.candidates.models.0', message: expect.stringContaining('blank') }],
    });
    // MAX_QUEUED_PER_TENANT is 4: the task and four attempts never fit.
    expect(await refused({ n: 4 })).toMatchObject({
      details: [{ field: 'body.options.candidates.n', message: expect.stringContaining('MAX_QUEUED_PER_TENANT') }],
    });
  });

  it('a message to the task steers each of its running attempts; once it ended it is refused', async () => {
    model.script('CANDG-STEER', (ctx: TurnContext) =>
      ctx.turn === 0
        ? { ...write('answer.txt', ctx.model === 'model-a' ? 'right' : 'wrong'), delayMs: 1500 }
        : complete(`done by ${ctx.model}`, ['answer.txt']),
    );
    const id = (await bodyOf(await post(candidatesTask('CANDG-STEER', 'T-candg-steer', { n: 2, models: ['model-a', 'model-b'] }), false))).id as string;
    await expect.poll(async () => (await bodyOf(await fetch(`${svc.url}/tasks/${id}`))).candidates?.length ?? 0, { timeout: 10_000 }).toBe(2);
    const steer = () =>
      fetch(`${svc.url}/tasks/${id}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'STEER-ALL please' }),
      });
    expect((await steer()).status).toBe(202);
    await expect.poll(async () => (await bodyOf(await fetch(`${svc.url}/tasks/${id}`))).status, { timeout: 20_000 }).toBe('completed');
    // Each attempt's next call carried the message.
    for (const m of ['model-a', 'model-b']) {
      const asked = model.requests.filter((r) => r.body.model === m && JSON.stringify(r.body.messages).includes('CANDG-STEER'));
      expect(asked.some((r) => JSON.stringify(r.body.messages).includes('STEER-ALL please'))).toBe(true);
    }
    const late = await steer();
    expect(late.status).toBe(409);
    expect((await bodyOf(late)).error.code).toBe('task_finished');
  });

  it("a task paused on its attempts' budget stops watching them: nothing of it reads on once the service has closed", async () => {
    // A service of its own, closed while the task is paused: an attempt still watched would be read
    // each second after its database closed, a failure nobody handles.
    const own = path.join(dir, 'paused-close');
    mkdirSync(path.join(own, 'agents'), { recursive: true });
    const paused = await startService({ model, dir: own, env: { DEFAULT_MODEL: 'model-a' } });
    const unhandled: unknown[] = [];
    const seen = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', seen);
    try {
      // One call (2,100 tokens) spends the budget (2,000): neither attempt gets to a second call, and
      // the task pauses on the second to pause, whose watch is the last one made.
      model.script('CANDG-PAUSE-CLOSE', () => ({ ...write('answer.txt', 'right'), usage: { input: 2000, output: 100 } }));
      const body = taskBody({
        prompt: 'CANDG-PAUSE-CLOSE',
        context: { parentTaskId: 'T-candg-pause-close', userId: 'u' },
        options: { isolation: 'worktree', outcome, budget: { maxTokens: 2000 }, candidates: { n: 2 } },
      });
      const res = await fetch(`${paused.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const id = (await bodyOf(res)).id as string;
      await expect.poll(async () => (await bodyOf(await fetch(`${paused.url}/tasks/${id}`))).status, { timeout: 20_000, interval: 200 }).toBe('paused');
      await paused.close();
      // Past two of the seconds after which a paused attempt would have been looked at again.
      await new Promise((r) => setTimeout(r, 2500));
      expect(unhandled.map(String)).toEqual([]);
    } finally {
      process.off('unhandledRejection', seen);
    }
  });
});
