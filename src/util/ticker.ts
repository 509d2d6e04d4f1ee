/** A chore run in the background at a fixed interval: a sweep, a renewal, a retry. */
export interface Ticker {
  /** Ticks every `everyMs` from now on; while it runs, a second start does nothing. */
  start: () => void;
  stop: () => void;
  readonly running: boolean;
}

/**
 * A ticker that never keeps the process alive: a closing service does not wait for its next
 * tick, and one that forgot to stop it still exits. `tick` catches its own errors.
 */
export function createTicker(opts: { everyMs: number; tick: () => void }): Ticker {
  let timer: NodeJS.Timeout | null = null;
  return {
    start: () => {
      if (timer) return;
      timer = setInterval(opts.tick, opts.everyMs);
      timer.unref();
    },
    stop: () => {
      if (timer) clearInterval(timer);
      timer = null;
    },
    get running() {
      return timer !== null;
    },
  };
}
