import { Worker } from 'node:worker_threads';
import type { Db } from './database.ts';

/** Runs read-only SQL and answers rows as arrays of column values, in select order. */
export interface SqlReader {
  all(query: { sql: string; params: unknown[] }): Promise<unknown[][]>;
  close(): Promise<void>;
}

/**
 * A reader on a worker thread with its own connection to `file` (see sqlite-read-thread.mjs). For an
 * in-memory database, which another connection cannot see, it reads on the main connection.
 */
export function createSqlReader(db: Db, file: string): SqlReader {
  if (file === ':memory:') {
    return {
      all: async ({ sql, params }) => db.$client.prepare(sql).raw(true).all(...params) as unknown[][],
      close: async () => {},
    };
  }
  const worker = new Worker(new URL('./sqlite-read-thread.mjs', import.meta.url), { workerData: { file } });
  worker.unref();
  let next = 0;
  const waiting = new Map<number, { resolve: (rows: unknown[][]) => void; reject: (err: Error) => void }>();
  worker.on('message', ({ id, rows, error }: { id: number; rows?: unknown[][]; error?: string }) => {
    const w = waiting.get(id);
    waiting.delete(id);
    if (error !== undefined) w?.reject(new Error(error));
    else w?.resolve(rows!);
  });
  worker.on('error', (err) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  });
  return {
    all({ sql, params }) {
      const id = ++next;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, sql, params });
      });
    },
    async close() {
      await worker.terminate();
    },
  };
}
