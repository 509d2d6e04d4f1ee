import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildService, type ChildService } from './support/child-service';
import { startScriptedModel, type ScriptedModel } from './support/scripted-model';
import { taskBody, TEST_API_KEY } from './support/harness';
import { openStream } from './support/ws-client';

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-crash-'));
  env = {
    DATABASE_PATH: path.join(dir, 'db.sqlite'),
    WORKSPACES_DIR: path.join(dir, 'workspaces'),
    AGENTS_DIR: path.join(dir, 'agents'),
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: TEST_API_KEY,
    MAX_CONCURRENT_TASKS: '1',
  };
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const json = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as any };
};
const post = (svc: ChildService, body: unknown) =>
  json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
async function until(check: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a service killed with SIGKILL mid-task', () => {
  it('ends the running task error/interrupted with the exact usage of its finished steps, and runs the queued one', async () => {
    model.script('CRASH-RUNNING', [
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 111, output: 11, cached: 5 } },
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 222, output: 22, reasoning: 3 } },
      { delayMs: 60_000, text: 'never arrives' },
    ]);
    model.script('CRASH-QUEUED', [{ toolCalls: [{ name: 'complete', args: { summary: 'ran after restart', paths: [] } }], usage: { input: 5, output: 1 } }]);
    const first = await startChildService(env);
    const running = (await post(first, taskBody({ prompt: 'CRASH-RUNNING', context: { parentTaskId: 'T-crash', userId: 'u-1' } }))).body.id;
    const queued = (await post(first, taskBody({ prompt: 'CRASH-QUEUED', context: { parentTaskId: 'T-crash', userId: 'u-1' } }))).body.id;
    await until(async () => (await json(`${first.url}/tasks/${running}`)).body.steps === 2);
    expect((await json(`${first.url}/tasks/${queued}`)).body.status).toBe('queued');

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const second = await startChildService(env);
    try {
      expect(second.output()).toContain('recovered unfinished tasks');
      const task = (await json(`${second.url}/tasks/${running}`)).body;
      expect(task).toMatchObject({
        status: 'error',
        error: { code: 'interrupted' },
        steps: 2,
        usage: { inputTokens: 333, outputTokens: 33, totalTokens: 366, cachedInputTokens: 5, reasoningTokens: 3 },
      });
      const records = (await json(`${second.url}/usage/records?parentTaskId=T-crash`)).body.records;
      const rec = records.find((r: { taskId: string }) => r.taskId === running);
      expect(rec).toMatchObject({ status: 'error', steps: 2, inputTokens: 333, outputTokens: 33, totalTokens: 366 });
      expect(rec.completedAt).not.toBeNull();
      // The stream of the interrupted task replays and ends with task.finished.
      const stream = await openStream(`${second.url.replace('http', 'ws')}/tasks/${running}/stream`);
      expect((await stream.closed).code).toBe(1000);
      expect(stream.messages.at(-1)).toMatchObject({ type: 'task.finished', data: { status: 'error', error: { code: 'interrupted' } } });
      expect(stream.messages.map((m) => m.seq)).toEqual(stream.messages.map((_, i) => i + 1));
      // The queued task had not run: it was queued again and ran now.
      await until(async () => (await json(`${second.url}/tasks/${queued}`)).body.status === 'completed');
      expect((await json(`${second.url}/tasks/${queued}`)).body).toMatchObject({ summary: 'ran after restart', usage: { inputTokens: 5 } });
      const usage = (await json(`${second.url}/usage?parentTaskId=T-crash`)).body.totals;
      expect(usage).toMatchObject({ tasks: 2, steps: 3, inputTokens: 338, outputTokens: 34 });
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });
});

describe('SIGTERM', () => {
  it('refuses new work with 503, aborts what is still running as interrupted after the grace, and exits 0 within 15 s', async () => {
    model.script('TERM-LONG', [{ delayMs: 60_000, text: 'never arrives' }]);
    const svc = await startChildService(env);
    const id = (await post(svc, taskBody({ prompt: 'TERM-LONG', context: { parentTaskId: 'T-term', userId: 'u-1' } }))).body.id;
    await until(async () => model.requests.some((r) => JSON.stringify(r.body).includes('TERM-LONG')));
    const sentAt = Date.now();
    svc.child.kill('SIGTERM');
    await until(async () => svc.output().includes('shutting down'));
    const refused = await post(svc, taskBody({ prompt: 'TERM-LATE' }));
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('shutting_down');
    const { code } = await svc.exited;
    expect(code).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(15_000);

    const again = await startChildService(env);
    try {
      const task = (await json(`${again.url}/tasks/${id}`)).body;
      expect(task).toMatchObject({ status: 'aborted', error: { code: 'interrupted' } });
      const records = (await json(`${again.url}/usage/records?parentTaskId=T-term`)).body.records;
      expect(records).toMatchObject([{ taskId: id, status: 'aborted' }]);
      expect(again.output()).not.toContain('recovered unfinished tasks');
    } finally {
      again.child.kill('SIGKILL');
      await again.exited;
    }
  });
});
