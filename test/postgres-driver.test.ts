import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../src/store/postgres';
import { testDatabaseUrl } from './support/postgres';

// The PostgreSQL pass of the suite only (TEST_DATABASE=postgres).
if (!process.env.TEST_POSTGRES_URL) console.warn('[postgres-driver test] skipped: it runs in the PostgreSQL pass (npm run test:postgres)');
describe.skipIf(!process.env.TEST_POSTGRES_URL)('the PostgreSQL driver', () => {
  it('never takes a transaction the server rolled back for committed (a failed statement whose error the body caught)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pgdriver-'));
    const db = await openPostgres((await testDatabaseUrl(dir))!, 'driver-test');
    try {
      await db.sql.run('CREATE TABLE IF NOT EXISTS driver_probe (n INTEGER PRIMARY KEY)');
      const attempt = db.sql.transaction(async (tx) => {
        await tx.run('INSERT INTO driver_probe (n) VALUES (?)', [1]);
        await tx.run('INSERT INTO no_such_table (n) VALUES (?)', [1]).catch(() => undefined);
        return 'committed?';
      });
      await expect(attempt).rejects.toThrow(/rolled back/);
      expect(await db.sql.get('SELECT count(*)::int AS n FROM driver_probe')).toEqual({ n: 0 });
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
