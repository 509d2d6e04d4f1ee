import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { DatabaseInUseError, DatabaseNotWritableError, type Db } from './db.ts';
import * as schema from './schema.ts';
import { createSqliteClient } from './sql-client.ts';

/**
 * Takes an exclusive lock for the life of this process: a small SQLite file beside the database,
 * opened in exclusive locking mode and written once, so the OS lock is held until the connection
 * closes and is released by the kernel if the process dies. A second instance on the same
 * database (a rolling deploy, a port clash) is refused before it can run crash recovery over the
 * live instance's tasks.
 */
function lockDatabase(file: string): Database.Database {
  const lock = new Database(`${path.resolve(file)}.lock`, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since INTEGER); DELETE FROM holder;');
    lock.prepare('INSERT INTO holder VALUES (?, ?)').run(process.pid, Date.now());
    lock.exec('COMMIT');
    return lock;
  } catch (err) {
    lock.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      throw new DatabaseInUseError(`the database ${file} is in use by another subagentd process; only one process may run on a database`);
    }
    throw new DatabaseNotWritableError(`cannot take the lock beside ${file}: ${(err as Error).message}`);
  }
}

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

/**
 * Opens (creating if needed) the SQLite file in WAL mode and applies the committed migrations.
 * `:memory:` is accepted for throwaway stores.
 */
export function openSqlite(file: string): Db {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const lock = file === ':memory:' ? null : lockDatabase(file);
  let sqlite: Database.Database | undefined;
  try {
    sqlite = new Database(file);
    sqlite.pragma('journal_mode = WAL');
    // NORMAL is durable across process crashes in WAL mode; only an OS crash can lose the last commits.
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    // What a purge or an erasure deletes is overwritten with zeros in the page, not merely marked
    // free: the file keeps no readable copy of a removed prompt or summary (truncateWal below
    // takes the copies out of the WAL).
    sqlite.pragma('secure_delete = ON');
    const conn = sqlite;
    migrate(drizzle(conn, { schema }), { migrationsFolder });
    probeWrite(conn, file);
    return {
      dialect: 'sqlite',
      sql: createSqliteClient(conn),
      location: file,
      sqlite: conn,
      probe: async () => void conn.pragma(`user_version = ${conn.pragma('user_version', { simple: true }) as number}`),
      close: async () => {
        conn.close();
        lock?.close();
      },
    };
  } catch (err) {
    sqlite?.close();
    lock?.close();
    throw err;
  }
}

/**
 * Copies the whole WAL into the database and empties the WAL file (a TRUNCATE checkpoint), so the
 * page images it still holds of content since removed (a purged prompt, an erased user's tasks)
 * are gone from disk too. Waits for nobody: false when a reader, the checkpointing thread or a
 * transaction of this connection is in the way (try again shortly).
 */
export function truncateWal(sqlite: Database.Database): boolean {
  if (sqlite.inTransaction) return false;
  const timeout = sqlite.pragma('busy_timeout', { simple: true }) as number;
  // Synchronous, on the event loop's thread: it must not wait the 5 s a write may.
  sqlite.pragma('busy_timeout = 20');
  try {
    const [result] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return result?.busy === 0;
  } catch {
    return false;
  } finally {
    sqlite.pragma(`busy_timeout = ${timeout}`);
  }
}

/** Refuses a database that opens but cannot be written, instead of failing every task later. */
function probeWrite(sqlite: Database.Database, file: string) {
  try {
    const version = sqlite.pragma('user_version', { simple: true }) as number;
    sqlite.pragma(`user_version = ${version}`);
  } catch (err) {
    throw new DatabaseNotWritableError(`the database ${file} cannot be written: ${(err as Error).message}`);
  }
}
