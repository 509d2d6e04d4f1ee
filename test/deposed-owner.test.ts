import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';

// Two instances on a cluster of its own, one paused past its lease: run once, in the SQLite pass
// of the suite, wherever PostgreSQL is installed.
const run = ownClustersRun('deposed-owner test');

describe.skipIf(!run)('an owner paused past its lease (a VM stopped, then woken)', () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  const instances: ChildService[] = [];

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'deposed');
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-deposed-'));
  }, 60_000);
  afterAll(async () => {
    for (const svc of instances) {
      svc.child.kill('SIGCONT');
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    await model?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An instance whose model calls carry its own key, so the scripted model tells them apart. */
  async function instance(name: string) {
    const { DATABASE_PATH: _unused, ...env } = childEnv(dir, model.url, `key-${name}`);
    const svc = await startChildService({
      ...env,
      DATABASE_URL: cluster.urlOf('deposed'),
      INSTANCE_ID: name,
      TASK_LEASE_MS: '3000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    instances.push(svc);
    return svc;
  }
  /** The turns of `prompt`'s task that instance `name` asked the model. */
  const callsOf = (name: string, prompt = 'DEPOSED') =>
    model.requests
      .filter((r) => r.authorization === `Bearer key-${name}` && JSON.stringify(r.body.messages).includes(prompt))
      .map((r) => r.body.messages.filter((m) => m.role === 'assistant').length);
  /** Starts `prompt`'s task on `svc` and pauses `svc` (SIGSTOP) once its second model call is in flight; the task's id. */
  async function pausedInSecondCall(svc: ChildService, prompt: string, name: string): Promise<string> {
    const created = await json(`${svc.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ prompt, context: { parentTaskId: `T-${prompt.toLowerCase()}`, userId: 'u' } })),
    });
    await until(async () => callsOf(name, prompt).includes(1));
    svc.child.kill('SIGSTOP');
    return created.body.id as string;
  }

  it('starts no model call and no tool once another instance took its task over', async () => {
    model.script('DEPOSED', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo started' } }], usage: { input: 10, output: 1 } };
      // Answered after 4 s: a's call is in flight while it is paused.
      if (ctx.turn === 1)
        return { toolCalls: [{ name: 'bash', args: { command: 'echo turn1 >> turn1.log' } }], usage: { input: 20, output: 2 }, delayMs: 4000 };
      if (ctx.turn === 2) return { toolCalls: [{ name: 'bash', args: { command: 'echo turn2 >> turn2.log' } }], usage: { input: 30, output: 3 } };
      return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 40, output: 4 } };
    });
    const a = await instance('a');
    // a's second model call is in flight; a is paused there, past its lease.
    const id = await pausedInSecondCall(a, 'DEPOSED', 'a');
    // b takes the task over (the lease ran out) and resumes it from its last finished step.
    const b = await instance('b');
    // (A process start, a lease of 3 s and a 4 s model call: a busy machine needs far more than 10 s.)
    await until(async () => (await json(`${b.url}/tasks/${id}`)).body.status === 'completed', 60_000);
    // a wakes up once b has finished the task, and gets the answer of its call.
    a.child.kill('SIGCONT');
    // a has read the answer by now (its lease lost, it asks the database before the tools).
    await until(async () => (await json(`${a.url}/healthz`)).status === 200);
    await new Promise((r) => setTimeout(r, 1500));
    const ws = path.join(dir, 'workspaces', 'T-deposed');
    // a's last call (turn 1) was in flight when it was paused; nothing after it came from a.
    expect(callsOf('a')).toEqual([0, 1]);
    expect(callsOf('b')).toEqual([1, 2, 3]);
    expect(readFileSync(path.join(ws, 'turn1.log'), 'utf8')).toBe('turn1\n');
    expect(readFileSync(path.join(ws, 'turn2.log'), 'utf8')).toBe('turn2\n');
    const task = (await json(`${b.url}/tasks/${id}`)).body;
    expect(task).toMatchObject({ status: 'completed', summary: 'done' });
    // Billed: every call the provider served, a's in-flight one included (it arrived late).
    const served = model.served.filter((s) => s.prompt === 'DEPOSED').reduce((sum, s) => sum + s.inputTokens, 0);
    await until(async () => (await json(`${b.url}/tasks/${id}`)).body.usage.inputTokens === served);
  }, 90_000);

  it('reads an answer still on its way when it wakes to its end and bills it, even told to shut down meanwhile', async () => {
    // Turn 1 as a first asks it is answered 12 s after the question: still on its way when it wakes.
    model.script('WOKEN', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo started' } }], usage: { input: 10, output: 1 } };
      if (ctx.turn === 1)
        return { toolCalls: [{ name: 'bash', args: { command: 'echo turn1' } }], usage: { input: 20, output: 2 }, delayMs: ctx.attempt === 1 ? 12_000 : 0 };
      return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 40, output: 4 } };
    });
    // Only c and d share the database from here: another instance would take the task over first.
    for (const svc of instances.splice(0)) {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
    const c = await instance('c');
    const id = await pausedInSecondCall(c, 'WOKEN', 'c');
    // d takes the task over and asks turn 1 again; c wakes then, its answer still coming.
    const d = await instance('d');
    await until(async () => callsOf('d', 'WOKEN').includes(1), 60_000);
    c.child.kill('SIGCONT');
    // c learns it lost the task, then is stopped (SIGTERM) while it reads the answer on: its
    // shutdown waits for the answer and its bill.
    await until(async () => c.output().includes("the task's lease was lost"), 30_000);
    c.child.kill('SIGTERM');
    expect(await c.exited).toEqual({ code: 0, signal: null });
    await until(async () => (await json(`${d.url}/tasks/${id}`)).body.status === 'completed', 60_000);
    // c, its lease lost, read its answer to the end instead of cutting it: the provider served it...
    const woken = () => model.served.filter((s) => s.prompt === 'WOKEN');
    await until(async () => woken().some((s) => s.turn === 1 && s.authorization === 'Bearer key-c'), 30_000);
    // ...and every call served, c's late one included, is billed once.
    const served = () => woken().reduce((sum, s) => sum + s.inputTokens, 0);
    await until(async () => (await json(`${d.url}/tasks/${id}`)).body.usage.inputTokens === served());
    expect(
      woken()
        .map((s) => `${s.turn} ${s.authorization?.slice(-1)}`)
        .sort(),
    ).toEqual(['0 c', '1 c', '1 d', '2 d']);
  }, 120_000);
});
