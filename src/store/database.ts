import { hostname } from 'node:os';
import type { Db } from './db.ts';
import type { PostgresOptions } from './postgres.ts';
import { openSqlite } from './sqlite.ts';

export { DatabaseInUseError, DatabaseNotWritableError, type Db } from './db.ts';
export { openSqlite } from './sqlite.ts';

/** Is `location` a PostgreSQL URL (`postgres://` or `postgresql://`) rather than a SQLite file? */
export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//i.test(location);

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

/** Closes the database and releases this process's lock on it. */
export function closeDatabase(db: Db): Promise<void> {
  return db.close();
}
