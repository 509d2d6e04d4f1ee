import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { DatabaseInUseError, type Db } from './db.ts';
import { outsideTransaction, type SqlClient, type SqlCounts } from './sql-client.ts';
import { CHANNELS } from './cluster-store.ts';
import { storageFaultOf } from './storage-guard.ts';

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations-pg');

/** Any number to every migration run of subagentd, so instances starting together migrate one at a time. */
const MIGRATION_LOCK = 0x5a6d_0001;
/** With the hash of the instance id: held by the one process that runs as that instance (see `openPostgres`). */
const INSTANCE_LOCK = 0x5a6d_0002;

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

/** `?` placeholders numbered as PostgreSQL wants them (`$1`, `$2`...); the stores' SQL holds no `?` in literals. */
const numbered = new Map<string, string>();
function toPg(sql: string): string {
  let out = numbered.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/g, () => `$${++n}`);
    if (numbered.size < 10_000) numbered.set(sql, out);
  }
  return out;
}

/**
 * Statements prepared on the server (named): it parses and plans each text once per connection,
 * not at every run, which halved the server's share of a step here (a 4-call task sends about
 * 125 statements, a few dozen texts). A multi-row INSERT, whose text changes with its row count,
 * stays unnamed past MAX_NAMED_PARAMS parameters, and past MAX_NAMED texts nothing more is named
 * (each holds a little memory on every connection of the server).
 */
const names = new Map<string, string>();
const MAX_NAMED = 500;
const MAX_NAMED_PARAMS = 64;
/** Whether a database's statements are prepared: until its server loses one (see `unprepared`). */
interface Preparing {
  on: boolean;
}
function statementOf(preparing: Preparing, sql: string, params: readonly unknown[], rowMode?: 'array'): pg.QueryConfig {
  const text = toPg(sql);
  let name = preparing.on ? names.get(text) : undefined;
  if (preparing.on && name === undefined && params.length <= MAX_NAMED_PARAMS && names.size < MAX_NAMED) names.set(text, (name = `subagentd_${names.size}`));
  return { text, values: params as unknown[], ...(name !== undefined && { name }), ...(rowMode && { rowMode }) } as pg.QueryConfig;
}

/**
 * The server does not hold what this connection prepared ("prepared statement ... does not
 * exist", or "already exists" for one it did not prepare): a pooler between them (PgBouncer in
 * transaction mode) hands each transaction another server connection. The statement did not run:
 * it is sent again, and from then on nothing of that database is prepared.
 */
function unprepared(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '26000' || code === '42P05';
}

/**
 * A prepared statement whose result's columns changed since it was prepared (another instance's
 * migration altered a table it reads with `*`): the server refused it before running it. The
 * connection is dropped (its prepared statements with it) and the statement sent again.
 */
export function stalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === '0A000' && typeof e.message === 'string' && /cached plan must not change result type/.test(e.message);
}

/**
 * How long a statement is tried again while the server restarts or fails over (a managed
 * database's failover takes seconds); past it, the error goes on as a storage fault and the
 * storage guard holds the writes. Well under TASK_LEASE_MS's default, so a lease outlives it.
 */
const RETRY_WINDOW_MS = 12_000;

/**
 * Errors after which a statement certainly did not take effect, so it can be sent again: it was
 * never sent (no connection, the server starting or shutting down, too many connections, this
 * process's lock being taken again), or the server answered it with an error that rolled it back
 * (terminated by an administrator, a serialization failure, a deadlock).
 */
export function notApplied(err: unknown): boolean {
  if (err instanceof InstanceLockLost || stalePlan(err) || unprepared(err)) return true;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^(57P01|57P02|57P03|53300|40001|40P01|08001|08004|ECONNREFUSED)$/.test(code)) return true;
  const message = (err as { message?: unknown })?.message;
  return typeof message === 'string' && /^timeout exceeded when trying to connect/.test(message);
}

/**
 * Errors of a server that went away or is not there yet, after which a read can be sent again:
 * those above and a connection lost under the statement (which may have run: only a read is
 * repeated after it).
 */
function transient(err: unknown): boolean {
  if (notApplied(err)) return true;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string') return /^(08000|08003|08006|57P0[1-3]|ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code);
  return storageFaultOf(err) === 'storage_unavailable';
}

/** A statement that only reads (no lock, no sequence, no function with effects): safe to repeat after any transient error. */
function isRead(sql: string): boolean {
  return /^\s*SELECT\b/i.test(sql) && !/\bFOR\s+(UPDATE|SHARE|NO\s+KEY|KEY)\b|pg_advisory|nextval|txid_current|pg_notify|subagentd_/i.test(sql);
}

interface RetryWatch {
  /** The database is being closed: nothing is tried again. */
  stopped(): boolean;
  /** A statement is tried again after `err`. */
  retrying(err: unknown): void;
}

/**
 * Runs `op` until it succeeds, fails with an error `canRepeat` refuses, or RETRY_WINDOW_MS has
 * passed (waiting 50 ms, then twice as long each time, at most a second).
 */
async function retrying<T>(op: () => Promise<T>, canRepeat: (err: unknown) => boolean, watch: RetryWatch): Promise<T> {
  const deadline = Date.now() + RETRY_WINDOW_MS;
  for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
    try {
      return await op();
    } catch (err) {
      if (watch.stopped() || !canRepeat(err) || Date.now() + wait > deadline) throw err;
      watch.retrying(err);
      await new Promise((r) => setTimeout(r, wait).unref());
    }
  }
}

/**
 * What went wrong first in a transaction whose statements are pipelined: after a failed statement
 * the server refuses every later one of the transaction ("current transaction is aborted"), and
 * what the caller must hear of is the first failure (a full disk, a conflict to retry), not those.
 */
class FirstFailure {
  error: unknown = undefined;
  failed = false;
  /** The body was told of it (an awaited statement threw it): if the body went on, it chose to. */
  told = false;
  /**
   * Settles once every statement sent without waiting so far has had its failure (if any)
   * recorded. The server answers in order, but promise callbacks of one socket read settle in no fixed order:
   * before a later answer is looked at, the earlier ones are waited for (`after`).
   */
  private sent: Promise<unknown> = Promise.resolve();
  /** Records `err` if it is the first; answers the first. */
  of(err: unknown): unknown {
    if (!this.failed) {
      this.failed = true;
      this.error = err;
    }
    return this.error;
  }
  /** A statement sent without waiting: its failure is recorded. */
  track(answer: Promise<unknown>): void {
    // Chained, not listed: `after` runs for every awaited statement, and waits on one promise.
    this.sent = Promise.all([this.sent, answer.then(noop, (err: unknown) => void this.of(err))]);
  }
  /** Resolves once the failures of the statements sent so far are recorded. */
  after(): Promise<unknown> {
    return this.sent;
  }
}
const noop = () => undefined;

/**
 * A client over the pool (no `failure`: each statement sent again while the server restarts,
 * where that is safe) or over one transaction's connection (no retry: the transaction is lost
 * with its connection; its statements are pipelined, `failure` keeps the first error). `check`
 * throws while this process may not write (its instance lock is lost).
 */
function clientOver(
  q: pg.Pool | pg.PoolClient,
  transaction: SqlClient['transaction'],
  check: () => void,
  watch: RetryWatch,
  failure: FirstFailure | null,
  counts: SqlCounts,
  preparing: Preparing,
): SqlClient {
  const send = async (config: pg.QueryConfig) => {
    check();
    counts.statements++;
    try {
      // The pool drops a connection whose statement failed (a stale plan's included). Sent
      // again after the server lost a prepared statement, it goes unnamed.
      return await q.query(preparing.on || config.name === undefined ? config : { ...config, name: undefined });
    } catch (err) {
      if (unprepared(err)) preparing.on = false;
      throw err;
    }
  };
  /** Outside a transaction: sent again while the server restarts, where that is safe. */
  const query = (config: pg.QueryConfig) => {
    return retrying(() => send(config), isRead(config.text) ? transient : notApplied, watch);
  };
  /**
   * A statement whose answer the body awaits. In a transaction, a failure is the first one's (the
   * writes sent before it first), and the body is told of it (see `FirstFailure.told`).
   */
  const awaited = (config: pg.QueryConfig) => {
    if (!failure) return query(config);
    const earlier = failure.after();
    return send(config).catch(async (err: unknown) => {
      await earlier;
      const first = failure.of(err);
      failure.told = true;
      throw first;
    });
  };
  const client: SqlClient = {
    dialect: 'postgres',
    run: async (sql, params = []) => (await awaited(statementOf(preparing, sql, params))).rowCount ?? 0,
    all: async <T>(sql: string, params: readonly unknown[] = []) => (await awaited(statementOf(preparing, sql, params))).rows as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) => (await awaited(statementOf(preparing, sql, params))).rows[0] as T | undefined,
    rows: async (sql, params = []) => (await awaited(statementOf(preparing, sql, params, 'array'))).rows as unknown[][],
    // Its failure is the transaction's (kept in `failure`): nothing else need hear of it.
    send: failure ? (sql, params = []) => failure.track(send(statementOf(preparing, sql, params))) : outsideTransaction,
    defer: failure
      ? <T>(sql: string, params: readonly unknown[] = []) => {
          const answer = send(statementOf(preparing, sql, params));
          failure.track(answer);
          const rows = answer.then((r) => r.rows as T[]);
          // Read after the commit, or never when the transaction failed (with this error or another).
          rows.catch(noop);
          return rows;
        }
      : outsideTransaction,
    transaction,
    counts,
  };
  return client;
}

/** COMMIT answered ROLLBACK: a statement of the transaction had failed. */
class TransactionRolledBack extends Error {
  readonly code = '40000';
  constructor(cause: unknown) {
    super('the transaction was rolled back by the server (a statement in it failed)', { cause });
  }
}

/** The lock's connection is gone: a storage fault (connection failure) until it is taken again. */
class InstanceLockLost extends Error {
  readonly code = '08006';
}

/**
 * Takes the lock of `instanceId` on a connection of its own, and listens there to what the other
 * instances say; null when another process holds it. The server releases a session lock when its
 * connection ends, so the process that holds it must be connected: if the connection drops (a
 * server restart, a network cut), `onLost` is told.
 */
async function takeInstanceLock(
  url: string,
  instanceId: string,
  onLost: () => void,
  onNotification: (channel: string, payload: string) => void,
): Promise<pg.Client | null> {
  const holder = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  holder.on('error', () => undefined);
  try {
    await holder.connect();
    const held =
      (await holder.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS held', [INSTANCE_LOCK, instanceId])).rows[0]?.held === true;
    if (!held) {
      await holder.end();
      return null;
    }
    holder.on('notification', (n) => onNotification(n.channel, n.payload ?? ''));
    for (const channel of Object.values(CHANNELS)) await holder.query(`LISTEN ${channel}`);
  } catch (err) {
    // A server that went away halfway (restarting): the connection, and the lock it may hold, go
    // with it, so the next try (a start that waits for the database) does not find itself in use.
    await holder.end().catch(() => undefined);
    throw err;
  }
  holder.once('end', onLost);
  return holder;
}

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
  // An idle connection the server dropped is replaced by the pool; its error must not kill the process.
  pool.on('error', () => undefined);
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
    stopped: () => closing,
    retrying: (err) => {
      for (const l of retryListeners) l(err);
    },
  };

  /**
   * A connection of the pool, taken again while the server restarts. While it is checked out, the
   * connection's errors (the server ending it) are caught here: the pool's own listener covers
   * only idle connections, and an unheard 'error' event would end the process.
   */
  async function connect(): Promise<{ conn: pg.PoolClient; onError: (err: Error) => void; broken: { yes: boolean } }> {
    return retrying(
      async () => {
        check();
        const conn = await pool.connect();
        const broken = { yes: false };
        const onError = () => (broken.yes = true);
        conn.on('error', onError);
        return { conn, onError, broken };
      },
      transient,
      watch,
    );
  }

  /** Errors of a BEGIN: after one, nothing of its transaction ran, and the transaction is tried again. */
  const beginFailures = new WeakSet<object>();
  const failedToBegin = (err: unknown) => typeof err === 'object' && err !== null && beginFailures.has(err) && transient(err);
  /** Nothing of the transaction was written: it is tried again, body included (bodies do database work only). */
  const notBegun = (err: unknown) => failedToBegin(err) || stalePlan(err) || unprepared(err);

  function transaction<R>(body: (tx: SqlClient) => Promise<R>): Promise<R> {
    return retrying(() => attempt(body), notBegun, watch);
  }

  async function attempt<R>(body: (tx: SqlClient) => Promise<R>): Promise<R> {
    const { conn, onError, broken: lostConnection } = await connect();
    let broken = false;
    try {
      const failure = new FirstFailure();
      // BEGIN goes out with the body's first statement (one round trip for both). A plain BEGIN
      // fails only with its connection (the server gone or going), and then nothing sent after it
      // ran either: the transaction is tried again whole.
      counts.statements++;
      failure.track(
        conn.query('BEGIN').catch((err: unknown) => {
          if (!failure.failed && typeof err === 'object' && err !== null) beginFailures.add(err);
          throw err;
        }),
      );
      const tx = clientOver(conn, (inner) => inner(tx), check, watch, failure, counts, preparing);
      try {
        const result = await body(tx);
        // A transaction in which a statement failed (even one whose error the body caught, or one
        // sent without waiting) ends rolled back, and the server answers COMMIT with ROLLBACK, not
        // an error: never taken for written (its events would be published though not stored).
        counts.statements++;
        const committed = await conn.query('COMMIT');
        await failure.after();
        // A statement sent without waiting failed: its error is the transaction's.
        if (failure.failed && !failure.told) throw failure.error;
        if (committed.command === 'ROLLBACK') throw new TransactionRolledBack(failure.error);
        counts.transactions++;
        return result;
      } catch (err) {
        await conn.query('ROLLBACK').catch(() => (broken = true));
        await failure.after();
        // Its prepared statements are stale: the connection goes, and with it they do.
        if (stalePlan(failure.error) || stalePlan(err)) broken = true;
        // The body may have taken a statement's failure for an answer: a failed BEGIN is the cause.
        throw failure.failed && notBegun(failure.error) ? failure.error : err;
      }
    } finally {
      conn.removeListener('error', onError);
      conn.release(broken || lostConnection.yes);
    }
  }

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
