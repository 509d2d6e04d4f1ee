import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openPostgres, type PostgresOptions } from '../src/store/postgres';
import type { CreateTaskBody } from '../src/shapes/task';
import { createClusterStore } from '../src/store/cluster-store';
import { storageFaultOf } from '../src/store/storage-guard';
import { createTaskStore } from '../src/store/task-store';
import { newTaskRow } from '../src/tasks/systems/admission';
import { testDatabaseUrl } from './support/postgres';

type Opened = Awaited<ReturnType<typeof openPostgres>>;

/** Opens one instance per name on a fresh test database, runs `use`, then closes them and removes the folder. */
async function withDatabases<T>(names: string[], use: (dbs: Opened[], url: string) => Promise<T>, options?: PostgresOptions): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pgdriver-'));
  const dbs: Opened[] = [];
  try {
    const url = (await testDatabaseUrl(dir))!;
    for (const name of names) dbs.push(await openPostgres(url, name, options));
    return await use(dbs, url);
  } finally {
    for (const db of dbs) await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// The PostgreSQL pass of the suite only (TEST_DATABASE=postgres).
if (!process.env.TEST_POSTGRES_URL) console.warn('[postgres-driver test] skipped: it runs in the PostgreSQL pass (npm run test:postgres)');
describe.skipIf(!process.env.TEST_POSTGRES_URL)('the PostgreSQL driver', () => {
  it('never takes a transaction the server rolled back for committed (a failed statement whose error the body caught)', async () => {
    await withDatabases(['driver-test'], async ([db]) => {
      await db.sql.run('CREATE TABLE IF NOT EXISTS driver_probe (n INTEGER PRIMARY KEY)');
      const attempt = db.sql.transaction(async (tx) => {
        await tx.run('INSERT INTO driver_probe (n) VALUES (?)', [1]);
        await tx.run('INSERT INTO no_such_table (n) VALUES (?)', [1]).catch(() => undefined);
        return 'committed?';
      });
      await expect(attempt).rejects.toThrow(/rolled back/);
      expect(await db.sql.get('SELECT count(*)::int AS n FROM driver_probe')).toEqual({ n: 0 });
    });
  });

  it('fails a transaction with the error of a write sent without waiting, runs what it sends in order, commits none of a failed one', async () => {
    await withDatabases(['driver-send'], async ([db]) => {
      await db.sql.run('CREATE TABLE IF NOT EXISTS driver_sent (n INTEGER PRIMARY KEY)');
      await db.sql.run('INSERT INTO driver_sent (n) VALUES (1)');
      const count = async () => (await db.sql.get<{ n: number }>('SELECT count(*)::int AS n FROM driver_sent'))?.n;
      // Nothing awaited after the failing write: the commit answers with its error (a unique
      // violation, which the event log retries), not a bare "rolled back".
      const unread = db.sql.transaction(async (tx) => {
        tx.send('INSERT INTO driver_sent (n) VALUES (?)', [2]);
        tx.send('INSERT INTO driver_sent (n) VALUES (?)', [1]);
        tx.send('INSERT INTO driver_sent (n) VALUES (?)', [3]);
        return 'committed?';
      });
      await expect(unread).rejects.toMatchObject({ code: '23505' });
      // A read after it: the read throws the write's error (not "transaction aborted").
      const read = db.sql.transaction(async (tx) => {
        tx.send('INSERT INTO driver_sent (n) VALUES (?)', [1]);
        return tx.get('SELECT count(*) AS n FROM driver_sent');
      });
      await expect(read).rejects.toMatchObject({ code: '23505' });
      expect(await count()).toBe(1);
      // Sent writes run in the order sent, before the read that follows them.
      const seen = await db.sql.transaction(async (tx) => {
        tx.send('INSERT INTO driver_sent (n) VALUES (?)', [2]);
        tx.send('UPDATE driver_sent SET n = n * 10 WHERE n = 2');
        return (await tx.rows('SELECT n FROM driver_sent ORDER BY n')).map((r) => r[0]);
      });
      expect(seen).toEqual([1, 20]);
      expect(await count()).toBe(2);
      expect(() => db.sql.send('SELECT 1')).toThrow(/inside a transaction/);
    });
  });

  it('prepares its statements, and runs them again after another process altered a table under them (a rolling upgrade)', async () => {
    await withDatabases(['driver-plans'], async ([db], url) => {
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      try {
        await db.sql.run('CREATE TABLE IF NOT EXISTS plan_probe (id INTEGER PRIMARY KEY, a TEXT)');
        await db.sql.run(`INSERT INTO plan_probe (id, a) VALUES (1, 'x')`);
        const read = () => db.sql.all('SELECT * FROM plan_probe');
        const readInTransaction = () => db.sql.transaction((tx) => tx.all('SELECT * FROM plan_probe'));
        // Prepared on several of the pool's connections, and on a transaction's.
        await Promise.all([read(), read(), read(), readInTransaction(), readInTransaction()]);
        const prepared = await db.sql.transaction(async (tx) => {
          await tx.all('SELECT * FROM plan_probe');
          return tx.all<{ statement: string }>(`SELECT statement FROM pg_prepared_statements WHERE name LIKE 'subagentd%'`);
        });
        expect(prepared.map((p) => p.statement)).toContain('SELECT * FROM plan_probe');
        // Another instance's migration: the prepared `SELECT *` now has another result type.
        await other.query('ALTER TABLE plan_probe ADD COLUMN b TEXT');
        expect(await read()).toEqual([{ id: 1, a: 'x', b: null }]);
        expect(await readInTransaction()).toEqual([{ id: 1, a: 'x', b: null }]);
        await other.query('ALTER TABLE plan_probe ADD COLUMN c TEXT');
        // A write in a transaction whose read went stale: tried again whole, written once.
        await db.sql.transaction(async (tx) => {
          tx.send(`UPDATE plan_probe SET a = a || 'y'`);
          await tx.all('SELECT * FROM plan_probe');
        });
        expect(await read()).toEqual([{ id: 1, a: 'xy', b: null, c: null }]);
      } finally {
        await other.end();
      }
    });
  });

  it('stops preparing statements once the server lost one (a pooler in transaction mode between them), and loses no write', async () => {
    await withDatabases(['driver-pooler'], async ([db]) => {
      await db.sql.run('CREATE TABLE IF NOT EXISTS pooler_probe (id INTEGER PRIMARY KEY, n INTEGER)');
      await db.sql.run('INSERT INTO pooler_probe (id, n) VALUES (1, 0)');
      const bump = `UPDATE pooler_probe SET n = n + 1 WHERE id = 1`;
      // Prepared on a connection, then gone from the server (as when a pooler hands the next
      // transaction another server connection): the same transaction uses it again.
      await db.sql.transaction(async (tx) => {
        tx.send(bump);
        await tx.run('DEALLOCATE ALL');
        tx.send(bump);
        await tx.get('SELECT 1 AS one');
      });
      // Tried again whole, unnamed: both increments, once each.
      expect(await db.sql.get('SELECT n FROM pooler_probe WHERE id = 1')).toEqual({ n: 2 });
      const named = await db.sql.transaction(async (tx) => {
        tx.send(bump);
        return tx.all(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'subagentd%'`);
      });
      expect(named).toEqual([]);
      expect(await db.sql.get('SELECT n FROM pooler_probe WHERE id = 1')).toEqual({ n: 3 });
    });
  });

  it('stops preparing once the server lost a statement outside a transaction too, and writes once', async () => {
    await withDatabases(['driver-pooler-pool'], async ([db]) => {
      await db.sql.run('CREATE TABLE IF NOT EXISTS pool_probe (id INTEGER PRIMARY KEY, n INTEGER)');
      await db.sql.run('INSERT INTO pool_probe (id, n) VALUES (1, 0)');
      const bump = `UPDATE pool_probe SET n = n + 1 WHERE id = 1`;
      // One statement at a time: the pool hands out the connection it got back last, so the
      // statement is prepared there, lost there, and used there again.
      await db.sql.run(bump);
      await db.sql.run('DEALLOCATE ALL');
      await db.sql.run(bump);
      expect(await db.sql.get('SELECT n FROM pool_probe WHERE id = 1')).toEqual({ n: 2 });
      const named = await db.sql.transaction(async (tx) => {
        tx.send(bump);
        return tx.all(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'subagentd%'`);
      });
      expect(named).toEqual([]);
    });
  });

  it("stores a new task held by its admitting instance with that owner and lease, and only while the cluster's queue has room", async () => {
    await withDatabases(['driver-admit'], async ([db]) => {
      const store = createTaskStore(db.sql);
      const cluster = createClusterStore(db.sql, 'driver-admit');
      const body = { subagent_type: 'general', description: 'admit', prompt: 'p', context: { parentTaskId: 'P-admit', userId: 'u' } } as CreateTaskBody;
      const row = (id: string, tenant = 'default') => newTaskRow(id, tenant, body, Date.now(), null, null, null);
      // Held while its instance sets it up (an A2A push config, say): no other instance may claim it meanwhile.
      const lease = Date.now() + 60_000;
      expect(await store.insert({ ...row('tsk_admit_held'), owner: 'driver-admit', leaseUntil: lease })).toBe(true);
      expect(await store.getById('tsk_admit_held')).toMatchObject({ owner: 'driver-admit', leaseUntil: lease });
      expect(await createClusterStore(db.sql, 'driver-other').claim(10, lease, [])).toBeUndefined();
      await cluster.release('tsk_admit_held', null);
      // Room for one more in all and for the tenant: stored; then none left in all, then none for the tenant.
      expect(await store.insert(row('tsk_admit_1'), { all: 2, tenant: 2 })).toBe(true);
      expect(await cluster.waiting('default')).toEqual({ all: 2, tenant: 2 });
      expect(await store.insert(row('tsk_admit_2'), { all: 2, tenant: 9 })).toBe(false);
      expect(await store.insert(row('tsk_admit_3'), { all: 9, tenant: 2 })).toBe(false);
      expect(await store.getById('tsk_admit_2')).toBeUndefined();
      expect(await store.getById('tsk_admit_3')).toBeUndefined();
      // Another tenant's bound counts its own tasks only.
      expect(await store.insert(row('tsk_admit_4', 'other'), { all: 9, tenant: 1 })).toBe(true);
      expect(await cluster.waiting('other')).toEqual({ all: 3, tenant: 1 });
    });
  });

  it('says when a claim took the last task that could start, so the dispatcher does not ask again for nothing', async () => {
    await withDatabases(['driver-claim'], async ([db]) => {
      const store = createTaskStore(db.sql);
      const cluster = createClusterStore(db.sql, 'driver-claim');
      const body = { subagent_type: 'general', description: 'claim', prompt: 'p', context: { parentTaskId: 'P-claim', userId: 'u' } } as CreateTaskBody;
      for (const id of ['tsk_claim_1', 'tsk_claim_2']) await store.insert(newTaskRow(id, 'default', body, Date.now(), null, null, null));
      const lease = Date.now() + 60_000;
      expect(await cluster.claim(10, lease, [])).toMatchObject({ row: { id: 'tsk_claim_1', owner: 'driver-claim' }, last: false });
      expect(await cluster.claim(10, lease, [])).toMatchObject({ row: { id: 'tsk_claim_2', owner: 'driver-claim' }, last: true });
      expect(await cluster.claim(10, lease, [])).toBeUndefined();
    });
  });

  it("says when a claim left no other task waiting, not even one held by its tenant's quota (the freed slot need not wake anyone)", async () => {
    await withDatabases(['driver-alone'], async ([db]) => {
      const store = createTaskStore(db.sql);
      const cluster = createClusterStore(db.sql, 'driver-alone');
      const body = { subagent_type: 'general', description: 'alone', prompt: 'p', context: { parentTaskId: 'P-alone', userId: 'u' } } as CreateTaskBody;
      const add = (id: string, tenant: string) => store.insert(newTaskRow(id, tenant, body, Date.now(), null, null, null));
      const lease = Date.now() + 60_000;
      await add('tsk_alone_1', 'one');
      await add('tsk_alone_2', 'one');
      const first = await cluster.claim(1, lease, []);
      expect(first).toMatchObject({ row: { id: 'tsk_alone_1' }, last: false, alone: false });
      await store.markStarted(first!.row, 'gpt-4.1-mini', Date.now(), 'driver-alone');
      // Tenant "one" is at its quota of 1: its second task waits, and no claim takes it.
      expect(await cluster.claim(1, lease, [])).toBeUndefined();
      await add('tsk_alone_3', 'two');
      // The last that may start, but not alone: tenant "one"'s task still waits for its quota.
      expect(await cluster.claim(1, lease, [])).toMatchObject({ row: { id: 'tsk_alone_3' }, last: true, alone: false });
      // With room for it, the waiting one is taken, and nothing else waits.
      expect(await cluster.claim(10, lease, [])).toMatchObject({ row: { id: 'tsk_alone_2' }, last: true, alone: true });
    });
  });

  it('ends a transaction left idle past the lease (a process paused mid-transaction), so its row locks free the task for the others', async () => {
    await withDatabases(
      ['driver-paused', 'driver-other'],
      async ([paused, other]) => {
        await paused.sql.run('CREATE TABLE IF NOT EXISTS lease_probe (id TEXT PRIMARY KEY, owner TEXT)');
        await paused.sql.run(`INSERT INTO lease_probe (id, owner) VALUES ('t1', 'paused') ON CONFLICT (id) DO NOTHING`);
        const skipLocked = () => other.sql.all(`SELECT id FROM lease_probe WHERE id = 't1' FOR UPDATE SKIP LOCKED`);
        let locked!: () => void;
        const holding = new Promise<void>((resolve) => (locked = resolve));
        // The row is locked, then the transaction sits idle (its process stopped) for 1.5 s.
        const stalled = paused.sql.transaction(async (tx) => {
          await tx.run(`UPDATE lease_probe SET owner = 'paused-again' WHERE id = 't1'`);
          locked();
          await new Promise((r) => setTimeout(r, 1500));
          await tx.run(`UPDATE lease_probe SET owner = 'late' WHERE id = 't1'`);
        });
        await holding;
        expect(await skipLocked()).toEqual([]);
        // Lost with its session, as a connection drop is: the storage guard holds the write and tries
        // it again (a usage write must still bill), never drops it as a failed statement.
        const lost = await stalled.then(
          () => null,
          (err: unknown) => err,
        );
        expect(storageFaultOf(lost)).toBe('storage_unavailable');
        expect(await skipLocked()).toHaveLength(1);
        // Nothing of the ended transaction was kept.
        expect(await other.sql.get(`SELECT owner FROM lease_probe WHERE id = 't1'`)).toEqual({ owner: 'paused' });
      },
      { idleInTransactionMs: 500 },
    );
  });

  it('bills every call when two instances bill one task at once (a deposed owner and the new one): no report number collides', async () => {
    await withDatabases(['driver-bill-a', 'driver-bill-b'], async ([a, b]) => {
      const body = { subagent_type: 'general', description: 'race', prompt: 'p', context: { parentTaskId: 'P-race', userId: 'u' } } as CreateTaskBody;
      const row = newTaskRow(`tsk_race_${Date.now()}`, 'default', body, Date.now(), null, null, null);
      const storeA = createTaskStore(a.sql);
      const storeB = createTaskStore(b.sql);
      await storeA.insert(row);
      await storeA.markStarted(row, 'm', Date.now());
      const usage = { inputTokens: 100, outputTokens: 10, totalTokens: 110, cachedInputTokens: 0, reasoningTokens: 0 };
      const price = { model: 'm', costMicroUsd: 5 };
      const bills = Array.from({ length: 20 }, (_, i) => (i % 2 ? storeA : storeB).addUsage(row.id, 1 + (i % 3), usage, price, Date.now(), `call-${i}`));
      const outcomes = await Promise.allSettled(bills);
      expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
      const task = await storeA.getById(row.id);
      expect(task?.inputTokens).toBe(2000);
      expect(await a.sql.get('SELECT count(*)::int AS n, max(n)::int AS last FROM usage_reports WHERE task_id = ?', [row.id])).toEqual({ n: 20, last: 20 });
    });
  });
});
