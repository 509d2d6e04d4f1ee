import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { DEFAULT_TENANT } from '../src/http/auth';
import { createTaskBodySchema } from '../src/shapes/task';
import { openPostgres } from '../src/store/postgres';
import { createTaskStore } from '../src/store/task-store';
import { newTaskRow } from '../src/tasks/systems/admission';
import { ulid } from '../src/util/ids';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { testDatabaseUrl } from './support/postgres';
import { until } from './support/until';

// The PostgreSQL pass of the suite only (TEST_DATABASE=postgres): instances hear of new tasks
// through the database's notifications.
if (!process.env.TEST_POSTGRES_URL) console.warn('[lost-notification test] skipped: it runs in the PostgreSQL pass (npm run test:postgres)');
describe.skipIf(!process.env.TEST_POSTGRES_URL)('a task stored without its announcement (its instance died between the two)', () => {
  let model: ScriptedModel;
  let dir: string;
  let svc: ChildService;

  beforeAll(async () => {
    model = await startScriptedModel();
    model.script('UNANNOUNCED', [{ toolCalls: [{ name: 'complete', args: { summary: 'found and done', paths: [] } }], usage: { input: 10, output: 2 } }]);
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-lost-notification-'));
    svc = await startChildService({ ...childEnv(dir, model.url, TEST_API_KEY), TASK_LEASE_MS: '1500' });
  });
  afterAll(async () => {
    svc?.child.kill('SIGTERM');
    await svc?.exited;
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is started by an idle instance at its next lease renewal', async () => {
    // A task through the API first: it ends with nothing else waiting, so the instance goes idle
    // (it claims again only when told of a task, or when it renews its leases).
    const first = await json(`${svc.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ prompt: 'UNANNOUNCED first', context: { parentTaskId: 'T-lost', userId: 'u' } })),
    });
    expect(first.body).toMatchObject({ status: 'completed' });
    // Then a task stored as admission stores it, by another process that announces nothing.
    const db = await openPostgres((await testDatabaseUrl(dir))!, 'writer-that-died');
    const body = createTaskBodySchema.parse(taskBody({ prompt: 'UNANNOUNCED second', context: { parentTaskId: 'T-lost', userId: 'u' } }));
    const row = newTaskRow(`tsk_${ulid(Date.now())}`, DEFAULT_TENANT, body, Date.now(), null, null);
    try {
      await createTaskStore(db.sql).insert(row);
    } finally {
      await db.close();
    }
    // A renewal every third of TASK_LEASE_MS looks for work: the task runs within a few seconds.
    await until(async () => (await json(`${svc.url}/tasks/${row.id}`)).body.status === 'completed', 10_000);
    expect((await json(`${svc.url}/tasks/${row.id}`)).body).toMatchObject({ status: 'completed', summary: 'found and done' });
  }, 30_000);
});
