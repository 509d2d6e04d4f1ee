/** A child's start (an attempt of candidates, a lead's subagent) waits while the database cannot store it. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AppError } from '../../errors/app-error.ts';
import { storageFaultOf, type StorageGuard } from '../../store/storage-guard.ts';

/** How often a start is tried again while the database cannot be written (the storage guard's own retry). */
const STORAGE_RETRY_MS = 1000;

/**
 * The database could not be read or written: refused by admission (503 / 507) or failed under a
 * statement. Or the service is shutting down: the stop that comes with it ends the wait.
 */
const worthWaiting = (err: unknown) =>
  (err instanceof AppError && (err.code === 'storage_unavailable' || err.code === 'storage_full' || err.code === 'shutting_down')) ||
  storageFaultOf(err) !== null;

/**
 * `start()`, tried again every STORAGE_RETRY_MS while it fails for lack of storage (PostgreSQL
 * restarting or failing over), as the task's own writes wait; null once `signal` aborts, before
 * the first try too. Any other error goes on at once. A try that stored the child before it
 * failed is harmless: the next one finds it at its key. A wait logs `warning` once. (A full disk,
 * or SQLite out of reach, stops every running task, the caller too: its signal ends the wait.)
 */
export async function whileStorageFails<T>(
  deps: { storage: Pick<StorageGuard, 'report'>; logger: Logger },
  taskId: string,
  signal: AbortSignal,
  warning: string,
  start: () => Promise<T>,
): Promise<T | null> {
  for (let tries = 1; ; tries++) {
    if (signal.aborted) return null;
    try {
      return await start();
    } catch (err) {
      if (!worthWaiting(err)) throw err;
      // The guard learns of a fault seen outside its writes, and probes until it passes.
      deps.storage.report(err);
      if (tries === 1) deps.logger.warn({ taskId, err }, warning);
    }
    try {
      await sleep(STORAGE_RETRY_MS, undefined, { signal });
    } catch {
      return null;
    }
  }
}
