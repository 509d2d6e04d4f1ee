import { describe, expect, it } from 'vitest';
import { createStorageGuard } from './storage-guard.ts';

/** Keeps the thread busy for `ms`, as a synchronous SQLite write does. */
function busy(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('storage guard', () => {
  it('lets a timer run while it drains a long queue of writes that settle at once, in order', async () => {
    const guard = createStorageGuard();
    const done: number[] = [];
    let doneWhenTimerFired = -1;
    setTimeout(() => (doneWhenTimerFired = done.length), 0);
    // 200 writes of 1 ms each, asked for in one turn: without turns in between the timer would
    // fire only after the last (they and their callers' continuations are all microtasks).
    const writes = Array.from({ length: 200 }, (_, i) =>
      guard
        .write(() => {
          busy(1);
          return i;
        })
        .then((i) => done.push(i)),
    );
    await Promise.all(writes);
    expect(done).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(doneWhenTimerFired).toBeGreaterThan(0);
    expect(doneWhenTimerFired).toBeLessThan(200);
  });
});
