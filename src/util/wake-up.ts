import { setTimeout as sleep } from 'node:timers/promises';

/** A waiter woken by a notification, or at the latest after a while (the notification may be lost). */
export interface WakeUp {
  /** Wakes the wait under way, or the next one if none is (a notification between two waits is kept). */
  wake: () => void;
  /** Resolves once woken (since the last wait ended), after `ms`, or when `signal` aborts; never rejects. */
  wait: (ms: number, signal: AbortSignal) => Promise<void>;
}

export function createWakeUp(): WakeUp {
  let woken = false;
  let waiting: AbortController | null = null;
  return {
    wake() {
      woken = true;
      waiting?.abort();
    },
    async wait(ms, signal) {
      if (!woken) {
        waiting = new AbortController();
        await sleep(ms, undefined, { signal: AbortSignal.any([signal, waiting.signal]) }).catch(() => undefined);
        waiting = null;
      }
      woken = false;
    },
  };
}
