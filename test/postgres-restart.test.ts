import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';

// A cluster of its own, restarted under the service: run once, in the SQLite pass of the suite,
// wherever PostgreSQL is installed.
const run = ownClustersRun('postgres-restart test');

const TASKS = 16;

describe.skipIf(!run)('PostgreSQL restarting under load (a managed database failing over)', () => {
  let cluster: TestPostgres;
  let model: ScriptedModel;
  let dir: string;
  let svc: ChildService;

  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'restart');
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pg-restart-'));
    const { DATABASE_PATH: _unused, ...env } = childEnv(dir, model.url, TEST_API_KEY);
    svc = await startChildService({
      ...env,
      DATABASE_URL: cluster.urlOf('restart'),
      INSTANCE_ID: 'restart',
      MAX_CONCURRENT_TASKS: '8',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  }, 90_000);
  afterAll(async () => {
    svc?.child.kill('SIGKILL');
    await svc?.exited;
    await model?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rides out three fast restarts: no exit, every task completes, every served token billed once', async () => {
    model.script('RESTART', (ctx) => {
      const n = Number(/RESTART-(\d+)/.exec(JSON.stringify(ctx.messages))?.[1] ?? 0);
      if (ctx.turn < 4) {
        return {
          toolCalls: [{ name: 'write_file', args: { path: `r${n}/step${ctx.turn}.txt`, content: `${ctx.turn}` } }],
          usage: { input: 100 + n, output: 10 },
          delayMs: 150,
        };
      }
      return { toolCalls: [{ name: 'complete', args: { summary: `done ${n}`, paths: [`r${n}/step3.txt`] } }], usage: { input: 300 + n, output: 30 } };
    });
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const res = await json(`${svc.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: `RESTART-${i}`, context: { parentTaskId: 'T-restart', userId: 'u' } })),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      ids.push(res.body.id);
    }
    // Restarts while calls, tool writes and event batches are under way.
    for (let r = 0; r < 3; r++) {
      await until(async () => model.served.filter((s) => s.prompt.startsWith('RESTART-')).length >= 8 * (r + 1), 30_000).catch((err) => {
        throw new Error(`${err.message} (restart ${r}); the service said:\n${svc.output().slice(-4000)}`);
      });
      await cluster.pause();
      await cluster.start();
    }
    const ended = async () => {
      const rows = await Promise.all(ids.map(async (id) => (await json(`${svc.url}/tasks/${id}`)).body));
      return rows.every((t) => t.status && !['queued', 'running'].includes(t.status)) ? rows : null;
    };
    await until(async () => (await ended().catch(() => null)) !== null, 60_000);
    expect(svc.child.exitCode, svc.output().slice(-3000)).toBeNull();
    const tasks = (await ended())!;
    for (const [i, task] of tasks.entries()) {
      expect(task, JSON.stringify(task.error)).toMatchObject({ status: 'completed', summary: `done ${i}` });
      const served = model.served.filter((s) => s.prompt === `RESTART-${i}`);
      expect(
        task.usage.inputTokens,
        `task ${i}: served ${JSON.stringify(served)}; ${svc
          .output()
          .split('\n')
          .filter((l) => l.includes(task.id) || l.includes('"level":50'))
          .join('\n')
          .slice(-3000)}`,
      ).toBe(served.reduce((sum, s) => sum + s.inputTokens, 0));
    }
    const totals = (await json(`${svc.url}/usage?parentTaskId=T-restart`)).body.totals;
    expect(totals.inputTokens).toBe(model.served.filter((s) => s.prompt.startsWith('RESTART-')).reduce((sum, s) => sum + s.inputTokens, 0));
    expect((await json(`${svc.url}/healthz`)).status).toBe(200);
  }, 150_000);
});
