import type Database from 'better-sqlite3';

export type Dialect = 'sqlite' | 'postgres';

/**
 * What the stores need of a database, the same on SQLite and PostgreSQL: statements written once
 * with `?` placeholders (PostgreSQL's client numbers them), rows as plain objects named by the
 * statement's columns, and transactions whose body gets the client it must use.
 *
 * A transaction body does database work only: on SQLite it holds the one connection's write lock
 * while it runs, so awaiting anything else (a request, a timer) in it would stall every write.
 */
export interface SqlClient {
  readonly dialect: Dialect;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  get<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  /** Rows as arrays of column values, in select order (reports that build their own shapes). */
  rows(sql: string, params?: readonly unknown[]): Promise<unknown[][]>;
  /**
   * Inside a transaction, a write whose answer nobody reads: on PostgreSQL it goes out at once,
   * without waiting for the statements before it to be answered (the server runs them in the
   * order sent), so a transaction's writes between two reads cost one round trip, not one each.
   * If it fails, the transaction fails with its error (at the next statement awaited, or at its
   * commit). Outside a transaction it throws: nothing would wait for it.
   */
  send(sql: string, params?: readonly unknown[]): void;
  /**
   * Inside a transaction, a statement whose rows are read once the transaction has committed: it
   * goes out at once, as `send` does, and its failure is the transaction's; the promise answers
   * its rows (as `all` does) and is awaited after the commit, so the statement costs no round
   * trip of its own. Outside a transaction it throws.
   */
  defer<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs `body` in one transaction; inside one already, `body` joins it. */
  transaction<R>(body: (tx: SqlClient) => Promise<R>): Promise<R>;
  /** What this client sent since it opened (the benches and `/metrics` read it). */
  readonly counts: SqlCounts;
}

/**
 * Statements sent to the database (BEGIN and COMMIT included) and transactions committed, since
 * the client opened: one object per database, shared by its transaction clients.
 */
export interface SqlCounts {
  statements: number;
  transactions: number;
}

/** `select ... where x = ?` as drizzle's `toSQL()` answers it. */
export interface Query {
  sql: string;
  params: unknown[];
}

/**
 * SQLite through better-sqlite3 (its calls are synchronous; they are answered as settled
 * promises). Statements are prepared once per text. One connection means one transaction at a
 * time: a transaction takes the connection's turn, and statements from outside it wait for their
 * turn too, so they neither land in it (and roll back with it) nor read what it has not committed.
 */
export function createSqliteClient(sqlite: Database.Database): SqlClient {
  const counts: SqlCounts = { statements: 0, transactions: 0 };
  const prepared = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    counts.statements++;
    let s = prepared.get(sql);
    if (!s) prepared.set(sql, (s = sqlite.prepare(sql)));
    return s;
  };
  const exec = {
    run: (sql: string, params: readonly unknown[] = []) => prepare(sql).run(...params).changes,
    all: (sql: string, params: readonly unknown[] = []) => {
      const s = prepare(sql);
      return (s.reader ? s.all(...params) : (s.run(...params), [])) as never[];
    },
    get: (sql: string, params: readonly unknown[] = []) => prepare(sql).get(...params) as never,
    rows: (sql: string, params: readonly unknown[] = []) =>
      prepare(sql)
        .raw(true)
        .all(...params) as unknown[][],
  };

  /** Settles once the transaction holding the connection (if any) has ended. */
  let turn: Promise<void> = Promise.resolve();
  let held = false;
  const later = <T>(fn: () => T): Promise<T> => (held ? turn.then(() => later(fn)) : settle(fn));

  const inside: SqlClient = {
    dialect: 'sqlite',
    run: async (sql, params) => exec.run(sql, params),
    all: async (sql, params) => exec.all(sql, params),
    get: async (sql, params) => exec.get(sql, params),
    rows: async (sql, params) => exec.rows(sql, params),
    send: (sql, params) => void exec.run(sql, params),
    // Run now: a failure throws here, inside the transaction's body.
    defer: (sql, params) => Promise.resolve(exec.all(sql, params)),
    transaction: (body) => body(inside),
    counts,
  };

  return {
    dialect: 'sqlite',
    run: (sql, params) => later(() => exec.run(sql, params)),
    all: (sql, params) => later(() => exec.all(sql, params)),
    get: (sql, params) => later(() => exec.get(sql, params)),
    rows: (sql, params) => later(() => exec.rows(sql, params)),
    send: outsideTransaction,
    defer: outsideTransaction,
    counts,
    async transaction(body) {
      while (held) await turn;
      held = true;
      let release!: () => void;
      turn = new Promise((r) => (release = r));
      try {
        sqlite.exec('BEGIN IMMEDIATE');
        counts.statements++;
        try {
          const result = await body(inside);
          sqlite.exec('COMMIT');
          counts.statements++;
          counts.transactions++;
          return result;
        } catch (err) {
          if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
          throw err;
        }
      } finally {
        held = false;
        release();
      }
    },
  };
}

/** `send` of a client that is not a transaction's. */
export function outsideTransaction(): never {
  throw new Error('send and defer are for statements inside a transaction');
}

function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
