import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';
import { openStream } from './support/ws-client';

/** What the model reads of an approved call a crash cut after it started. */
const INTERRUPTED = /interrupted \(the service restarted or the task moved to another instance\) after it started; its effects are unknown/;

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
const services: ChildService[] = [];
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-approved-cut-'));
  env = childEnv(dir, model.url, TEST_API_KEY);
});
// One process at a time on the database: each test's last one is stopped after it.
afterEach(async () => {
  for (const svc of services.splice(0)) {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<ChildService> {
  const svc = await startChildService(env);
  services.push(svc);
  return svc;
}

describe('an approved call cut by a crash', () => {
  it('is not run again by the next process: the model reads that it was interrupted, and the task finishes', async () => {
    /** What the model read back for its approved call, once the task went on. */
    let seen: string | null = null;
    model.script('APPROVED-CUT', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo x >> ran.txt; sleep 5' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'checked the workspace', paths: [] } }] };
    });
    const first = await start();
    const created = await json(`${first.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({ prompt: 'APPROVED-CUT', context: { parentTaskId: 'T-approved-cut', userId: 'u' }, options: { permissions: { bash: 'ask' } } }),
      ),
    });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    await until(async () => (await json(`${first.url}/tasks/${id}`)).body.status === 'paused');
    const { requestId } = (await json(`${first.url}/tasks/${id}`)).body.pause;
    const allowed = await json(`${first.url}/tasks/${id}/approvals/${requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'allow' }),
    });
    expect(allowed.status).toBe(200);

    // The approved command has started (its first line is written; it sleeps on): the process dies.
    const ranTxt = path.join(dir, 'workspaces', 'T-approved-cut', 'ran.txt');
    await until(async () => existsSync(ranTxt) && readFileSync(ranTxt, 'utf8') === 'x\n');
    first.child.kill('SIGKILL');
    await first.exited;

    // The next process resumes the task: the call is not run a second time.
    const second = await start();
    await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status === 'completed', 30_000);
    expect((await json(`${second.url}/tasks/${id}`)).body).toMatchObject({ status: 'completed', summary: 'checked the workspace' });
    expect(readFileSync(ranTxt, 'utf8')).toBe('x\n');
    expect(seen).toMatch(INTERRUPTED);

    // The transcript and the stream say so too: the call's result is that tool error.
    const { messages } = (await json(`${second.url}/tasks/${id}/messages`)).body;
    const results = messages.filter((m: { role: string }) => m.role === 'tool').flatMap((m: { content: unknown[] }) => m.content);
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({ toolName: 'bash', output: { type: 'error-text' } });
    expect(results[0].output.value).toMatch(INTERRUPTED);
    const stream = await openStream(`${second.url.replace('http', 'ws')}/tasks/${id}/stream`);
    await stream.closed;
    const types = stream.messages.filter((m) => m.type !== 'heartbeat').map((m) => m.type);
    expect(types.filter((t) => ['approval.answered', 'task.resumed', 'tool.result', 'task.finished'].includes(t))).toEqual([
      'approval.answered',
      'task.resumed',
      'task.resumed',
      'tool.result',
      'tool.result',
      'task.finished',
    ]);
    const cut = stream.messages.find((m) => m.type === 'tool.result' && (m.data as { toolName: string }).toolName === 'bash');
    expect(cut?.data).toMatchObject({ isError: true });
    expect(String((cut?.data as { output: unknown }).output)).toMatch(INTERRUPTED);
  });

  it('is not run again after a SIGTERM that stopped it: the next start tells the model it was interrupted', async () => {
    let seen: string | null = null;
    model.script('APPROVED-TERM', (ctx) => {
      // Longer than the shutdown's grace period: the service stops it and leaves the task running.
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo x >> term.txt; sleep 30' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'checked after the restart', paths: [] } }] };
    });
    const first = await start();
    const created = await json(`${first.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({ prompt: 'APPROVED-TERM', context: { parentTaskId: 'T-approved-term', userId: 'u' }, options: { permissions: { bash: 'ask' } } }),
      ),
    });
    const id = created.body.id as string;
    await until(async () => (await json(`${first.url}/tasks/${id}`)).body.status === 'paused');
    const { requestId } = (await json(`${first.url}/tasks/${id}`)).body.pause;
    await json(`${first.url}/tasks/${id}/approvals/${requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'allow' }),
    });
    const termTxt = path.join(dir, 'workspaces', 'T-approved-term', 'term.txt');
    await until(async () => existsSync(termTxt) && readFileSync(termTxt, 'utf8') === 'x\n');
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const second = await start();
    await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status !== 'running', 30_000);
    expect((await json(`${second.url}/tasks/${id}`)).body).toMatchObject({ status: 'completed', summary: 'checked after the restart' });
    expect(readFileSync(termTxt, 'utf8')).toBe('x\n');
    expect(seen).toMatch(INTERRUPTED);
  });
});

// Network questions need the sandbox's network namespace (see network.test.ts).
const bwrap = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true']).status === 0;

describe.skipIf(!bwrap)('an approved call cut while its command waits for a network answer (bwrap)', () => {
  it('is not run again by the next process: the model reads that it was interrupted', async () => {
    const netDir = mkdtempSync(path.join(tmpdir(), 'subagentd-approved-net-'));
    try {
      mkdirSync(path.join(netDir, 'agents'));
      writeFileSync(
        path.join(netDir, 'agents', 'asks-net.md'),
        [
          '---',
          'name: asks-net',
          'description: asks before commands and hosts',
          'permissions:',
          '  bash: ask',
          'network:',
          '  allow: []',
          '  ask: true',
          '---',
          '',
        ].join('\n'),
      );
      const netEnv = { ...childEnv(netDir, model.url, TEST_API_KEY), BASH_SANDBOX: 'bwrap', EGRESS_ALLOW_PRIVATE: 'true' };
      let seen: string | null = null;
      model.script('APPROVED-NET', (ctx) => {
        if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo x >> net.txt; curl -sS -m 30 http://127.0.0.2:9/' } }] };
        seen = ctx.toolResults[0]?.content ?? '';
        return { toolCalls: [{ name: 'complete', args: { summary: 'checked the workspace', paths: [] } }] };
      });
      const first = await startChildService(netEnv);
      services.push(first);
      const created = await json(`${first.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ subagent_type: 'asks-net', prompt: 'APPROVED-NET', context: { parentTaskId: 'T-approved-net', userId: 'u' } })),
      });
      const id = created.body.id as string;
      await until(async () => (await json(`${first.url}/tasks/${id}`)).body.status === 'paused');
      const { requestId } = (await json(`${first.url}/tasks/${id}`)).body.pause;
      await json(`${first.url}/tasks/${id}/approvals/${requestId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'allow' }),
      });
      // The approved command runs and asks to reach a host: the process dies while it waits.
      await until(async () => (await json(`${first.url}/tasks/${id}`)).body.progress?.pending?.[0]?.toolName === 'network');
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await startChildService(netEnv);
      services.push(second);
      await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status !== 'running', 30_000);
      expect((await json(`${second.url}/tasks/${id}`)).body).toMatchObject({ status: 'completed', summary: 'checked the workspace' });
      expect(readFileSync(path.join(netDir, 'workspaces', 'T-approved-net', 'net.txt'), 'utf8')).toBe('x\n');
      expect(seen).toMatch(INTERRUPTED);
    } finally {
      for (const svc of services.splice(0)) {
        svc.child.kill('SIGKILL');
        await svc.exited;
      }
      rmSync(netDir, { recursive: true, force: true });
    }
  });
});
