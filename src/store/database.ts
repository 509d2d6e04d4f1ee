import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import * as schema from './schema.ts';
import { createSqliteClient, type Dialect, type SqlClient } from './sql-client.ts';

/** An open database: the client the stores use, and what the engine needs around it. */
export interface Db {
  dialect: Dialect;
  sql: SqlClient;
  /** Where it is: the SQLite file (`:memory:` too) or the PostgreSQL URL without its password. */
  location: string;
  /** A small write that fails while the database cannot be written (the storage guard's probe). */
  probe(): Promise<void>;
  close(): Promise<void>;
  /**
   * PostgreSQL only: this instance among those sharing the database, and what the others say
   * (NOTIFY on the channels of cluster-store.ts, delivered in commit order; none are lost unless
   * the listening connection is, after which `onReconnect` listeners catch up).
   */
  cluster?: {
    instanceId: string;
    onNotification(listener: (channel: string, payload: string) => void): void;
    onReconnect(listener: () => void): void;
    /**
     * Told at once when a statement fails for a server that went away and is being tried again
     * (so health and admission say so while the driver waits for the server to come back).
     */
    onRetrying(listener: (err: unknown) => void): void;
  };
  /** SQLite only: the connection itself (benches and fault tests reach under the stores with it). */
  sqlite?: Database.Database;
}

/** Another process (or another app of this one) already runs on this database. */
export class DatabaseInUseError extends Error {}
/** The database cannot be written (read-only file or folder, full disk, ...). */
export class DatabaseNotWritableError extends Error {}

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

/** Is `location` a PostgreSQL URL (`postgres://` or `postgresql://`) rather than a SQLite file? */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location);

/**
 * Opens the database at `location`: a PostgreSQL URL (`DATABASE_URL`), or a SQLite file
 * (`DATABASE_PATH`, `:memory:` too). Either way the committed migrations of its engine are applied.
 */
export async function openDatabase(location: string, instanceId = `${hostname()}:${process.pid}`): Promise<Db> {
  if (isPostgresUrl(location)) {
    const { openPostgres } = await import('./postgres.ts');
    return openPostgres(location, instanceId);
  }
  return openSqlite(location);
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

/** Closes the database and releases this process's lock on it. */
export function closeDatabase(db: Db): Promise<void> {
  return db.close();
}
