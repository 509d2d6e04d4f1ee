import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';
import { openStream, range, seqsOf } from './support/ws-client';

// Three instances on one database of a cluster of its own (one is killed under its tasks): run
// once, in the SQLite pass of the suite, wherever PostgreSQL is installed.
const run = ownClustersRun('cluster test');

const TASKS = 9;
const post = (svc: ChildService, body: unknown) =>
  json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe.skipIf(!run)('three instances on one PostgreSQL database', () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  let db: pg.Client;
  const instances: Record<'a' | 'b' | 'c', ChildService | null> = { a: null, b: null, c: null };

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'cluster');
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-cluster-'));
    // One workspace folder for all (the shared volume), one database; each instance its own name.
    const { DATABASE_PATH: _unused, ...shared } = childEnv(dir, model.url, TEST_API_KEY);
    for (const name of ['a', 'b', 'c'] as const) {
      instances[name] = await startChildService({
        ...shared,
        DATABASE_URL: cluster.urlOf('cluster'),
        INSTANCE_ID: name,
        TASK_LEASE_MS: '3000',
        MAX_CONCURRENT_TASKS: '3',
        // A tenant's quota holds across the cluster: here it may use every slot of the three.
        MAX_CONCURRENT_PER_TENANT: '9',
        // The test polls the instances far faster than a client would.
        RATE_LIMIT_PER_MINUTE: '100000',
      });
    }
    db = new pg.Client({ connectionString: cluster.urlOf('cluster') });
    await db.connect();
  }, 90_000);
  afterAll(async () => {
    for (const svc of Object.values(instances)) {
      svc?.child.kill('SIGKILL');
      await svc?.exited;
    }
    await db?.end();
    await model?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const ownerOf = async (id: string) => (await db.query('SELECT owner FROM tasks WHERE id = $1', [id])).rows[0]?.owner as string | null;

  it('runs tasks submitted round-robin exactly once, bills every token once after an instance is killed, and streams them from any instance', async () => {
    model.script('CLUSTER', (ctx) => {
      const n = /CLUSTER-(\d+)/.exec(ctx.messages.map((m) => JSON.stringify(m.content)).join(' '))![1];
      if (ctx.turn === 0)
        return { toolCalls: [{ name: 'write_file', args: { path: `t${n}/one.txt`, content: `task ${n}` } }], usage: { input: 100 + Number(n), output: 10 } };
      if (ctx.turn === 1) {
        // The first time, a command long enough for an instance to be killed under it.
        return ctx.attempt === 1
          ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 5' } }], usage: { input: 200, output: 20 } }
          : { toolCalls: [{ name: 'write_file', args: { path: `t${n}/two.txt`, content: 'again' } }], usage: { input: 210, output: 21 } };
      }
      return { toolCalls: [{ name: 'complete', args: { summary: `done ${n}`, paths: [`t${n}/one.txt`] } }], usage: { input: 300, output: 30 } };
    });
    const { a, b, c } = instances as Record<'a' | 'b' | 'c', ChildService>;
    const round = [a, b, c];
    const ids: string[] = [];
    for (let n = 0; n < TASKS; n++) {
      const res = await post(round[n % 3], taskBody({ prompt: `CLUSTER-${n}`, context: { parentTaskId: 'T-cluster', userId: `u-${n % 2}` } }));
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    // A reader on A of the whole parent, and of one task B runs.
    const parent = await openStream(`${a.url.replace('http', 'ws')}/stream?parentTaskId=T-cluster&after=0`);
    await until(async () => (await Promise.all(ids.map(ownerOf))).every((o) => o !== null), 15_000);
    const owners = await Promise.all(ids.map(ownerOf));
    const onB = ids[owners.indexOf('b')];
    expect(onB).toBeDefined();
    const taskStream = await openStream(`${a.url.replace('http', 'ws')}/tasks/${onB}/stream`);

    // Every task is in its first step's command; C is killed under its own.
    await until(async () => {
      const rows = await Promise.all(ids.map(async (id) => (await json(`${a.url}/tasks/${id}`)).body));
      return rows.every((t) => t.steps === 1 && t.usage.inputTokens >= 300);
    }, 15_000);
    // Asked on A, a task B runs says what it is doing (as B stored it with its lease), not only when it started.
    await until(async () => {
      const progress = (await json(`${a.url}/tasks/${onB}`)).body.progress;
      return progress?.phase === 'tool' && progress.tool === 'bash';
    }, 3_000);
    const onC = ids.filter((_, i) => owners[i] === 'c');
    expect(onC.length).toBeGreaterThan(0);
    c.child.kill('SIGKILL');
    await c.exited;
    instances.c = null;

    // A and B take C's tasks over once their leases expire; every task completes, once.
    await until(async () => {
      const rows = await Promise.all(ids.map(async (id) => (await json(`${round[ids.indexOf(id) % 2].url}/tasks/${id}`)).body));
      return rows.every((t) => t.status === 'completed');
    }, 30_000);
    for (const [i, id] of ids.entries()) {
      const task = (await json(`${a.url}/tasks/${id}`)).body;
      const taken = onC.includes(id);
      expect(task).toMatchObject({ status: 'completed', summary: `done ${i}` });
      expect(Number((await db.query('SELECT resumes FROM tasks WHERE id = $1', [id])).rows[0].resumes)).toBe(taken ? 1 : 0);
      expect(task.artifacts.map((f: { path: string }) => f.path)).toEqual([path.join(dir, 'workspaces', 'T-cluster', `t${i}/one.txt`)]);
      // Billing: exactly what the provider served for this task, each call once.
      const served = model.served.filter((s) => s.prompt === `CLUSTER-${i}`);
      expect(served.map((s) => s.turn)).toEqual(taken ? [0, 1, 1, 2] : [0, 1, 2]);
      expect(task.usage.inputTokens).toBe(served.reduce((sum, s) => sum + s.inputTokens, 0));
      const records = (await json(`${b.url}/usage/records?parentTaskId=T-cluster`)).body.records.filter((r: { taskId: string }) => r.taskId === id);
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ status: 'completed', inputTokens: task.usage.inputTokens });
      // One end, one stream: its events numbered 1..n with a single task.finished.
      const events = (await db.query('SELECT type FROM task_events WHERE task_id = $1 ORDER BY seq', [id])).rows.map((r) => r.type);
      expect(events.filter((t) => t === 'task.finished')).toHaveLength(1);
      expect(events.at(-1)).toBe('task.finished');
      expect(events.filter((t) => t === 'task.resumed')).toHaveLength(taken ? 1 : 0);
    }
    expect(existsSync(path.join(dir, 'workspaces', 'T-cluster', 't0', 'one.txt'))).toBe(true);
    expect(readFileSync(path.join(dir, 'workspaces', 'T-cluster', 't0', 'one.txt'), 'utf8')).toBe('task 0');
    const totals = (await json(`${a.url}/usage?parentTaskId=T-cluster`)).body.totals;
    expect(totals.inputTokens).toBe(model.served.filter((s) => s.prompt.startsWith('CLUSTER-')).reduce((sum, s) => sum + s.inputTokens, 0));

    // The reader on A saw B's task live, gap-free, to its end; the parent reader every event of all.
    await taskStream.waitFor((m) => m.type === 'task.finished', 10_000);
    const stored = (await db.query('SELECT count(*)::int AS n FROM task_events WHERE task_id = $1', [onB])).rows[0].n as number;
    expect(seqsOf(taskStream.messages, onB)).toEqual(range(1, stored));
    const all = (await db.query(`SELECT count(*)::int AS n FROM task_events WHERE parent_key = 'T-cluster@default'`)).rows[0].n as number;
    await until(async () => parent.messages.filter((m) => m.type !== 'heartbeat').length >= all, 10_000);
    expect(parent.messages.filter((m) => m.type !== 'heartbeat').map((m) => m.parentSeq)).toEqual(range(1, all));
    parent.socket.close();
    taskStream.socket.close();
  }, 90_000);

  it('cancels and steers a task wherever it runs', async () => {
    model.script('FAR-AWAY', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 1' } }], usage: { input: 7, output: 1 } }
        : { delayMs: 60_000, text: 'never arrives' },
    );
    const { a, b } = instances as Record<'a' | 'b', ChildService>;
    const id = (await post(b, taskBody({ prompt: 'FAR-AWAY', context: { parentTaskId: 'T-far', userId: 'u-1' } }))).body.id;
    // Whichever instance claimed it, the other one is asked.
    await until(async () => (await ownerOf(id)) !== null);
    const other = (await ownerOf(id)) === 'a' ? b : a;
    // A steering message sent to the other instance reaches the model at the next step.
    expect(
      (
        await json(`${other.url}/tasks/${id}/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ prompt: 'STEERED-ELSEWHERE' }),
        })
      ).status,
    ).toBe(202);
    await until(async () => model.requests.some((r) => JSON.stringify(r.body).includes('STEERED-ELSEWHERE')), 10_000);
    const cancelled = await json(`${other.url}/tasks/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(202);
    await until(async () => (await json(`${other.url}/tasks/${id}`)).body.status === 'aborted', 10_000);
    expect((await json(`${a.url}/tasks/${id}`)).body).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
  }, 30_000);
  it('takes the answers to an approval and a tool result on an instance that did not run the task, and the cluster runs the call', async () => {
    model.script('FAR-ASK', [
      {
        toolCalls: [
          { name: 'bash', args: { command: 'echo far > asked-far.txt' } },
          { name: 'lookup', args: { key: 'k' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'answered elsewhere', paths: [] } }] },
    ]);
    const a = instances.a ?? instances.b!;
    const lookup = { name: 'lookup', description: 'Looks a key up in the caller', inputSchema: { type: 'object', properties: { key: { type: 'string' } } } };
    const options = { permissions: { bash: 'ask' }, clientTools: [lookup] };
    const body = taskBody({ prompt: 'FAR-ASK', context: { parentTaskId: 'T-far-ask', userId: 'u-1' }, options });
    const id = (await post(a, body)).body.id;
    await until(async () => (await json(`${a.url}/tasks/${id}`)).body.status === 'paused', 15_000);
    const requestId = (await json(`${a.url}/tasks/${id}`)).body.pause.requestId as string;
    // The instance that ran it logged its start; another one takes the answer.
    const live = (['a', 'b', 'c'] as const).filter((n) => instances[n] !== null);
    const ranOn = live.find((n) => instances[n]!.output().includes(id))!;
    const other = instances[live.find((n) => n !== ranOn)!]!;
    const answer = await json(`${other.url}/tasks/${id}/approvals/${requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'allow' }),
    });
    expect(answer.status).toBe(200);
    const toolRequest = (answer.body.pause.pending as Array<{ kind: string; requestId: string }>).find((p) => p.kind === 'tool')!;
    const result = await json(`${other.url}/tasks/${id}/tool-results/${toolRequest.requestId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ output: 'FAR-VALUE' }),
    });
    expect(result.status).toBe(200);
    await until(async () => (await json(`${other.url}/tasks/${id}`)).body.status === 'completed', 15_000);
    expect(model.requests.some((r) => JSON.stringify(r.body.messages).includes('FAR-VALUE'))).toBe(true);
    expect(readFileSync(path.join(dir, 'workspaces', 'T-far-ask', 'asked-far.txt'), 'utf8')).toBe('far\n');
  }, 40_000);

  it('stops a task whose lease another instance took, writes nothing more of it there, and completes it once elsewhere', async () => {
    model.script('STOLEN', (ctx) =>
      ctx.attempt === 1
        ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 12; echo late' } }], usage: { input: 40, output: 4 } }
        : { toolCalls: [{ name: 'complete', args: { summary: 'finished elsewhere', paths: [] } }], usage: { input: 50, output: 5 } },
    );
    const { a } = instances as Record<'a', ChildService>;
    const id = (await post(a, taskBody({ prompt: 'STOLEN', context: { parentTaskId: 'T-stolen', userId: 'u-1' } }))).body.id;
    await until(async () => (await db.query(`SELECT count(*)::int AS n FROM task_events WHERE task_id = $1 AND type = 'tool.call'`, [id])).rows[0].n === 1);
    const thief = (await ownerOf(id)) === 'a' ? 'b' : 'a';
    const victim = thief === 'a' ? 'b' : 'a';
    // As if the owner had been cut off from the database longer than its lease: an instance that
    // no longer exists took the task, and its own lease runs out in two seconds.
    await db.query('UPDATE tasks SET owner = $1, lease_until = $2 WHERE id = $3', ['gone', Date.now() + 2000, id]);
    await until(async () => (instances[victim] as ChildService).output().includes('task taken over by another instance'), 10_000);
    await until(async () => (await json(`${a.url}/tasks/${id}`)).body.status === 'completed', 20_000);
    const task = (await json(`${a.url}/tasks/${id}`)).body;
    expect(task).toMatchObject({ status: 'completed', summary: 'finished elsewhere', steps: 1 });
    const events = (await db.query('SELECT type FROM task_events WHERE task_id = $1 ORDER BY seq', [id])).rows.map((r) => r.type);
    // The stopped command's result was not written by the instance that lost the task.
    expect(events.filter((t) => t === 'tool.result')).toHaveLength(1);
    expect(events.filter((t) => t === 'task.finished')).toHaveLength(1);
    expect(events.filter((t) => t === 'task.resumed')).toHaveLength(1);
    expect(task.usage.inputTokens).toBe(90);
  }, 40_000);

  it('answers ?wait=true with the end of a task another instance ran', async () => {
    model.script('WAITED', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 2' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'waited for', paths: [] } }] },
    );
    const { a } = instances as Record<'a', ChildService>;
    // Six at once on an instance with three slots: the others take what it cannot run.
    const answers = Array.from({ length: 6 }, (_, n) =>
      json(`${a.url}/tasks?wait=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: `WAITED-${n}`, context: { parentTaskId: 'T-waited', userId: 'u-1' } })),
      }),
    );
    const owners = new Set<string>();
    await until(async () => {
      const rows = (await db.query(`SELECT owner FROM tasks WHERE parent_task_id = 'T-waited' AND owner IS NOT NULL`)).rows;
      for (const r of rows) owners.add(r.owner as string);
      return owners.size > 1;
    }, 15_000);
    const ended = await Promise.all(answers);
    expect(ended.map((r) => [r.status, r.body.status, r.body.summary])).toEqual(Array(6).fill([200, 'completed', 'waited for']));
  }, 40_000);
});
