import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { ensureDatabase, ownClustersRun, startTestPostgres, type TestPostgres } from './support/postgres';
import { until } from './support/until';
import { openStream } from './support/ws-client';

// A cluster of its own, since it is stopped under the service: run once, in the SQLite pass of the
// suite (the PostgreSQL pass shares one cluster between test files), wherever PostgreSQL is installed.
const run = ownClustersRun('postgres-outage test');

describe.skipIf(!run)('PostgreSQL going away under the service', () => {
  let cluster: TestPostgres;
  let svc: TestService;
  beforeAll(async () => {
    cluster = await startTestPostgres();
    await ensureDatabase(cluster.url, 'outage');
    // A short lease: the outage below outlasts it (a shorter one is ridden out: postgres-restart.test.ts).
    svc = await startService({ env: { DATABASE_URL: cluster.urlOf('outage'), BASH_SANDBOX: 'none', TASK_LEASE_MS: '3000' } });
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await cluster?.stop();
  });

  it('refuses work with 503 storage_unavailable, stops the running task once its lease runs out without losing what was stored, and comes back with the server', async () => {
    svc.model.script('PG-BEFORE', [{ toolCalls: [{ name: 'complete', args: { summary: 'fine', paths: [] } }], usage: { input: 10, output: 1 } }]);
    expect((await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'PG-BEFORE' }) })).json().status).toBe('completed');

    // A task whose first call is billed, then the server goes away while its command runs.
    svc.model.script('PG-DURING', [
      { toolCalls: [{ name: 'bash', args: { command: 'sleep 1' } }], usage: { input: 40, output: 4 } },
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 50, output: 5 } },
      { toolCalls: [{ name: 'complete', args: { summary: 'never', paths: [] } }] },
    ]);
    const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'PG-DURING' }) })).json().id;
    await until(async () => (await svc.inject({ url: `/tasks/${id}` })).json().usage.inputTokens === 40);
    await cluster.pause();

    // The next write fails: the service refuses work and says so, with the contract's errors.
    await until(async () => (await svc.inject({ url: '/healthz' })).statusCode === 503);
    expect((await svc.inject({ url: '/healthz' })).json().error.code).toBe('storage_unavailable');
    const refused = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'PG-BEFORE' }) });
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('storage_unavailable');
    // A read has no database to read from: 503 too, never a 500.
    const read = await svc.inject({ url: `/tasks/${id}` });
    expect(read.statusCode).toBe(503);
    expect(read.json().error.code).toBe('storage_unavailable');

    // The server comes back: the held writes land in order, the task ends, new work is admitted.
    await cluster.start();
    await until(async () => (await svc.inject({ url: '/healthz' })).statusCode === 200, 20_000);
    await until(async () => !['queued', 'running'].includes((await svc.inject({ url: `/tasks/${id}` })).json().status));
    const ended = (await svc.inject({ url: `/tasks/${id}` })).json();
    expect(ended).toMatchObject({ status: 'error', error: { code: 'storage_unavailable' } });
    expect(ended.usage.inputTokens).toBeGreaterThanOrEqual(40);
    const records = (await svc.inject({ url: '/usage/records?limit=100' })).json().records;
    expect(records.filter((r: { taskId: string }) => r.taskId === id)).toMatchObject([{ status: 'error', inputTokens: ended.usage.inputTokens }]);
    const stream = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${id}/stream`);
    await stream.closed;
    expect(stream.messages.map((m) => m.seq)).toEqual(stream.messages.map((_, i) => i + 1));
    expect(stream.messages.at(-1)?.type).toBe('task.finished');
    expect((await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'PG-BEFORE' }) })).json().status).toBe('completed');
  }, 60_000);
});
