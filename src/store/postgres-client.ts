/**
 * The SqlClient of a PostgreSQL pool or of one transaction's connection: `?` placeholders
 * numbered, statements prepared on the server, reads sent again while it restarts, a
 * transaction's statements pipelined with its first failure kept.
 */
import type pg from 'pg';
import { outsideTransaction, type SqlClient, type SqlCounts } from './sql-client.ts';
import { isRead, notApplied, retrying, transient, unprepared, type RetryWatch } from './postgres-retry.ts';

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
export interface Preparing {
  on: boolean;
}
function statementOf(preparing: Preparing, sql: string, params: readonly unknown[], rowMode?: 'array'): pg.QueryConfig {
  const text = toPg(sql);
  let name = preparing.on ? names.get(text) : undefined;
  if (preparing.on && name === undefined && params.length <= MAX_NAMED_PARAMS && names.size < MAX_NAMED) names.set(text, (name = `subagentd_${names.size}`));
  return { text, values: params as unknown[], ...(name !== undefined && { name }), ...(rowMode && { rowMode }) } as pg.QueryConfig;
}

/**
 * What went wrong first in a transaction whose statements are pipelined: after a failed statement
 * the server refuses every later one of the transaction ("current transaction is aborted"), and
 * what the caller must hear of is the first failure (a full disk, a conflict to retry), not those.
 */
export class FirstFailure {
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
export function clientOver(
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
