import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type TurnContext } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';

/**
 * A task with candidates whose process is killed (SIGKILL) while its attempts run: the next start
 * resumes the task and every attempt from where it was, starts no attempt twice, bills every call
 * the model served once, and keeps the best attempt. On SQLite, and on PostgreSQL with
 * TEST_DATABASE=postgres (the restarted instance keeps its name).
 */
let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-cand-crash-'));
  mkdirSync(path.join(dir, 'agents'));
  env = childEnv(dir, model.url, TEST_API_KEY);
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const kill9 = async (svc: ChildService) => {
  svc.child.kill('SIGKILL');
  await svc.exited;
};
const post = (svc: ChildService, body: unknown) =>
  json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
/** The model's requests of the attempts on `m`, by turn. */
const turnsOf = (m: string) =>
  model.requests
    .filter((r) => r.body.model === m && JSON.stringify(r.body.messages).includes('CANDC-WORK'))
    .map((r) => r.body.messages.filter((x) => x.role === 'assistant').length);

describe('a task with candidates killed while its attempts run', () => {
  it('resumes every attempt, starts none twice, bills each served call once and keeps the best', async () => {
    const firstAsk = new Map<string, number>();
    model.script('CANDC-WORK', (ctx: TurnContext) => {
      if (ctx.turn === 0) {
        const n = (firstAsk.get(ctx.model) ?? 0) + 1;
        firstAsk.set(ctx.model, n);
        // Each attempt's first call hangs until the kill; asked again after the restart, it answers.
        if (n === 1) return { delayMs: 60_000, text: 'never arrives' };
        const content = ctx.model === 'cand-a' ? 'right' : 'wrong';
        return { toolCalls: [{ name: 'write_file', args: { path: 'answer.txt', content } }], usage: { input: 1000, output: 100 } };
      }
      return { toolCalls: [{ name: 'complete', args: { summary: `done by ${ctx.model}`, paths: ['answer.txt'] } }], usage: { input: 1000, output: 100 } };
    });
    const first = await startChildService(env);
    const body = taskBody({
      prompt: 'CANDC-WORK',
      context: { parentTaskId: 'T-candc', userId: 'u' },
      options: {
        isolation: 'worktree',
        outcome: { verify: { command: 'grep -q right answer.txt' }, maxIterations: 1 },
        candidates: { n: 2, models: ['cand-a', 'cand-b'] },
      },
    });
    const id = (await post(first, body)).body.id as string;
    // Both attempts are in their first model call, and the task has recorded them.
    await until(async () => turnsOf('cand-a').length === 1 && turnsOf('cand-b').length === 1);
    await until(async () => (await json(`${first.url}/tasks/${id}`)).body.candidates?.length === 2);
    const before = (await json(`${first.url}/tasks/${id}`)).body.candidates as Array<{ taskId: string }>;
    await kill9(first);

    const second = await startChildService(env);
    try {
      await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status === 'completed', 40_000);
      const done = (await json(`${second.url}/tasks/${id}`)).body;
      expect(done).toMatchObject({ summary: 'done by cand-a', model: 'cand-a', changes: { added: ['answer.txt'] }, outcome: { status: 'satisfied' } });
      expect(done.candidates.map((c: any) => [c.taskId, c.model, c.status, c.selected])).toEqual([
        [before[0].taskId, 'cand-a', 'completed', true],
        [before[1].taskId, 'cand-b', 'completed', false],
      ]);
      // No attempt started twice: the task's children are the two of before, each resumed (its cut call asked again).
      const all = (await json(`${second.url}/tasks?parentTaskId=T-candc`)).body.tasks as any[];
      expect(all.map((t) => t.id).sort()).toEqual([id, ...before.map((c) => c.taskId)].sort());
      expect(turnsOf('cand-a')).toEqual([0, 0, 1]);
      expect(turnsOf('cand-b')).toEqual([0, 0, 1]);
      // The ledger: every answer the model served billed once, each attempt as its own record.
      const served = model.served.filter((s) => s.prompt.includes('CANDC-WORK'));
      expect(served).toHaveLength(4);
      const records = (await json(`${second.url}/usage/records?parentTaskId=T-candc`)).body.records as Array<{ taskId: string; inputTokens: number }>;
      expect(records.map((r) => r.taskId).sort()).toEqual(all.map((t) => t.id).sort());
      expect(records.reduce((n, r) => n + r.inputTokens, 0)).toBe(served.reduce((n, s) => n + s.inputTokens, 0));
      for (const c of before) expect(records.find((r) => r.taskId === c.taskId)!.inputTokens).toBe(2000);
      // Each attempt reported once, across both processes.
      const stream = await (await fetch(`${second.url}/tasks/${id}/events`)).text();
      const count = (type: string) => stream.split('\n').filter((l) => l === `event: ${type}`).length;
      expect([count('candidate.started'), count('candidate.finished'), count('candidate.selected'), count('task.resumed')]).toEqual([2, 2, 1, 1]);
    } finally {
      await kill9(second);
    }
  });
});

/** The folder of the copies of worktree tasks (one tenant here), wherever the tenant's workspaces are. */
function worktreesDir(): string {
  const found = readdirSync(path.join(dir, 'workspaces'), { recursive: true, withFileTypes: true }).find((e) => e.isDirectory() && e.name === '#worktrees');
  return path.join(found!.parentPath, found!.name);
}

describe("a task with candidates killed while the kept attempt's copy becomes its own", () => {
  it('finishes the adoption when it resumes: the kept changes stay, nothing is copied over them', async () => {
    const asked = new Map<string, number>();
    model.script('CANDA-WORK', (ctx: TurnContext) => {
      if (ctx.model === 'adopt-b') {
        // The second attempt hangs until the kill; asked again after the restart, it gives up wrong.
        asked.set(ctx.model, (asked.get(ctx.model) ?? 0) + 1);
        if (asked.get(ctx.model) === 1) return { delayMs: 60_000, text: 'never arrives' };
        return { text: 'no idea' };
      }
      if (ctx.turn === 0) return { toolCalls: [{ name: 'write_file', args: { path: 'base.txt', content: 'right' } }] };
      return { toolCalls: [{ name: 'complete', args: { summary: 'done by adopt-a', paths: ['base.txt'] } }] };
    });
    const first = await startChildService(env);
    const body = taskBody({
      prompt: 'CANDA-WORK',
      context: { parentTaskId: 'T-canda', userId: 'u' },
      options: {
        isolation: 'worktree',
        outcome: { verify: { command: 'grep -q right base.txt' }, maxIterations: 1 },
        candidates: { n: 2, models: ['adopt-a', 'adopt-b'] },
      },
    });
    const id = (await post(first, body)).body.id as string;
    let a = '';
    await until(async () => {
      const list = ((await json(`${first.url}/tasks/${id}`)).body.candidates ?? []) as Array<{ taskId: string; model: string; status: string }>;
      a = list.find((c) => c.model === 'adopt-a' && c.status === 'completed')?.taskId ?? '';
      return a !== '';
    });
    await kill9(first);
    // What a kill between the moves leaves: the intent written, the task's copy replaced by the
    // attempt's, the attempt's manifest not yet moved.
    const wt = worktreesDir();
    expect(readFileSync(path.join(wt, a, 'base.txt'), 'utf8')).toBe('right');
    writeFileSync(path.join(wt, `${id}.adopting`), a);
    rmSync(path.join(wt, `${id}.json`));
    rmSync(path.join(wt, id), { recursive: true });
    renameSync(path.join(wt, a), path.join(wt, id));

    const second = await startChildService(env);
    try {
      await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status === 'completed', 40_000);
      const done = (await json(`${second.url}/tasks/${id}`)).body;
      expect(done).toMatchObject({ summary: 'done by adopt-a', changes: { added: ['base.txt'], modified: [], deleted: [] } });
      expect(await (await fetch(`${second.url}/tasks/${id}/files/base.txt`)).text()).toBe('right');
      expect(existsSync(path.join(wt, `${id}.adopting`))).toBe(false);
      expect(existsSync(path.join(wt, `${a}.json`))).toBe(false);
    } finally {
      await kill9(second);
    }
  });
});
