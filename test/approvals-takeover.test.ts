import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
const run = ownClustersRun('approvals-takeover test');

/** What the model reads of an approved call whose run was cut after it started. */
const INTERRUPTED = /interrupted \(the service restarted or the task moved to another instance\) after it started; its effects are unknown/;

describe.skipIf(!run)('an approved call whose owner is paused past its lease while it runs', () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  const instances: ChildService[] = [];

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'approved');
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-approved-takeover-'));
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
      DATABASE_URL: cluster.urlOf('approved'),
      INSTANCE_ID: name,
      TASK_LEASE_MS: '3000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
    instances.push(svc);
    return svc;
  }

  it('runs the command once in all: the instance that takes the task over tells the model it was interrupted', async () => {
    model.script('APPROVED-TAKEOVER', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'bash', args: { command: 'echo x >> ran.txt; sleep 5' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'checked the workspace', paths: [] } }] },
    );
    /** Who was asked for the step after the approved call, and what it read of that call. */
    const after = () =>
      model.requests
        .filter((r) => JSON.stringify(r.body.messages).includes('APPROVED-TAKEOVER'))
        .filter((r) => r.body.messages.some((m) => m.role === 'tool'))
        .map((r) => ({ authorization: r.authorization, seen: String(r.body.messages.find((m) => m.role === 'tool')?.content) }));
    const a = await instance('a');
    const created = await json(`${a.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({ prompt: 'APPROVED-TAKEOVER', context: { parentTaskId: 'T-approved', userId: 'u' }, options: { permissions: { bash: 'ask' } } }),
      ),
    });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    await until(async () => (await json(`${a.url}/tasks/${id}`)).body.status === 'paused');
    const { requestId } = (await json(`${a.url}/tasks/${id}`)).body.pause;
    const allowed = await json(`${a.url}/tasks/${id}/approvals/${requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'allow' }),
    });
    expect(allowed.status).toBe(200);

    // a runs the approved command (its first line is written; it sleeps on), and is paused there.
    const ranTxt = path.join(dir, 'workspaces', 'T-approved', 'ran.txt');
    await until(async () => existsSync(ranTxt) && readFileSync(ranTxt, 'utf8') === 'x\n');
    a.child.kill('SIGSTOP');

    // b takes the task over once a's lease ran out, and goes on without running the call again.
    const b = await instance('b');
    await until(async () => (await json(`${b.url}/tasks/${id}`)).body.status === 'completed', 60_000);
    expect(readFileSync(ranTxt, 'utf8')).toBe('x\n');
    expect(after()).toEqual([{ authorization: 'Bearer key-b', seen: expect.stringMatching(INTERRUPTED) }]);

    // a wakes up, its command ends, and it finds the task taken over: nothing more of it runs or is written.
    a.child.kill('SIGCONT');
    await until(async () => a.output().includes('taken over by another instance'), 30_000);
    expect(readFileSync(ranTxt, 'utf8')).toBe('x\n');
    const task = (await json(`${b.url}/tasks/${id}`)).body;
    expect(task).toMatchObject({ status: 'completed', summary: 'checked the workspace' });
    const { messages } = (await json(`${b.url}/tasks/${id}/messages`)).body;
    const results = messages.filter((m: { role: string }) => m.role === 'tool').flatMap((m: { content: unknown[] }) => m.content);
    expect(results.map((r: { toolName: string }) => r.toolName)).toEqual(['bash', 'complete']);
    expect(results[0].output).toMatchObject({ type: 'error-text', value: expect.stringMatching(INTERRUPTED) });
    expect(after()).toHaveLength(1);
  }, 90_000);
});
