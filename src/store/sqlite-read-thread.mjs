// A read-only SQLite connection on its own thread, so that long aggregate reads (usage over
// millions of records) never block the service's event loop. Plain JavaScript: it runs as a
// worker thread whatever loader (tsx, vitest) the main thread uses. WAL lets it read while the
// main connection writes.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
// Room for the roll-up and record pages the sums read (the default cache holds 2 MB).
db.pragma('cache_size = -65536');
const statements = new Map();

/** Rows as one JSON array of objects: the first column a string key, the others numbers (sums). */
function toJson(rows, names) {
  const parts = rows.map((row) => {
    let out = `{${JSON.stringify(names[0])}:${JSON.stringify(String(row[0]))}`;
    for (let i = 1; i < names.length; i++) out += `,${JSON.stringify(names[i])}:${Number(row[i] ?? 0)}`;
    return `${out}}`;
  });
  return `[${parts.join(',')}]`;
}

// Checkpoints: the main connection writes with its automatic checkpoints off once this thread
// says it checkpoints (read-worker.ts), and a connection of this thread copies the WAL into the
// database every `checkpointMs`: the fsyncs of a checkpoint (milliseconds each, tens on a busy
// disk) never stall the service's event loop. PASSIVE: it waits for nobody and nobody waits for it.
if (workerData.checkpointMs) {
  try {
    const writer = new Database(workerData.file, { fileMustExist: true });
    writer.pragma('busy_timeout = 0');
    setInterval(() => {
      try {
        writer.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // Busy or failing now: the next turn tries again (the main connection goes on writing).
      }
    }, workerData.checkpointMs);
    parentPort.postMessage({ checkpointing: true });
  } catch {
    // Not writable from here: the main connection keeps checkpointing itself.
  }
}

parentPort.on('message', ({ id, sql, params, names, limit }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql).raw(true);
      statements.set(sql, statement);
    }
    let rows = statement.all(...params);
    // A page: one row past `limit` was asked for, to tell whether another page follows.
    let nextCursor = null;
    if (limit !== undefined && rows.length > limit) {
      rows = rows.slice(0, limit);
      nextCursor = String(rows[limit - 1][0]);
    }
    // A large answer crosses to the main thread as one string, far cheaper than cloning its rows.
    parentPort.postMessage(names ? { id, json: toJson(rows, names), nextCursor } : { id, rows });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
