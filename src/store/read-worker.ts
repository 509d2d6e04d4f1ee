import { Worker } from 'node:worker_threads';
import type { Db } from './database.ts';

/** Runs read-only SQL and answers rows as arrays of column values, in select order. */
export interface SqlReader {
  all(query: { sql: string; params: unknown[] }): Promise<unknown[][]>;
  /**
   * The rows as a JSON array of objects named `names`: the first column a string, the others
   * numbers. With `limit`, the query asks for one row more: past `limit` rows, the first column
   * of the last row kept is the `nextCursor`.
   */
  json(query: { sql: string; params: unknown[] }, names: string[], limit?: number): Promise<JsonPage>;
  close(): Promise<void>;
}

export interface JsonPage {
  json: string;
  nextCursor: string | null;
}

/** How often the reader's thread checkpoints the WAL of a SQLite file (see sqlite-read-thread.mjs). */
const CHECKPOINT_MS = 200;

/**
 * A reader on a worker thread with its own connection to the SQLite file (see
 * sqlite-read-thread.mjs), which also takes the checkpoints of the WAL off the event loop. PostgreSQL reads are asynchronous already, and an in-memory SQLite
 * database cannot be seen from another connection: those read through the database's own client.
 */
export function createSqlReader(db: Db): SqlReader {
  if (db.dialect !== 'sqlite' || db.location === ':memory:') {
    return {
      all: ({ sql, params }) => db.sql.rows(sql, params),
      json: async ({ sql, params }, names, limit) => {
        let rows = await db.sql.rows(sql, params);
        const more = limit !== undefined && rows.length > limit;
        if (more) rows = rows.slice(0, limit);
        const objects = rows.map((row) => Object.fromEntries(names.map((n, i) => [n, i === 0 ? String(row[i]) : Number(row[i] ?? 0)])));
        return { json: JSON.stringify(objects), nextCursor: more ? String(rows.at(-1)![0]) : null };
      },
      close: async () => {},
    };
  }
  const file = db.location;
  const worker = new Worker(new URL('./sqlite-read-thread.mjs', import.meta.url), { workerData: { file, checkpointMs: CHECKPOINT_MS } });
  worker.unref();
  let next = 0;
  const waiting = new Map<number, { resolve: (answer: never) => void; reject: (err: Error) => void }>();
  /** The thread checkpoints: the main connection must again if it stops (SQLite's default, 1,000 pages). */
  let offloaded = false;
  const checkpointHere = () => {
    if (!offloaded) return;
    offloaded = false;
    if (db.sqlite?.open) db.sqlite.pragma('wal_autocheckpoint = 1000');
  };
  worker.on('exit', checkpointHere);
  worker.on(
    'message',
    ({
      id,
      rows,
      json,
      nextCursor,
      error,
      checkpointing,
    }: {
      id: number;
      rows?: unknown[][];
      json?: string;
      nextCursor?: string | null;
      error?: string;
      checkpointing?: boolean;
    }) => {
      if (checkpointing) {
        // Said as the database was being closed: nothing to hand over.
        if (!db.sqlite?.open) return;
        offloaded = true;
        db.sqlite.pragma('wal_autocheckpoint = 0');
        return;
      }
      const w = waiting.get(id);
      waiting.delete(id);
      if (error !== undefined) w?.reject(new Error(error));
      else w?.resolve((json !== undefined ? { json, nextCursor: nextCursor ?? null } : rows) as never);
    },
  );
  const ask = <T>(message: object): Promise<T> => {
    const id = ++next;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve, reject });
      worker.postMessage({ id, ...message });
    });
  };
  worker.on('error', (err) => {
    checkpointHere();
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  });
  return {
    all: ({ sql, params }) => ask<unknown[][]>({ sql, params }),
    json: ({ sql, params }, names, limit) => ask<JsonPage>({ sql, params, names, limit }),
    async close() {
      checkpointHere();
      await worker.terminate();
    },
  };
}
