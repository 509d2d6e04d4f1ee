/**
 * Which errors of PostgreSQL leave a statement unapplied or repeatable, and the loop that sends a
 * statement again while the server restarts or fails over.
 */
import { storageFaultOf } from './storage-guard.ts';

/**
 * The server does not hold what this connection prepared ("prepared statement ... does not
 * exist", or "already exists" for one it did not prepare): a pooler between them (PgBouncer in
 * transaction mode) hands each transaction another server connection. The statement did not run:
 * it is sent again, and from then on nothing of that database is prepared.
 */
export function unprepared(err: unknown): boolean {
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
 * storage guard holds the writes. Well under TASK_LEASE_MS's default, so a lease outlives it; a
 * shorter lease shortens it (`retryWindowFor`).
 */
const RETRY_WINDOW_MS = 12_000;

/**
 * The retry window for a task lease of `leaseMs`: a third of it, at most RETRY_WINDOW_MS (at least
 * 100 ms). A lease renewal tried again for longer than its lease holds the renewals after it, and
 * the tasks it was to keep stop when the lease runs out although the database came back meanwhile.
 */
export function retryWindowFor(leaseMs: number): number {
  return Math.max(100, Math.min(RETRY_WINDOW_MS, Math.floor(leaseMs / 3)));
}

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
export function transient(err: unknown): boolean {
  if (notApplied(err)) return true;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string') return /^(08000|08003|08006|57P0[1-3]|ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code);
  return storageFaultOf(err) === 'storage_unavailable';
}

/** A statement that only reads (no lock, no sequence, no function with effects): safe to repeat after any transient error. */
export function isRead(sql: string): boolean {
  return /^\s*SELECT\b/i.test(sql) && !/\bFOR\s+(UPDATE|SHARE|NO\s+KEY|KEY)\b|pg_advisory|nextval|txid_current|pg_notify|subagentd_/i.test(sql);
}

export interface RetryWatch {
  /** The database is being closed: nothing is tried again. */
  stopped(): boolean;
  /** A statement is tried again after `err`. */
  retrying(err: unknown): void;
  /** How long a statement is tried again (default RETRY_WINDOW_MS). */
  windowMs?: number;
}

/**
 * Runs `op` until it succeeds, fails with an error `canRepeat` refuses, or the watch's window has
 * passed (waiting 50 ms, then twice as long each time, at most a second).
 */
export async function retrying<T>(op: () => Promise<T>, canRepeat: (err: unknown) => boolean, watch: RetryWatch): Promise<T> {
  const deadline = Date.now() + (watch.windowMs ?? RETRY_WINDOW_MS);
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

/** The lock's connection is gone: a storage fault (connection failure) until it is taken again. */
export class InstanceLockLost extends Error {
  readonly code = '08006';
}
