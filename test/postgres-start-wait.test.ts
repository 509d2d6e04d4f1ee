import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';

// A cluster of its own, down when the service starts: run in the SQLite pass of the suite,
// wherever PostgreSQL is installed.
const run = ownClustersRun('postgres-start-wait test');

describe.skipIf(!run)('an instance started while its PostgreSQL is down (restarting, or starting beside it)', () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  let svc: ChildService | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'startwait');
    await cluster.pause();
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pg-startwait-'));
    const { DATABASE_PATH: _unused, ...rest } = childEnv(dir, model.url, TEST_API_KEY);
    env = { ...rest, DATABASE_URL: cluster.urlOf('startwait'), INSTANCE_ID: 'startwait' };
  }, 90_000);
  afterAll(async () => {
    svc?.child.kill('SIGKILL');
    await svc?.exited;
    await model?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the database, answering /healthz 503 meanwhile, then serves', async () => {
    svc = await startChildService(env, [], { waitReady: false });
    const s = svc;
    // Up, waiting and saying so: the port answers, each try is logged.
    await until(async () => (await fetch(`${s.url}/healthz`).catch(() => null))?.status === 503, 30_000);
    const health = await json(`${s.url}/healthz`);
    expect(health.body.error.code).toBe('starting');
    await until(async () => s.output().includes('the database does not answer yet'), 30_000);
    expect(s.child.exitCode).toBeNull();

    await cluster.start();
    await until(async () => (await fetch(`${s.url}/healthz`).catch(() => null))?.status === 200, 30_000);
    model.script('STARTWAIT', [{ toolCalls: [{ name: 'complete', args: { summary: 'served', paths: [] } }], usage: { input: 5, output: 1 } }]);
    const done = await json(`${s.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ prompt: 'STARTWAIT' })),
    });
    expect(done.body).toMatchObject({ status: 'completed', summary: 'served' });
    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('past DATABASE_START_TIMEOUT_MS it exits 1, naming the database', async () => {
    await cluster.pause();
    svc = await startChildService({ ...env, DATABASE_START_TIMEOUT_MS: '1500' }, [], { waitReady: false });
    const exit = await svc.exited;
    expect(exit.code).toBe(1);
    expect(svc.output()).toContain(`the database ${cluster.urlOf('startwait')} did not answer within DATABASE_START_TIMEOUT_MS (1500 ms)`);
  }, 60_000);
});
