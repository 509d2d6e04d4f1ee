import { describe, expect, it } from 'vitest';
import { createWakeUp } from './wake-up.ts';

const HOUR = 3_600_000;

describe('a wake-up', () => {
  it('ends a wait when woken', async () => {
    const w = createWakeUp();
    const waited = w.wait(HOUR, new AbortController().signal);
    w.wake();
    await waited;
  });

  it('keeps a notification that came between two waits, once', async () => {
    const w = createWakeUp();
    w.wake();
    await w.wait(HOUR, new AbortController().signal);
    // Used up: the next wait sleeps until its time (short here) or a new wake.
    let done = false;
    const next = w.wait(HOUR, new AbortController().signal).then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    w.wake();
    await next;
  });

  it('ends at its time without a notification, and when its signal aborts', async () => {
    const w = createWakeUp();
    await w.wait(5, new AbortController().signal);
    const stop = new AbortController();
    const waited = w.wait(HOUR, stop.signal);
    stop.abort();
    await waited;
  });
});
