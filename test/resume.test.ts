import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';
import { openStream } from './support/ws-client';

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-resume-'));
  // RECOVERY_MODE is left at its default: resume.
  env = childEnv(dir, model.url, TEST_API_KEY);
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const kill9 = async (svc: ChildService) => {
  svc.child.kill('SIGKILL');
  await svc.exited;
  // Without the sandbox nothing ties a command to the dead service.
  spawnSync('pkill', ['-f', 'sleep 7272']);
};

describe('RECOVERY_MODE=resume after kill -9', () => {
  it('continues a multi-step task from its last finished step: same id, stream and record, every token billed once', async () => {
    model.script('RESUME-ME', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'write_file', args: { path: 'one.txt', content: 'step one' } }], usage: { input: 100, output: 10 } };
      if (ctx.turn === 1) {
        // The first time, the service is killed while this step's command runs; the step is asked again after the restart.
        return ctx.attempt === 1
          ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 7272' } }], usage: { input: 200, output: 20 } }
          : { toolCalls: [{ name: 'write_file', args: { path: 'two.txt', content: 'step two' } }], usage: { input: 210, output: 21 } };
      }
      return { toolCalls: [{ name: 'complete', args: { summary: 'resumed and done', paths: ['one.txt', 'two.txt'] } }], usage: { input: 300, output: 30 } };
    });
    const first = await startChildService(env);
    const { id } = (
      await json(`${first.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: 'RESUME-ME', context: { parentTaskId: 'T-resume', userId: 'u-1' } })),
      })
    ).body;
    // Step 1 finished and step 2's call was billed: its command is running now.
    await until(async () => {
      const t = (await json(`${first.url}/tasks/${id}`)).body;
      return t.steps === 1 && t.usage.inputTokens === 300;
    });
    await until(async () => spawnSync('pgrep', ['-f', 'sleep 7272']).status === 0);
    const before = (await json(`${first.url}/tasks/${id}`)).body;
    await kill9(first);

    const second = await startChildService(env);
    try {
      // Logged as /healthz turns ready; its line may reach this process's pipe after the answer.
      await until(async () => /"resumed":1/.test(second.output()), 10_000);
      await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status === 'completed');
      const task = (await json(`${second.url}/tasks/${id}`)).body;
      // Steps 1 and 3 ran once, step 2 twice (its first call billed, its tool cut by the kill).
      expect(task).toMatchObject({
        id,
        summary: 'resumed and done',
        steps: 3,
        startedAt: before.startedAt,
        usage: { inputTokens: 100 + 200 + 210 + 300, outputTokens: 10 + 20 + 21 + 30 },
        artifacts: [
          expect.objectContaining({ path: expect.stringMatching(/one\.txt$/) }),
          expect.objectContaining({ path: expect.stringMatching(/two\.txt$/) }),
        ],
      });
      const served = model.served.filter((s) => s.prompt.includes('RESUME-ME'));
      const servedInput = served.reduce((n, s) => n + s.inputTokens, 0);
      expect(task.usage.inputTokens).toBe(servedInput);
      expect(readFileSync(path.join(dir, 'workspaces', 'T-resume', 'two.txt'), 'utf8')).toBe('step two');

      // One record, the same one, with every finished step counted once.
      const records = (await json(`${second.url}/usage/records?parentTaskId=T-resume`)).body.records;
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ taskId: id, status: 'completed', steps: 3, inputTokens: 810 });

      // One stream: seq continues with no gap, task.resumed says where it picked up.
      const stream = await openStream(`${second.url.replace('http', 'ws')}/tasks/${id}/stream`);
      expect((await stream.closed).code).toBe(1000);
      const events = stream.messages.filter((m) => m.type !== 'heartbeat');
      expect(events.map((m) => m.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((m) => m.type === 'task.started')).toHaveLength(1);
      expect(events.filter((m) => m.type === 'task.finished')).toHaveLength(1);
      expect(events.find((m) => m.type === 'task.resumed')!.data).toEqual({ fromStep: 2, attempt: 1, reason: 'restart' });
      expect(events.filter((m) => m.type === 'step.finished').map((m) => m.data.step)).toEqual([1, 2, 3]);

      // The conversation has each finished step once: the cut step left nothing behind.
      const { messages } = (await json(`${second.url}/tasks/${id}/messages`)).body;
      expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool']);
      expect(JSON.stringify(messages)).not.toContain('sleep 7272');

      // The roll-ups written through the crash equal the sums of the raw records.
      for (const q of ['', 'groupBy=user', 'groupBy=parentTask', 'groupBy=day', 'groupBy=model', 'parentTaskId=T-resume&groupBy=day']) {
        const fast = (await json(`${second.url}/usage?${q}`)).body;
        const raw = (await json(`${second.url}/usage?${q}${q ? '&' : ''}source=records`)).body;
        expect(fast).toEqual(raw);
      }
    } finally {
      await kill9(second);
    }
  });

  it('ends a task as interrupted once it has been resumed MAX_RESUMES times', async () => {
    model.script('RESUME-NEVER', [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 7272' } }], usage: { input: 50, output: 5 } }]);
    const limited = { ...env, MAX_RESUMES: '1' };
    let svc = await startChildService(limited);
    const { id } = (
      await json(`${svc.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: 'RESUME-NEVER', context: { parentTaskId: 'T-resume-2', userId: 'u-1' } })),
      })
    ).body;
    for (let round = 0; round < 2; round++) {
      await until(async () => spawnSync('pgrep', ['-f', 'sleep 7272']).status === 0);
      await kill9(svc);
      svc = await startChildService(limited);
    }
    try {
      const task = (await json(`${svc.url}/tasks/${id}`)).body;
      expect(task).toMatchObject({ status: 'error', error: { code: 'interrupted' }, usage: { inputTokens: 100 } });
      expect(task.error.message).toMatch(/1 resumes/);
    } finally {
      await kill9(svc);
    }
  });

  it('hands a running task over on SIGTERM: the next start resumes it instead of ending it interrupted', async () => {
    model.script('RESUME-TERM', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 40, output: 4 } };
      return ctx.attempt === 1
        ? { delayMs: 60_000, text: 'never arrives' }
        : { toolCalls: [{ name: 'complete', args: { summary: 'finished by the next process', paths: [] } }], usage: { input: 60, output: 6 } };
    });
    const svc = await startChildService(env);
    const { id } = (
      await json(`${svc.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: 'RESUME-TERM', context: { parentTaskId: 'T-resume-3', userId: 'u-1' } })),
      })
    ).body;
    await until(async () => model.requests.filter((r) => JSON.stringify(r.body.messages).includes('RESUME-TERM')).length === 2);
    svc.child.kill('SIGTERM');
    expect((await svc.exited).code).toBe(0);
    expect(svc.output()).toContain('task left running for the next start to resume');

    const next = await startChildService(env);
    try {
      await until(async () => (await json(`${next.url}/tasks/${id}`)).body.status === 'completed');
      const task = (await json(`${next.url}/tasks/${id}`)).body;
      expect(task).toMatchObject({ summary: 'finished by the next process', steps: 2, usage: { inputTokens: 100, outputTokens: 10 } });
      const records = (await json(`${next.url}/usage/records?parentTaskId=T-resume-3`)).body.records;
      expect(records).toMatchObject([{ taskId: id, status: 'completed', steps: 2, inputTokens: 100 }]);
      const stream = await openStream(`${next.url.replace('http', 'ws')}/tasks/${id}/stream`);
      await stream.closed;
      const types = stream.messages.filter((m) => m.type !== 'heartbeat').map((m) => m.type);
      expect(types.filter((t) => t === 'task.resumed')).toHaveLength(1);
      expect(types.at(-1)).toBe('task.finished');
    } finally {
      await kill9(next);
    }
  });

  it('resumes a replay killed mid-way where it was in the record: no recorded call runs, none is answered twice', async () => {
    let hung = false;
    model.script('RESUME-REPLAY', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> log.txt' } }], usage: { input: 10, output: 1 } };
      // The replay's second step hangs the first time: the service is killed while it waits, and
      // the step is made again after the restart, its call the record's second.
      if (ctx.turn === 1 && ctx.model === 'replay-model' && !hung) {
        hung = true;
        return { delayMs: 60_000, text: 'never arrives' };
      }
      if (ctx.turn === 1) return { toolCalls: [{ name: 'write_file', args: { path: 'notes.md', content: 'notes' } }], usage: { input: 20, output: 2 } };
      return { toolCalls: [{ name: 'complete', args: { summary: 'notes written', paths: ['notes.md'] } }], usage: { input: 30, output: 3 } };
    });
    const post = (svc: ChildService, route: string, body: unknown) =>
      json(`${svc.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const first = await startChildService(env);
    const original = (await post(first, '/tasks?wait=true', taskBody({ prompt: 'RESUME-REPLAY', context: { parentTaskId: 'T-resume-4', userId: 'u-1' } })))
      .body;
    expect(original.status).toBe('completed');
    const replay = (await post(first, `/tasks/${original.id}/replay`, { model: 'replay-model' })).body;
    await until(async () => hung && (await json(`${first.url}/tasks/${replay.id}`)).body.steps === 1);
    await kill9(first);

    const next = await startChildService(env);
    try {
      await until(async () => (await json(`${next.url}/tasks/${replay.id}`)).body.status === 'completed');
      const task = (await json(`${next.url}/tasks/${replay.id}`)).body;
      expect(task).toMatchObject({ summary: 'notes written', replayOf: original.id, replay: { divergedAtStep: null, comparison: { sameSummary: true } } });
      const stream = await openStream(`${next.url.replace('http', 'ws')}/tasks/${replay.id}/stream`);
      await stream.closed;
      const types = stream.messages.map((m) => m.type);
      expect(types.filter((t) => t === 'tool.replayed')).toHaveLength(2);
      expect(types).not.toContain('replay.diverged');
      expect(types).toContain('task.resumed');
      // The command ran once, in the original's run.
      expect(readFileSync(path.join(dir, 'workspaces', 'T-resume-4', 'log.txt'), 'utf8')).toBe('ran\n');
    } finally {
      await kill9(next);
    }
  });
});
