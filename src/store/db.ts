import type Database from 'better-sqlite3';
import type { Dialect, SqlClient } from './sql-client.ts';

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
