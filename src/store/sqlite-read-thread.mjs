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

parentPort.on('message', ({ id, sql, params }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql).raw(true);
      statements.set(sql, statement);
    }
    parentPort.postMessage({ id, rows: statement.all(...params) });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
