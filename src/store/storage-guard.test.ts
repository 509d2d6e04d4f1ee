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

  it('runs a write asked to go first after the one in hand and the first ones before it, ahead of the rest', async () => {
    const guard = createStorageGuard();
    const order: string[] = [];
    const write = (name: string, first = false) => guard.write(() => void order.push(name), { first });
    let free!: () => void;
    const inHand = guard.write(() => new Promise<void>((resolve) => (free = resolve)).then(() => void order.push('in hand')));
    const writes = [write('a'), write('b'), write('first 1', true), write('c'), write('first 2', true)];
    expect(guard.queued).toBe(6);
    free();
    await Promise.all([inHand, ...writes]);
    expect(order).toEqual(['in hand', 'first 1', 'first 2', 'a', 'b', 'c']);
    expect(guard.queued).toBe(0);
  });

  it('keeps a write that failed for lack of storage ahead of one asked to go first while it waits', async () => {
    const guard = createStorageGuard({ retryMs: 10 });
    const order: string[] = [];
    let full = true;
    const failing = guard.write(() => {
      if (full) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      order.push('tried again');
    });
    const later = guard.write(() => void order.push('later'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(guard.fault).toBe('storage_full');
    const first = guard.write(() => void order.push('first'), { first: true });
    full = false;
    await Promise.all([failing, later, first]);
    expect(order).toEqual(['tried again', 'first', 'later']);
  });
});
