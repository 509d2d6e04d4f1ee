import type pg from 'pg';
import { clientOver, FirstFailure, type Preparing } from './postgres-client.ts';
import { retrying, stalePlan, transient, unprepared, type RetryWatch } from './postgres-retry.ts';
import type { SqlClient, SqlCounts } from './sql-client.ts';

/** COMMIT answered ROLLBACK: a statement of the transaction had failed. */
class TransactionRolledBack extends Error {
  readonly code = '40000';
  constructor(cause: unknown) {
    super('the transaction was rolled back by the server (a statement in it failed)', { cause });
  }
}

interface TransactionOptions {
  pool: pg.Pool;
  /** Throws while this process may not write (its instance lock is lost). */
  check: () => void;
  watch: RetryWatch;
  counts: SqlCounts;
  preparing: Preparing;
}

/**
 * A database's `transaction`: BEGIN pipelined with the body's first statement, COMMIT checked for
 * a silent ROLLBACK, and the whole tried again (body included) when nothing of it was written.
 */
export function postgresTransaction({ pool, check, watch, counts, preparing }: TransactionOptions): SqlClient['transaction'] {
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

  return transaction;
}
