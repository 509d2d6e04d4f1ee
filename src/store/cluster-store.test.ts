import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/support/postgres.ts';
import { until } from '../../test/support/until.ts';
import type { CreateTaskBody } from '../shapes/task.ts';
import { newTaskRow } from '../tasks/systems/admission.ts';
import { CHANNELS, createClusterStore, type ClusterStore } from './cluster-store.ts';
import type { Db } from './db.ts';
import { openPostgres } from './postgres.ts';
import { createTaskStore } from './task-store.ts';

// The cluster store is PostgreSQL's alone: it runs in the PostgreSQL pass (npm run test:postgres).
if (!process.env.TEST_POSTGRES_URL) console.warn('[cluster store test] skipped: it runs in the PostgreSQL pass (npm run test:postgres)');
describe.skipIf(!process.env.TEST_POSTGRES_URL)('the cluster store: two instances sharing one database', () => {
  let dir: string;
  let dbA: Db;
  let dbB: Db;
  let a: ClusterStore;
  let b: ClusterStore;
  const NOW = 1_000_000;
  const LEASE = NOW + 10_000;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cluster-store-'));
    const url = (await testDatabaseUrl(dir))!;
    dbA = await openPostgres(url, 'a');
    dbB = await openPostgres(url, 'b');
    a = createClusterStore(dbA.sql, 'a');
    b = createClusterStore(dbB.sql, 'b');
  });
  afterAll(async () => {
    await dbA?.close();
    await dbB?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await dbA.sql.run('DELETE FROM subagent_records');
    await dbA.sql.run('DELETE FROM tasks');
  });

  /** Stores waiting tasks (ids grow with time: the oldest first), of tenant and user `<tenant>/<user>`. */
  async function waiting(...tasks: Array<[id: string, tenant: string, user?: string]>) {
    const store = createTaskStore(dbA.sql);
    for (const [id, tenant, user = 'u'] of tasks) {
      const body: CreateTaskBody = { subagent_type: 'general', description: id, prompt: 'p', context: { parentTaskId: 'P', userId: user } };
      await store.insert(newTaskRow(id, tenant, body, NOW, null, null));
    }
  }
  const started = (id: string) => dbA.sql.run(`UPDATE tasks SET status = 'running' WHERE id = ?`, [id]);
  const row = async (id: string) =>
    (await dbA.sql.get<{ owner: string | null; status: string; resumes: number; resume_reason: string | null }>('SELECT * FROM tasks WHERE id = ?', [id]))!;

  it('claims the oldest task of the tenant with the fewest running, and none of a tenant at its quota', async () => {
    await waiting(['t1', 'X'], ['t2', 'X'], ['t3', 'Y']);
    expect(await a.waiting('X')).toEqual({ all: 3, tenant: 2 });
    const first = await a.claim(1, LEASE, []);
    expect(first).toMatchObject({ row: { id: 't1', owner: 'a', leaseUntil: LEASE }, last: false, alone: false });
    await started('t1');
    // X runs one: Y's task comes first, on the other instance.
    expect((await b.claim(1, LEASE, []))?.row.id).toBe('t3');
    await started('t3');
    // X is at its quota of 1: its second task waits; with a quota of 2 it goes, alone in the queue.
    expect(await a.claim(1, LEASE, [])).toBeUndefined();
    expect(await b.claim(2, LEASE, [])).toMatchObject({ row: { id: 't2', owner: 'b' }, last: true, alone: true });
    expect(await a.waiting('X')).toEqual({ all: 0, tenant: 0 });
  });

  it('never claims a task this instance is still stopping, and a task waiting on its child frees its quota', async () => {
    await waiting(['t1', 'X'], ['t2', 'X']);
    expect((await a.claim(1, LEASE, ['t1']))?.row.id).toBe('t2');
    await started('t2');
    expect(await a.claim(1, LEASE, [])).toBeUndefined();
    await a.lend('t2', true);
    expect((await a.claim(1, LEASE, []))?.row.id).toBe('t1');
    // Only the owner lends: the other instance's word changes nothing.
    await b.lend('t2', false);
    expect((await dbA.sql.get<{ w: number }>('SELECT waiting_on_child AS w FROM tasks WHERE id = ?', ['t2']))!.w).toBe(1);
  });

  it('renews its leases while it owns the tasks; one another instance took over is reported lost', async () => {
    await waiting(['t1', 'X']);
    await a.claim(4, NOW + 1000, []);
    await started('t1');
    expect(await a.renew([{ id: 't1', activity: '{"phase":"model"}' }], NOW + 5000)).toEqual([]);
    expect(await a.renewOne('t1', NOW + 5000)).toBe(true);
    // Not expired yet at NOW + 4000: nothing to take over.
    expect(await b.takeExpired(NOW + 4000, NOW + 20_000, false, [])).toEqual([]);
    const taken = await b.takeExpired(NOW + 6000, NOW + 20_000, false, []);
    expect(taken.map((t) => [t.id, t.owner, t.activity])).toEqual([['t1', 'b', { phase: 'model' }]]);
    expect(await a.renew([{ id: 't1', activity: null }], NOW + 7000)).toEqual(['t1']);
    expect(await a.renewOne('t1', NOW + 7000)).toBe(false);
    expect((await row('t1')).owner).toBe('b');
  });

  it('releases a running task to be resumed anywhere (counted), and a queued one simply to wait again', async () => {
    await waiting(['t1', 'X'], ['t2', 'X']);
    await a.claim(4, LEASE, []);
    await started('t1');
    await a.claim(4, LEASE, []);
    await b.release('t1', 'restart');
    expect((await row('t1')).owner).toBe('a');
    await a.release('t1', 'restart');
    await a.release('t2', null);
    expect(await row('t1')).toMatchObject({ owner: null, status: 'running', resumes: 1, resume_reason: 'restart' });
    expect(await row('t2')).toMatchObject({ owner: null, status: 'queued', resumes: 0, resume_reason: null });
    expect(await b.waiting('X')).toEqual({ all: 2, tenant: 2 });
  });

  it('claims a waiting task by id to cancel it, and not one somebody owns', async () => {
    await waiting(['t1', 'X'], ['t2', 'X']);
    await a.claim(4, LEASE, []);
    expect(await b.claimWaiting('t1', LEASE)).toBe(false);
    expect(await b.claimWaiting('t2', LEASE)).toBe(true);
    expect((await row('t2')).owner).toBe('b');
  });

  it('tells every instance what one says on a channel', async () => {
    const heard: string[] = [];
    dbB.cluster!.onNotification((channel, payload) => heard.push(`${channel} ${payload}`));
    await a.notify(CHANNELS.wake, 'a');
    await until(async () => heard.includes(`${CHANNELS.wake} a`), 5_000);
  });
});
