import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { taskBody, TEST_API_KEY } from './support/harness';
import { openStream } from './support/ws-client';
import { until } from './support/until';

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-crash-'));
  env = {
    ...childEnv(dir, model.url, TEST_API_KEY),
    MAX_CONCURRENT_TASKS: '1',
    // This file is about the interrupt mode; test/resume.test.ts about resume, the default.
    RECOVERY_MODE: 'interrupt',
  };
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (svc: ChildService, body: unknown) =>
  json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
describe('a service killed with SIGKILL mid-task', () => {
  it('ends the running task error/interrupted, billing every token the provider reported, and runs the queued one', async () => {
    model.script('CRASH-RUNNING', [
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 111, output: 11, cached: 5 } },
      // Killed while this step's tool runs: its tokens were reported before, so they are billed.
      { toolCalls: [{ name: 'bash', args: { command: 'sleep 7071' } }], usage: { input: 222, output: 22, reasoning: 3 } },
      { delayMs: 60_000, text: 'never arrives' },
    ]);
    model.script('CRASH-QUEUED', [{ toolCalls: [{ name: 'complete', args: { summary: 'ran after restart', paths: [] } }], usage: { input: 5, output: 1 } }]);
    const first = await startChildService(env);
    const running = (await post(first, taskBody({ prompt: 'CRASH-RUNNING', context: { parentTaskId: 'T-crash', userId: 'u-1' } }))).body.id;
    const queued = (await post(first, taskBody({ prompt: 'CRASH-QUEUED', context: { parentTaskId: 'T-crash', userId: 'u-1' } }))).body.id;
    await until(async () => (await json(`${first.url}/tasks/${running}`)).body.usage.inputTokens === 333);
    expect((await json(`${first.url}/tasks/${queued}`)).body.status).toBe('queued');

    // A second instance on the same database is refused before it touches anything.
    const rival = await startChildService(env, [], { waitReady: false });
    expect((await rival.exited).code).toBe(3);
    expect(rival.output()).toMatch(/another subagentd process/);
    expect((await json(`${first.url}/tasks/${running}`)).body.status).toBe('running');

    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // Without the sandbox (BASH_SANDBOX=none) nothing ties the command to the dead service.
    spawnSync('pkill', ['-f', 'sleep 7071']);
    // An outage the record must not count.
    await new Promise((r) => setTimeout(r, 1500));

    const second = await startChildService(env);
    try {
      // Logged as /healthz turns ready; its line may reach this process's pipe after the answer.
      await until(async () => second.output().includes('recovered unfinished tasks'), 10_000);
      const task = (await json(`${second.url}/tasks/${running}`)).body;
      expect(task).toMatchObject({
        status: 'error',
        error: { code: 'interrupted' },
        steps: 1,
        usage: { inputTokens: 333, outputTokens: 33, totalTokens: 366, cachedInputTokens: 5, reasoningTokens: 3 },
      });
      const records = (await json(`${second.url}/usage/records?parentTaskId=T-crash`)).body.records;
      const rec = records.find((r: { taskId: string }) => r.taskId === running);
      expect(rec).toMatchObject({ status: 'error', steps: 1, inputTokens: 333, outputTokens: 33, totalTokens: 366 });
      // It ended at its last stored event, before the kill, not when the service came back.
      expect(Date.parse(rec.completedAt)).toBeLessThanOrEqual(killedAt);
      expect(rec.durationMs).toBe(Date.parse(rec.completedAt) - Date.parse(rec.startedAt));
      // The stream of the interrupted task replays and ends with task.finished.
      const stream = await openStream(`${second.url.replace('http', 'ws')}/tasks/${running}/stream`);
      expect((await stream.closed).code).toBe(1000);
      expect(stream.messages.at(-1)).toMatchObject({ type: 'task.finished', data: { status: 'error', error: { code: 'interrupted' } } });
      expect(stream.messages.map((m) => m.seq)).toEqual(stream.messages.map((_, i) => i + 1));
      // The queued task had not run: it was queued again and ran now.
      await until(async () => (await json(`${second.url}/tasks/${queued}`)).body.status === 'completed');
      expect((await json(`${second.url}/tasks/${queued}`)).body).toMatchObject({ summary: 'ran after restart', usage: { inputTokens: 5 } });
      const usage = (await json(`${second.url}/usage?parentTaskId=T-crash`)).body.totals;
      expect(usage).toMatchObject({ tasks: 2, steps: 2, inputTokens: 338, outputTokens: 34 });
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });
});

describe('SIGTERM', () => {
  it('refuses new work with 503, aborts what is still running as interrupted after the grace, and exits 0 within 15 s', async () => {
    model.script('TERM-LONG', [{ delayMs: 60_000, text: 'never arrives' }]);
    model.script('TERM-QUEUED', [{ text: 'ran after the restart' }]);
    const svc = await startChildService(env);
    const id = (await post(svc, taskBody({ prompt: 'TERM-LONG', context: { parentTaskId: 'T-term', userId: 'u-1' } }))).body.id;
    await until(async () => model.requests.some((r) => JSON.stringify(r.body).includes('TERM-LONG')));
    // A caller waiting on a task that is still queued (one slot, taken) is answered at shutdown.
    const waiting = fetch(`${svc.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ prompt: 'TERM-QUEUED', context: { parentTaskId: 'T-term', userId: 'u-1' } })),
    });
    const waitingResponse = await waiting;
    expect(waitingResponse.status).toBe(200);
    const queuedId = waitingResponse.headers.get('x-task-id');
    expect(waitingResponse.headers.get('location')).toBe(`/tasks/${queuedId}`);
    const sentAt = Date.now();
    svc.child.kill('SIGTERM');
    await until(async () => svc.output().includes('shutting down'));
    const refused = await post(svc, taskBody({ prompt: 'TERM-LATE' }));
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('shutting_down');
    expect((await waitingResponse.json()) as { id: string; status: string }).toMatchObject({ id: queuedId, status: 'queued' });
    const { code } = await svc.exited;
    expect(code).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(15_000);

    const again = await startChildService(env);
    try {
      const task = (await json(`${again.url}/tasks/${id}`)).body;
      // The same ending as after a crash: error / interrupted.
      expect(task).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
      const records = (await json(`${again.url}/usage/records?parentTaskId=T-term`)).body.records;
      expect(records.filter((r: { taskId: string }) => r.taskId === id)).toMatchObject([{ taskId: id, status: 'error' }]);
      // Nothing was left running; the task that was queued is queued again and runs now.
      await until(async () => /"interrupted":0,"requeued":1.*recovered unfinished tasks/.test(again.output()), 10_000);
      await until(async () => (await json(`${again.url}/tasks/${queuedId}`)).body.status === 'completed');
    } finally {
      again.child.kill('SIGKILL');
      await again.exited;
    }
  });
});

describe('the parent stream across a crash', () => {
  it('gives a reconnecting reader every event it missed with ?after=<parentSeq>, task.finished of recovered tasks included', async () => {
    model.script('PARENT-CURSOR-A', [
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 10, output: 1 } },
      { delayMs: 60_000, text: 'never arrives' },
    ]);
    model.script('PARENT-CURSOR-B', [{ toolCalls: [{ name: 'complete', args: { summary: 'b done', paths: [] } }] }]);
    const first = await startChildService(env);
    const ws = (svc: ChildService, query: string) => openStream(`${svc.url.replace('http', 'ws')}/stream?parentTaskId=T-cursor${query}`);
    const reader = await ws(first, '&after=0');
    const a = (await post(first, taskBody({ prompt: 'PARENT-CURSOR-A', context: { parentTaskId: 'T-cursor', userId: 'u-1' } }))).body.id;
    await reader.waitFor((m) => m.taskId === a && m.type === 'step.finished');
    const seen = reader.messages.filter((m) => m.type !== 'heartbeat');
    const cursor = seen.at(-1)!.parentSeq as number;
    expect(seen.map((m) => m.parentSeq)).toEqual(seen.map((_, i) => i + 1));

    first.child.kill('SIGKILL');
    await first.exited;
    await reader.closed;
    const second = await startChildService(env);
    try {
      // A second task of the same parent finishes while nobody listens.
      const b = (await post(second, taskBody({ prompt: 'PARENT-CURSOR-B', context: { parentTaskId: 'T-cursor', userId: 'u-1' } }))).body.id;
      await until(async () => (await json(`${second.url}/tasks/${b}`)).body.status === 'completed');
      const again = await ws(second, `&after=${cursor}`);
      await again.waitFor((m) => m.taskId === b && m.type === 'task.finished');
      const missed = again.messages.filter((m) => m.type !== 'heartbeat');
      expect(missed.map((m) => m.parentSeq)).toEqual(missed.map((_, i) => cursor + i + 1));
      expect(missed.find((m) => m.taskId === a && m.type === 'task.finished')).toMatchObject({ data: { status: 'error', error: { code: 'interrupted' } } });
      expect(missed.filter((m) => m.taskId === b).map((m) => m.type)).toEqual([
        'task.started',
        'step.started',
        'tool.call',
        'tool.result',
        'step.finished',
        'task.finished',
      ]);
      again.socket.close();
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });
});

describe('start-up failures', () => {
  it('a port in use: one clear line, exit 1, and no task touched', async () => {
    model.script('PORT-CLASH', [{ delayMs: 60_000, text: 'never arrives' }]);
    const owner = await startChildService(env);
    const id = (await post(owner, taskBody({ prompt: 'PORT-CLASH', context: { parentTaskId: 'T-port', userId: 'u-1' } }))).body.id;
    owner.child.kill('SIGKILL');
    await owner.exited;
    // The task is left running by the dead process; a start that cannot listen must not recover it.
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const clash = await startChildService({ ...env, PORT: String(port) }, [], { waitReady: false });
      expect((await clash.exited).code).toBe(1);
      expect(clash.output()).toContain(`127.0.0.1:${port} is already in use`);
      expect(clash.output()).not.toMatch(/^\s+at /m);
      expect(clash.output()).not.toContain('recovered unfinished tasks');
    } finally {
      blocker.close();
    }
    const next = await startChildService(env);
    try {
      expect((await json(`${next.url}/tasks/${id}`)).body).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
    } finally {
      next.child.kill('SIGKILL');
      await next.exited;
    }
  });
});
