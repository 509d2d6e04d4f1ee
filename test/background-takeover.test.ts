import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';

// Two instances on a cluster of its own, the first killed: run once, in the SQLite pass of the
// suite, wherever PostgreSQL is installed.
const run = ownClustersRun('background-takeover test');

describe.skipIf(!run)("a lead's instance killed while its background children run", () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  const instances: ChildService[] = [];

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'background');
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bg-takeover-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Runs subagents at once\nmaxDepth: 1\nbackground: true\n---\nDelegate.\n');
  }, 60_000);
  afterAll(async () => {
    for (const svc of instances) {
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
    const svc = await startChildService({ ...env, DATABASE_URL: cluster.urlOf('background'), INSTANCE_ID: name, TASK_LEASE_MS: '3000' });
    instances.push(svc);
    return svc;
  }
  const asked = (marker: string) => model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));

  it('is taken over with its children by the other instance: none is started twice, each ends once', async () => {
    const parts = ['A', 'B', 'C'];
    model.script('BGT-LEAD', (ctx) => {
      if (ctx.turn === 0) {
        return {
          toolCalls: parts.map((x) => ({ name: 'task', args: { subagent_type: 'general', description: `Part ${x}`, prompt: `BGT-${x}` } })),
        };
      }
      const waits = ctx.messages.filter((m) => m.role === 'tool' && String(m.content).includes('"finished"'));
      const done = waits.flatMap((m) => (JSON.parse(String(m.content)).finished as Array<{ summary: string }>).map((f) => f.summary));
      return done.length < parts.length
        ? { toolCalls: [{ name: 'wait', args: {} }] }
        : { toolCalls: [{ name: 'complete', args: { summary: done.sort().join(', '), paths: [] } }] };
    });
    for (const x of parts) {
      model.script(`BGT-${x}`, (ctx) =>
        ctx.attempt === 1 ? { delayMs: 60_000, text: 'never arrives' } : { toolCalls: [{ name: 'complete', args: { summary: `${x} done`, paths: [] } }] },
      );
    }
    const a = await instance('a');
    const created = await json(`${a.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ subagent_type: 'lead', prompt: 'BGT-LEAD', context: { parentTaskId: 'T-bgt', userId: 'u' } })),
    });
    const lead = created.body.id as string;
    await until(async () => parts.every((x) => asked(`BGT-${x}`).length === 1));
    await until(async () => (await json(`${a.url}/tasks/${lead}`)).body.progress?.tool === 'wait');
    a.child.kill('SIGKILL');
    await a.exited;

    // b takes the lead and its children over once a's leases ran out.
    const b = await instance('b');
    await until(async () => (await json(`${b.url}/tasks/${lead}`)).body.status === 'completed', 60_000);
    expect((await json(`${b.url}/tasks/${lead}`)).body.summary).toBe('A done, B done, C done');
    const all = (await json(`${b.url}/tasks?parentTaskId=T-bgt`)).body.tasks as Array<{ id: string; parentTask: string | null; status: string }>;
    expect(all).toHaveLength(4);
    expect(all.filter((t) => t.parentTask === lead).every((t) => t.status === 'completed')).toBe(true);
    // The lead's first step was stored before the kill: b asked only what came after.
    expect(asked('BGT-LEAD').filter((r) => r.body.messages.every((m) => m.role !== 'assistant'))).toHaveLength(1);
    for (const x of parts) expect(asked(`BGT-${x}`).map((r) => r.authorization)).toEqual(['Bearer key-a', 'Bearer key-b']);
    const records = (await json(`${b.url}/usage/records?parentTaskId=T-bgt`)).body.records as Array<{ taskId: string }>;
    expect(records).toHaveLength(4);
  }, 90_000);
});
