import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type ScriptedTurn, type TurnContext } from '../scripted-model/server';
import { createSubagentClient, createTaskTool, type TaskOutput } from '@subagentd/client';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';
import { until } from './support/until';

/** Candidates: n attempts at once from one snapshot of the workspace, each checked by the outcome, one kept. */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-candidates-'));
  mkdirSync(path.join(dir, 'agents'));
  const prices = path.join(dir, 'prices.json');
  writeFileSync(
    prices,
    JSON.stringify({
      'model-a': { inputPerMTok: 1, outputPerMTok: 10 },
      'model-b': { inputPerMTok: 2, outputPerMTok: 20 },
      'model-c': { inputPerMTok: 3, outputPerMTok: 30 },
    }),
  );
  svc = await startService({ model, dir, env: { PRICES_FILE: prices, DEFAULT_MODEL: 'model-a' } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (payload: object, wait = true) =>
  fetch(`${svc.url}/tasks${wait ? '?wait=true' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
/** A response's JSON body, as the tests read it. */
const bodyOf = (res: Response): Promise<any> => res.json();
const get = async (url: string) => bodyOf(await fetch(`${svc.url}${url}`));
const shared = (parent: string, name: string) => path.join(svc.config.workspacesDir, parent, name);
const write = (p: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', args: { path: p, content } }],
  usage: { input: 1000, output: 100 },
});
const complete = (summary: string, paths: string[]): ScriptedTurn => ({
  toolCalls: [{ name: 'complete', args: { summary, paths } }],
  usage: { input: 1000, output: 100 },
});
/** The verify command: the answer holds "right". */
const outcome = { verify: { command: 'grep -q right answer.txt' }, maxIterations: 1 };

describe('candidates', () => {
  it('three attempts on three models from one snapshot: the passing one is selected, the shared workspace unchanged until apply, all three billed', async () => {
    mkdirSync(shared('T-cand', ''), { recursive: true });
    writeFileSync(shared('T-cand', 'base.txt'), 'in the snapshot');
    const saw: Record<string, string> = {};
    // Each model reads the snapshot's file, writes its answer, and completes: only model-b's is right.
    model.script('CAND-THREE', (ctx: TurnContext) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'read_file', args: { path: 'base.txt' } }], usage: { input: 1000, output: 100 } };
      if (ctx.turn === 1) {
        saw[ctx.model] = ctx.toolResults[0].content;
        return write('answer.txt', ctx.model === 'model-b' ? 'right' : `wrong from ${ctx.model}`);
      }
      return complete(`answered by ${ctx.model}`, ['answer.txt']);
    });
    const res = await post(
      taskBody({
        prompt: 'CAND-THREE',
        context: { parentTaskId: 'T-cand', userId: 'u-cand' },
        options: { isolation: 'worktree', outcome, candidates: { n: 3, models: ['model-a', 'model-b', 'model-c'] } },
      }),
    );
    expect(res.status).toBe(200);
    const done = await bodyOf(res);
    expect(done).toMatchObject({ status: 'completed', summary: 'answered by model-b', model: 'model-b', stopReason: 'complete', steps: 0 });
    expect(done.outcome).toMatchObject({ status: 'satisfied', iterations: 1 });
    expect(done.changes).toMatchObject({ added: ['answer.txt'], modified: [], deleted: [], appliedAt: null });
    expect(done.artifacts).toEqual([expect.objectContaining({ relativePath: 'answer.txt', url: `/tasks/${done.id}/files/answer.txt` })]);
    // Every attempt read the snapshot's file.
    expect(saw).toEqual({
      'model-a': expect.stringContaining('in the snapshot'),
      'model-b': expect.stringContaining('in the snapshot'),
      'model-c': expect.stringContaining('in the snapshot'),
    });

    const candidates = done.candidates as Array<{ taskId: string; model: string; status: string; outcome: any; costMicroUsd: number; selected: boolean }>;
    expect(candidates.map((c) => [c.model, c.status, c.outcome?.status, c.selected])).toEqual([
      ['model-a', 'completed', 'max_iterations_reached', false],
      ['model-b', 'completed', 'satisfied', true],
      ['model-c', 'completed', 'max_iterations_reached', false],
    ]);
    // Three calls of 1000 in / 100 out each, at each model's price.
    expect(candidates.map((c) => c.costMicroUsd)).toEqual([3 * 2_000, 3 * 4_000, 3 * 6_000]);
    for (const c of candidates) {
      const child = await get(`/tasks/${c.taskId}`);
      expect(child).toMatchObject({ parentTask: done.id, depth: 1, background: true, model: c.model, status: 'completed' });
    }

    // Nothing reached the shared workspace; the served file is the selected attempt's.
    expect(existsSync(shared('T-cand', 'answer.txt'))).toBe(false);
    expect(await (await fetch(`${svc.url}/tasks/${done.id}/files/answer.txt`)).text()).toBe('right');
    const diff = await (await fetch(`${svc.url}${done.changes.patchUrl}`)).text();
    expect(diff).toContain('+right');
    const applied = await fetch(`${svc.url}/tasks/${done.id}/apply`, { method: 'POST' });
    expect(applied.status).toBe(200);
    expect(readFileSync(shared('T-cand', 'answer.txt'), 'utf8')).toBe('right');
    expect((await get(`/tasks/${done.id}`)).changes.appliedAt).not.toBeNull();

    // Each attempt is billed as its own record, under its model; the task's own spent nothing.
    const records = (await get('/usage/records?parentTaskId=T-cand')).records as Array<{ taskId: string; model: string | null; costMicroUsd: number }>;
    const byTask = new Map(records.map((r) => [r.taskId, r]));
    expect(records).toHaveLength(4);
    expect(byTask.get(done.id)).toMatchObject({ costMicroUsd: 0 });
    for (const c of candidates) expect(byTask.get(c.taskId)).toMatchObject({ model: c.model, costMicroUsd: c.costMicroUsd });
    const reports = await svc.db.sql.all<{ task: string; n: number }>('SELECT task_id AS task, COUNT(*) AS n FROM usage_reports GROUP BY task_id');
    for (const c of candidates) expect(Number(reports.find((r) => r.task === c.taskId)?.n)).toBe(3);
    expect(reports.find((r) => r.task === done.id)).toBeUndefined();

    const events = (await storedEvents(svc, done.id)).map((e) => ({ type: e.type, data: e.data }));
    const types = events.map((e) => e.type).filter((t) => t.startsWith('candidate.') || t.startsWith('task.'));
    expect(types.slice(0, 4)).toEqual(['task.started', 'candidate.started', 'candidate.started', 'candidate.started']);
    expect(types.slice(4, 7)).toEqual(['candidate.finished', 'candidate.finished', 'candidate.finished']);
    expect(types.slice(7)).toEqual(['candidate.selected', 'task.finished']);
    expect(events.filter((e) => e.type === 'candidate.started').map((e) => e.data.model)).toEqual(['model-a', 'model-b', 'model-c']);
    expect(events.find((e) => e.type === 'candidate.selected')!.data).toEqual({
      taskId: candidates[1].taskId,
      reason: 'satisfied, most criteria passed (1 of 1)',
    });
  });

  it('first_satisfied keeps the first satisfied attempt and cancels the others', async () => {
    model.script('CAND-FIRST', (ctx: TurnContext) => {
      // model-b never answers in time; model-a is right at once.
      if (ctx.model === 'model-b') return { delayMs: 60_000, text: 'never arrives' };
      return ctx.turn === 0 ? write('answer.txt', 'right') : complete('fast and right', ['answer.txt']);
    });
    const done = await bodyOf(
      await post(
        taskBody({
          prompt: 'CAND-FIRST',
          context: { parentTaskId: 'T-cand-first', userId: 'u-cand' },
          options: { isolation: 'worktree', outcome, candidates: { n: 3, models: ['model-b', 'model-a'], pick: 'first_satisfied' } },
        }),
      ),
    );
    expect(done).toMatchObject({ status: 'completed', summary: 'fast and right', model: 'model-a' });
    expect(done.candidates.map((c: any) => [c.model, c.status, c.selected])).toEqual([
      ['model-b', 'aborted', false],
      ['model-a', 'completed', true],
      ['model-b', 'aborted', false],
    ]);
    for (const c of done.candidates.filter((x: any) => !x.selected)) {
      expect((await get(`/tasks/${c.taskId}`)).error).toMatchObject({ code: 'cancelled', message: expect.stringContaining('satisfied first') });
    }
    const types = (await storedEvents(svc, done.id)).map((e) => e.type).filter((t) => t.startsWith('candidate.'));
    // Selected as soon as it was satisfied, before the others ended.
    expect(types.slice(3)).toEqual(['candidate.finished', 'candidate.selected', 'candidate.finished', 'candidate.finished']);
  });

  it('a cancel cancels every attempt', async () => {
    model.script('CAND-CANCEL', () => ({ delayMs: 60_000, text: 'never arrives' }));
    const res = await post(
      taskBody({
        prompt: 'CAND-CANCEL',
        context: { parentTaskId: 'T-cand-cancel', userId: 'u-cand' },
        options: { isolation: 'worktree', outcome, candidates: { n: 2 } },
      }),
      false,
    );
    const { id } = await bodyOf(res);
    let tasks: any[] = [];
    await until(async () => {
      tasks = ((await get('/tasks?parentTaskId=T-cand-cancel')).tasks as any[]).filter((t) => t.parentTask === id && t.status === 'running');
      return tasks.length === 2;
    });
    expect((await fetch(`${svc.url}/tasks/${id}/cancel`, { method: 'POST' })).status).toBe(202);
    await until(async () => (await get(`/tasks/${id}`)).status !== 'running');
    expect(await get(`/tasks/${id}`)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    for (const t of tasks) {
      await until(async () => (await get(`/tasks/${t.id}`)).status !== 'running');
      expect(await get(`/tasks/${t.id}`)).toMatchObject({ status: 'aborted', error: { code: 'cancelled', message: expect.stringContaining(id) } });
    }
  });

  it("the task's budget counts its attempts' sum: once they wait on it the task pauses, and its resume with a raised budget resumes them", async () => {
    // Each call costs 1,100 tokens: one attempt alone (two calls) spends 2,200. With the task's
    // budget at 2,000 whichever attempt asks for its next call last finds the two together past it.
    // A call already under way finishes (docs/reference.md, Budgets): when one attempt's second
    // call started before the other's first was billed, the other pauses at 2,200 and the first
    // completes, so the sum ends at 3,300.
    model.script('CAND-BUDGET', (ctx: TurnContext) => (ctx.turn === 0 ? write('answer.txt', 'right') : complete('spent', ['answer.txt'])));
    const { id } = await bodyOf(
      await post(
        taskBody({
          prompt: 'CAND-BUDGET',
          context: { parentTaskId: 'T-cand-budget', userId: 'u-cand' },
          options: { isolation: 'worktree', outcome, budget: { maxTokens: 2000 }, candidates: { n: 2 } },
        }),
        false,
      ),
    );
    // Every attempt that has not ended waits on the task's budget: the task pauses too, naming them.
    await until(async () => (await get(`/tasks/${id}`)).status === 'paused');
    const attempts = ((await get('/tasks?parentTaskId=T-cand-budget')).tasks as any[]).filter((t) => t.parentTask === id);
    const paused = attempts.filter((t) => t.status === 'paused');
    expect(paused.length).toBeGreaterThan(0);
    expect(attempts.every((t) => t.status === 'paused' || t.status === 'completed')).toBe(true);
    const both = attempts.reduce((n, t) => n + t.usage.totalTokens, 0);
    for (const a of paused) {
      // Its spend is the task's whole tree when it paused: its own tokens and the other attempt's,
      // past the limit; the other's call under way then may have added to it.
      expect(a.pause).toMatchObject({ reason: 'budget', budget: 'task', task: id, measure: 'tokens', limit: 2000 });
      expect(a.pause.spent).toBeGreaterThanOrEqual(2200);
      expect(a.pause.spent).toBeLessThanOrEqual(both);
      expect(a.usage.totalTokens).toBeLessThan(2000);
    }
    const task = await get(`/tasks/${id}`);
    // The task's pause is its first held attempt's.
    expect(task.pause).toMatchObject({ reason: 'budget', budget: 'task', measure: 'tokens', limit: 2000 });
    expect(paused.map((a) => a.pause.spent)).toContain(task.pause.spent);
    expect(task.pause.task).toBeUndefined();
    expect([...task.pause.attempts].sort()).toEqual(paused.map((t) => t.id).sort());
    expect(
      task.candidates
        .filter((c: any) => c.status === 'paused')
        .map((c: any) => c.taskId)
        .sort(),
    ).toEqual(paused.map((t) => t.id).sort());

    const resume = (body: unknown) =>
      fetch(`${svc.url}/tasks/${id}/resume`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // Bad input is the contract's 400; a budget still reached by the attempts' sum is a 409 naming it.
    const bad = await resume({ budget: { maxTokens: 'more' } });
    expect(bad.status).toBe(400);
    expect((await bodyOf(bad)).error).toMatchObject({
      code: 'invalid_request',
      details: [expect.objectContaining({ field: expect.stringContaining('maxTokens') })],
    });
    const low = await resume({ budget: { maxTokens: both } });
    expect(low.status).toBe(409);
    expect((await bodyOf(low)).error).toMatchObject({ code: 'budget_exceeded', details: { budget: 'task', measure: 'tokens', limit: both, spent: both } });
    expect(await get(`/tasks/${id}`)).toMatchObject({ status: 'paused' });

    // Raised: the task goes on, resumes its attempts, and keeps one as it would have.
    const raised = await resume({ budget: { maxTokens: 100_000 } });
    expect(raised.status).toBe(202);
    await until(async () => ['completed', 'aborted', 'error'].includes((await get(`/tasks/${id}`)).status));
    const done = await get(`/tasks/${id}`);
    expect(done).toMatchObject({ status: 'completed', summary: 'spent', pause: null, outcome: { status: 'satisfied' } });
    for (const a of paused) expect(await get(`/tasks/${a.id}`)).toMatchObject({ status: 'completed', outcome: { status: 'satisfied' } });
    expect(done.candidates.map((c: any) => c.status)).toEqual(['completed', 'completed']);
    const events = (await storedEvents(svc, id)).map((e: any) => e.type);
    expect(events).toEqual(expect.arrayContaining(['task.paused', 'task.resumed', 'candidate.selected', 'task.finished']));
  });

  it("the client's task tool starts its subagents with candidates and an outcome; the parent model reads the kept attempt and whether it was met", async () => {
    model.script('CAND-TOOL', (ctx: TurnContext) =>
      ctx.turn === 0 ? write('answer.txt', ctx.model === 'model-c' ? 'right' : 'wrong') : complete(`by ${ctx.model}`, ['answer.txt']),
    );
    const client = createSubagentClient({ baseUrl: svc.url });
    await expect(createTaskTool({ client, context: { parentTaskId: 'T-cand-tool', userId: 'u' }, candidates: { n: 2 } })).rejects.toThrow(/give outcome/);
    const tool = await createTaskTool({
      client,
      context: { parentTaskId: 'T-cand-tool', userId: 'u' },
      outcome,
      candidates: { n: 2, models: ['model-a', 'model-c'] },
    });
    let last: unknown;
    const run = tool.execute!({ subagent_type: 'general', description: 'answer', prompt: 'CAND-TOOL' }, { toolCallId: 'call_cand', messages: [] });
    for await (const out of run as AsyncIterable<unknown>) last = out;
    const done = last as TaskOutput;
    expect(done).toMatchObject({ status: 'completed', summary: 'by model-c', changes: { added: ['answer.txt'] } });
    const seen = (await tool.toModelOutput!({
      toolCallId: 'call_cand',
      input: { subagent_type: 'general', description: 'answer', prompt: 'CAND-TOOL' },
      output: done,
    })) as { value: any };
    expect(seen.value).toMatchObject({
      status: 'completed',
      summary: 'by model-c',
      outcome: { status: 'satisfied', iterations: 1 },
      candidates: { attempts: 2, selected: done.candidates!.find((c) => c.model === 'model-c')!.taskId },
    });
  });

  it('refuses candidates without a worktree, without an outcome, for a shell task, outside 2..8, and on a follow-up', async () => {
    const refused = async (options: object, over: object = {}) => {
      const res = await post(taskBody({ prompt: 'x', context: { parentTaskId: 'T-cand-400', userId: 'u' }, options, ...over }), false);
      expect(res.status).toBe(400);
      return (await bodyOf(res)).error;
    };
    expect(await refused({ outcome, candidates: { n: 2 } })).toMatchObject({
      code: 'invalid_request',
      details: [{ field: 'body.options.candidates', message: expect.stringContaining('isolation "worktree"') }],
    });
    expect(await refused({ isolation: 'worktree', candidates: { n: 2 } })).toMatchObject({
      details: [{ field: 'body.options.candidates', message: expect.stringContaining('need an outcome') }],
    });
    expect(await refused({ isolation: 'worktree', outcome, candidates: { n: 1 } })).toMatchObject({ code: 'invalid_request' });
    expect(await refused({ isolation: 'worktree', outcome, candidates: { n: 9 } })).toMatchObject({ code: 'invalid_request' });
    expect(await refused({ isolation: 'worktree', outcome, candidates: { n: 2, pick: 'worst' } })).toMatchObject({ code: 'invalid_request' });
    expect(await refused({ isolation: 'worktree', candidates: { n: 2 } }, { subagent_type: 'shell', command: 'true', prompt: undefined })).toMatchObject({
      details: [{ field: 'body.options.candidates', message: expect.stringContaining('runs no model') }],
    });
    expect(await refused({ isolation: 'worktree', outcome, candidates: { n: 2 } }, { task_id: 'tsk_01J0000000000000000000000A' })).toMatchObject({
      details: [{ field: 'body.task_id', message: expect.stringContaining('candidates start fresh') }],
    });
    // The same options with a worktree and an outcome are admitted.
    model.script('CAND-OK', (ctx: TurnContext) => (ctx.turn === 0 ? write('answer.txt', 'right') : complete('ok', ['answer.txt'])));
    const ok = await post(
      taskBody({ prompt: 'CAND-OK', context: { parentTaskId: 'T-cand-ok', userId: 'u' }, options: { isolation: 'worktree', outcome, candidates: { n: 2 } } }),
    );
    expect(ok.status).toBe(200);
    expect(await bodyOf(ok)).toMatchObject({ status: 'completed', candidates: [{ selected: true }, { selected: false }] });
  });
});
