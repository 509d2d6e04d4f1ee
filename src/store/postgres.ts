import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { DatabaseInUseError, type Db } from './db.ts';
import type { SqlCounts } from './sql-client.ts';
import { clientOver, type Preparing } from './postgres-client.ts';
import { takeInstanceLock } from './postgres-lock.ts';
import { InstanceLockLost, type RetryWatch } from './postgres-retry.ts';
import { postgresTransaction } from './postgres-transaction.ts';

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations-pg');

/** Any number to every migration run of subagentd, so instances starting together migrate one at a time. */
const MIGRATION_LOCK = 0x5a6d_0001;

/**
 * BIGINT and the sums over it come back as numbers, as SQLite answers them: epoch milliseconds
 * and token counts stay far below 2^53. Set per pool, not on the driver's global parsers.
 */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === (pg.types.builtins.INT8 as number) || oid === (pg.types.builtins.NUMERIC as number)) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text') as (v: string) => unknown;
  },
};

/** The database's URL with its password hidden, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

export interface PostgresOptions {
  /**
   * The server ends a session left idle inside a transaction this long (its process paused or
   * hung mid-transaction), so the row locks it holds cannot keep the other instances from taking
   * its tasks over (they skip locked rows), nor stall their writes: see `idleInTransactionFor`
   * (database.ts).
   */
  idleInTransactionMs?: number;
  /** How long a statement is tried again while the server is away (`retryWindowFor`, postgres-retry.ts). */
  retryWindowMs?: number;
}

/**
 * The pool of statement connections. No error of one of its connections can end the process: an
 * idle one the server dropped is replaced by the pool; a checked-out one fails its statements,
 * which the code that took it handles. Every connection carries a listener from its first moment
 * for the gap between: the server's farewell (a restart's 57P01) can come in the same packet as
 * the end of the connection's start, after the pool has taken its idle listener away and before
 * the code that asked for the connection runs (a promise's continuation waits for the packet's
 * end), and an 'error' event without a listener throws.
 */
export function createPool(url: string, options: PostgresOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    types,
    // A statement goes out without waiting for the answers of those before it on its connection
    // (`send`); only a transaction has more than one statement in flight.
    pipeline: true,
    max: 10,
    connectionTimeoutMillis: 10_000,
    ...(options.idleInTransactionMs && { idle_in_transaction_session_timeout: options.idleInTransactionMs }),
  });
  pool.on('error', () => undefined);
  pool.on('connect', (conn) => conn.on('error', () => undefined));
  return pool;
}

/**
 * Opens a PostgreSQL database through a connection pool and applies `migrations-pg/` (under an
 * advisory lock, so processes starting together do not race).
 */
export async function openPostgres(url: string, instanceId: string, options: PostgresOptions = {}): Promise<Db> {
  // Several instances share the database; each runs under its own id, and one process per id: a
  // second one would take the first one's running tasks for a crash's leftovers. A session lock
  // on a connection of its own, which the server releases when the process (and so the
  // connection) dies; the same connection LISTENs. While it is lost, every statement fails as a
  // storage fault (the storage guard stops the tasks and holds the writes; other instances take
  // them over once their leases expire), and the lock is taken again once the server answers; if
  // another process took it meanwhile, this one stays refused.
  const listeners: Array<(channel: string, payload: string) => void> = [];
  const reconnects: Array<() => void> = [];
  const onNotification = (channel: string, payload: string) => {
    for (const l of listeners) l(channel, payload);
  };
  let closing = false;
  let lost: InstanceLockLost | null = null;
  let retaking = false;
  const onLost = () => {
    if (closing) return;
    lost = new InstanceLockLost("the connection holding this process's lock on the database was lost; retrying");
    void retake();
  };
  async function retake() {
    if (retaking) return;
    retaking = true;
    try {
      while (!closing && lost) {
        try {
          const again = await takeInstanceLock(url, instanceId, onLost, onNotification);
          if (again) {
            holder = again;
            lost = null;
            // Notifications sent while it was cut off are lost: whoever listens catches up.
            for (const r of reconnects) r();
          } else {
            lost = new InstanceLockLost('another subagentd process took the database while this one was cut off from it');
          }
        } catch {
          // The server is not back yet.
        }
        if (lost) await new Promise((r) => setTimeout(r, 200).unref());
      }
    } finally {
      retaking = false;
    }
  }
  const check = () => {
    if (lost) throw lost;
  };
  let holder = await takeInstanceLock(url, instanceId, onLost, onNotification);
  if (!holder) {
    throw new DatabaseInUseError(
      `another subagentd process runs as instance "${instanceId}" on the database ${redactUrl(url)}; give each instance its own INSTANCE_ID`,
    );
  }
  const pool = createPool(url, options);
  try {
    const lock = await pool.connect();
    const unheard = () => undefined;
    lock.on('error', unheard);
    try {
      await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      try {
        await migrate(drizzle(lock), { migrationsFolder });
      } finally {
        await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    } finally {
      lock.removeListener('error', unheard);
      lock.release();
    }
  } catch (err) {
    closing = true;
    await pool.end();
    await holder.end();
    throw err;
  }

  const counts: SqlCounts = { statements: 0, transactions: 0 };
  const preparing: Preparing = { on: true };
  const retryListeners: Array<(err: unknown) => void> = [];
  const watch: RetryWatch = {
    windowMs: options.retryWindowMs,
    stopped: () => closing,
    retrying: (err) => {
      for (const l of retryListeners) l(err);
    },
  };

  const transaction = postgresTransaction({ pool, check, watch, counts, preparing });

  return {
    dialect: 'postgres',
    sql: clientOver(pool, transaction, check, watch, null, counts, preparing),
    location: redactUrl(url),
    cluster: {
      instanceId,
      onNotification: (listener) => listeners.push(listener),
      onReconnect: (listener) => reconnects.push(listener),
      onRetrying: (listener) => retryListeners.push(listener),
    },
    // Assigning a transaction id fails where nothing can be written (a read-only standby, say).
    probe: async () => {
      check();
      await pool.query('SELECT txid_current()');
    },
    close: async () => {
      closing = true;
      await pool.end();
      await holder?.end();
    },
  };
}
