import { hostname } from 'node:os';
import type { Db } from './db.ts';
import type { PostgresOptions } from './postgres.ts';
import { openSqlite, truncateWal } from './sqlite.ts';

export { DatabaseInUseError, DatabaseNotWritableError, type Db } from './db.ts';
export { openSqlite } from './sqlite.ts';
export { retryWindowFor } from './postgres-retry.ts';

/** Is `location` a PostgreSQL URL (`postgres://` or `postgresql://`) rather than a SQLite file? */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location);

/**
 * How long a session may sit idle inside a transaction, for a task lease of `leaseMs`: a third of
 * it, at most 5 s (at least 250 ms). Every instance writes the same roll-up rows, so a process
 * paused mid-transaction holds up the others' writes, and through their own task rows (locked by
 * those waiting writes) their lease renewals: ended within a third of a lease, the renewal that
 * waited on it still lands before the leases run out. Our transactions send their statements back
 * to back; idle that long, the process is stalled, and its write is tried again (a storage fault).
 */
export function idleInTransactionFor(leaseMs: number): number {
  return Math.max(250, Math.min(5000, Math.floor(leaseMs / 3)));
}

/**
 * Opens the database at `location`: a PostgreSQL URL (`DATABASE_URL`), or a SQLite file
 * (`DATABASE_PATH`, `:memory:` too). Either way the committed migrations of its engine are applied.
 */
export async function openDatabase(location: string, instanceId = `${hostname()}:${process.pid}`, options: PostgresOptions = {}): Promise<Db> {
  if (isPostgresUrl(location)) {
    const { openPostgres } = await import('./postgres.ts');
    return openPostgres(location, instanceId, options);
  }
  return openSqlite(location);
}

/** How many times, and how far apart, a scrub tries to empty the WAL while something is in its way. */
const SCRUB_TRIES = 50;
const SCRUB_PAUSE_MS = 20;

/**
 * After content was removed (a purge, an erasure): on SQLite, its old bytes are taken out of the
 * WAL file too (the database file's pages were zeroed as they were freed, `secure_delete`); true
 * once done, false when the WAL stayed busy for up to two seconds (the next scrub, or the next start,
 * empties it). On PostgreSQL there is nothing to do here: removed rows stay in the table's files
 * until VACUUM reuses their space (see docs/reference.md).
 */
export async function scrubDatabase(db: Db): Promise<boolean> {
  const { sqlite } = db;
  if (!sqlite || db.location === ':memory:') return true;
  for (let i = 0; i < SCRUB_TRIES; i++) {
    if (!sqlite.open) return false;
    if (truncateWal(sqlite)) return true;
    await new Promise((r) => setTimeout(r, SCRUB_PAUSE_MS));
  }
  return false;
}

/** Closes the database and releases this process's lock on it. */
export function closeDatabase(db: Db): Promise<void> {
  return db.close();
}
