/** Why the database cannot be written right now. */
export type StorageFault = 'storage_full' | 'storage_unavailable';

/** The SQLite error codes that mean "the disk or the file", not "this statement". */
export function storageFaultOf(err: unknown): StorageFault | null {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return null;
  if (code === 'SQLITE_FULL') return 'storage_full';
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|NOTADB|CORRUPT)/.test(code)) return 'storage_unavailable';
  return null;
}

export interface StorageGuardOptions {
  /** How often writes that failed for lack of storage are tried again. */
  retryMs?: number;
  /** A small write that succeeds once the database can be written again. */
  probe?(): void;
  onFault?(fault: StorageFault, err: unknown): void;
  onRecover?(): void;
}

interface Queued {
  fn: () => unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Keeps the service running through a full disk or an unwritable database. Writes go through
 * `write`: while the database is fine they run at once; when one fails for lack of storage it and
 * every later write wait in order, in memory, and are tried again every `retryMs` until the
 * database takes them, so nothing already done is lost and the order of writes (a step's events
 * before its task's end) holds. `fault` tells admission and health what is wrong meanwhile.
 */
export function createStorageGuard(opts: StorageGuardOptions = {}) {
  const retryMs = opts.retryMs ?? 1000;
  const queue: Queued[] = [];
  let fault: StorageFault | null = null;
  let timer: NodeJS.Timeout | null = null;
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
      drain();
    }, retryMs);
    timer.unref();
  }

  /** Runs waiting writes in order until one fails for lack of storage (or none is left). */
  function drain() {
    while (queue.length > 0) {
      const item = queue[0];
      let value: unknown;
      try {
        value = item.fn();
      } catch (err) {
        const f = storageFaultOf(err);
        if (f) {
          setFault(f, err);
          return;
        }
        queue.shift();
        item.reject(err);
        continue;
      }
      queue.shift();
      item.resolve(value);
    }
    if (fault !== null) {
      try {
        opts.probe?.();
      } catch (err) {
        setFault(storageFaultOf(err) ?? 'storage_unavailable', err);
        return;
      }
      fault = null;
      opts.onRecover?.();
    }
  }

  return {
    get fault(): StorageFault | null {
      return fault;
    },

    /** Writes waiting for storage to come back. */
    get waiting(): number {
      return queue.length;
    },

    /**
     * Runs `fn` (a synchronous store write) now, or after the writes already waiting; resolves
     * with its result once it succeeded. A non-storage error rejects at once.
     */
    write<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        if (queue.length === 1 && fault === null) drain();
        else schedule();
      });
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
