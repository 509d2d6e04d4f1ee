import { sharedSlices, type SliceLane } from '../util/turns.ts';

/** Why the database cannot be written right now. */
export type StorageFault = 'storage_full' | 'storage_unavailable';

/** The driver's own messages (no code) for a connection that failed or went away under a statement. */
const CONNECTION_LOST =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * The error codes that mean "the disk, the file or the server", not "this statement": SQLite's,
 * PostgreSQL's (disk full, out of resources, read-only, shutting down, connection lost) and the
 * socket errors of a server that cannot be reached.
 */
export function storageFaultOf(err: unknown): StorageFault | null {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') {
    // The pool's own errors carry no code (a connection timeout, a connection ended under a query).
    const message = (err as { message?: unknown })?.message;
    return typeof message === 'string' && CONNECTION_LOST.test(message) ? 'storage_unavailable' : null;
  }
  if (code === 'SQLITE_FULL' || code === '53100') return 'storage_full';
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|NOTADB|CORRUPT)/.test(code)) return 'storage_unavailable';
  // 25P03: the server ended a session left idle inside a transaction (its process was paused past
  // TASK_LEASE_MS): the write did not happen, and is tried again on a new connection.
  if (/^(08|53|57P)/.test(code) || code === '25006' || code === '25P03') return 'storage_unavailable';
  if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH)$/.test(code)) return 'storage_unavailable';
  return null;
}

export interface StorageGuardOptions {
  /** How often writes that failed for lack of storage are tried again. */
  retryMs?: number;
  /**
   * About how much of the waiting writes in order a write asked to go `first` lets go ahead of it
   * (from the last `first` one), ms: 20 by default; at least one always goes.
   */
  firstAfterMs?: number;
  /** A small write that succeeds once the database can be written again. */
  probe?(): Promise<void> | void;
  onFault?(fault: StorageFault, err: unknown): void;
  onRecover?(): void;
  /**
   * The writes' lane in the event loop's shared slice (sharedSlices), so that a turn of the loop
   * holds one slice of all such work; without one, a slice of their own (10 ms).
   */
  slice?: SliceLane;
}

interface Queued {
  fn: () => unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** Asked to go ahead of the writes waiting in order (`write`'s `first`). */
  first: boolean;
}

/**
 * The service's write queue, which also keeps it running through a full disk or an unwritable
 * database. Writes that must keep their order (a step's usage, its events, its end) go through
 * `write` and run one after the other, in the order they were asked for, each once the one before
 * has committed. A write asked for with `first` goes ahead of those waiting, after the one in hand
 * and the `first` ones before it (the event log's group commits of live events, which must not
 * wait behind a thousand tasks' step ends: its caller keeps each task's order). Between two of
 * them about `firstAfterMs` of writes in order (one at least) go on: a steady flow of them (a
 * thousand streams, commits that wait for PostgreSQL) cannot hold the others back, nor double the
 * commits they take. When one fails for lack of storage, it and every later write wait in order, in
 * memory, and are tried again every `retryMs` until the database takes them, so nothing already
 * done is lost. `fault` tells admission and health what is wrong meanwhile.
 */
export function createStorageGuard(opts: StorageGuardOptions = {}) {
  const retryMs = opts.retryMs ?? 1000;
  const slice = opts.slice ?? sharedSlices().lane(0);
  const queue: Queued[] = [];
  /** How many of the queue's writes were asked to go `first`. */
  let firsts = 0;
  /** Takes the head off the queue once it is done. */
  const shift = () => {
    if (queue.shift()?.first) firsts--;
  };
  const firstAfterMs = opts.firstAfterMs ?? 20;
  /** What a write in order has taken lately, on average (ms). */
  let writeMs = 0.5;
  /** Writes in order done since the last `first` one ran. */
  let sinceFirst = Infinity;
  /**
   * Where a write asked to go first is queued: after the head (in hand, or tried again after a
   * fault: never overtaken) and the last `first` one, with about `firstAfterMs` of writes in order
   * (one at least) done or let go between two first ones: these keep their order, and the others
   * go on however many of them come.
   */
  const firstSlot = () => {
    const between = Math.max(1, Math.ceil(firstAfterMs / writeMs));
    let after = Math.min(queue.length, 1);
    let owed = Math.max(0, between - sinceFirst);
    for (let at = 0, seen = 0; at < queue.length && seen < firsts; at++) {
      if (!queue[at].first) continue;
      seen++;
      after = at + 1;
      owed = between;
    }
    return Math.min(queue.length, after + owed);
  };
  let fault: StorageFault | null = null;
  let timer: NodeJS.Timeout | null = null;
  let draining = false;
  let closed = false;

  function setFault(f: StorageFault, err: unknown) {
    const first = fault === null;
    fault = f;
    if (first) opts.onFault?.(f, err);
    schedule();
  }

  function schedule() {
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = null;
      void drain();
    }, retryMs);
    timer.unref();
  }

  /** Runs waiting writes in order until one fails for lack of storage (or none is left). */
  async function drain() {
    if (draining) return;
    draining = true;
    try {
      while (queue.length > 0) {
        // Writes that settle at once (SQLite's) would drain a long queue, and run what each one's
        // caller does next, in one turn of the event loop: a burst of 1,000 tasks held it for a
        // second. They take their share of each turn's slice (turns.ts), and the loop its turns.
        const pause = slice.enter();
        if (pause) await pause;
        const item = queue[0];
        let value: unknown;
        const started = performance.now();
        try {
          value = await item.fn();
          if (item.first) sinceFirst = 0;
          else {
            sinceFirst++;
            writeMs = 0.8 * writeMs + 0.2 * (performance.now() - started);
          }
        } catch (err) {
          const f = storageFaultOf(err);
          if (f) {
            setFault(f, err);
            return;
          }
          shift();
          item.reject(err);
          continue;
        }
        shift();
        item.resolve(value);
      }
      if (fault !== null) {
        try {
          await opts.probe?.();
        } catch (err) {
          setFault(storageFaultOf(err) ?? 'storage_unavailable', err);
          return;
        }
        fault = null;
        opts.onRecover?.();
        if (queue.length > 0) queueMicrotask(() => void drain());
      }
    } finally {
      draining = false;
    }
  }

  return {
    get fault(): StorageFault | null {
      return fault;
    },

    /** Writes held in memory while storage fails (0 while it is fine: the few in flight are not held). */
    get waiting(): number {
      return fault === null ? 0 : queue.length;
    },

    /** Writes asked for and not yet done, the one in hand included. */
    get queued(): number {
      return queue.length;
    },

    /**
     * Runs `fn` (a store write) after the writes asked for before it (`first`: after the one in
     * hand and the other `first` ones, about `firstAfterMs` of writes in order after the last
     * `first` one); resolves with its result once it succeeded. A non-storage error rejects at once.
     */
    write<T>(fn: () => T | Promise<T>, opts: { first?: boolean } = {}): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const item: Queued = { fn, resolve, reject, first: opts.first === true };
        if (!item.first) queue.push(item);
        else {
          queue.splice(firstSlot(), 0, item);
          firsts++;
        }
        if (fault === null) void drain();
        else schedule();
      });
    },

    /**
     * Resolves once the writes asked for so far are done (a read that must see them waits for
     * it); at once while storage is failing, when they may wait for minutes.
     */
    async settled(): Promise<void> {
      if (fault === null && queue.length > 0) await this.write(() => undefined).catch(() => undefined);
    },

    /** Notes a storage failure seen by a write outside `write`; false when `err` is not one. */
    report(err: unknown): boolean {
      const f = storageFaultOf(err);
      if (!f) return false;
      setFault(f, err);
      return true;
    },

    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

export type StorageGuard = ReturnType<typeof createStorageGuard>;
