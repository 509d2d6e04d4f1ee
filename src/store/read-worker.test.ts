import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from './database.ts';
import { createSqlReader } from './read-worker.ts';

const until = async (check: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("the reader's thread", () => {
  it('checkpoints the WAL off the main connection, which keeps it bounded, and hands checkpoints back when it stops', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-wal-'));
    const db = openSqlite(path.join(dir, 'db.sqlite'));
    const reader = createSqlReader(db);
    const conn = db.sqlite!;
    await until(() => conn.pragma('wal_autocheckpoint', { simple: true }) === 0);
    conn.exec('CREATE TABLE filler (b BLOB)');
    const insert = conn.prepare('INSERT INTO filler (b) VALUES (randomblob(3500))');
    // 20 × 150 pages (12 MB) in all, a little at a time: the WAL is copied into the database
    // and begun again between batches, so it never holds more than a few of them.
    for (let batch = 0; batch < 20; batch++) {
      conn.transaction(() => {
        for (let i = 0; i < 150; i++) insert.run();
      })();
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(statSync(path.join(dir, 'db.sqlite-wal')).size).toBeLessThan(2.5 * 1024 * 1024);
    await expect(reader.all({ sql: 'SELECT count(*) FROM filler', params: [] })).resolves.toEqual([[3000]]);
    await reader.close();
    expect(conn.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
