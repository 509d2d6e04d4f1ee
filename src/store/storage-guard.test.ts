import { describe, expect, it } from 'vitest';
import { createStorageGuard } from './storage-guard.ts';
import { sharedSlices } from '../util/turns.ts';

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

  it('takes its writes in the event loop’s shared slice: a turn holds one slice of them and of the requests together', async () => {
    const slices = sharedSlices(5, 2);
    const requests = slices.lane(0);
    const guard = createStorageGuard({ slice: slices.lane(1) });
    const order: string[] = [];
    let doneBeforeTurn = -1;
    setImmediate(() => (doneBeforeTurn = order.length));
    // 20 requests and 20 writes of 1 ms each, ready together.
    await Promise.all([
      ...Array.from({ length: 20 }, async () => {
        const turn = requests.enter();
        if (turn) await turn;
        busy(1);
        order.push('request');
      }),
      ...Array.from({ length: 20 }, () =>
        guard.write(() => {
          busy(1);
          order.push('write');
        }),
      ),
    ]);
    expect(order.filter((o) => o === 'write')).toHaveLength(20);
    expect(order.filter((o) => o === 'request')).toHaveLength(20);
    // The first turn held one slice of both kinds (5 ms and the piece that crossed it), not one
    // slice each: the writes' own turns would have let ten more go.
    expect(doneBeforeTurn).toBeGreaterThan(0);
    expect(doneBeforeTurn).toBeLessThanOrEqual(7);
    // Neither kind waited for all of the other.
    expect(order.indexOf('write')).toBeLessThan(order.lastIndexOf('request'));
    expect(order.indexOf('request')).toBeLessThan(order.lastIndexOf('write'));
    expect(slices.waiting).toBe(0);
  });

  it('runs a write asked to go first after the one in hand and the first ones before it, one in order between two first ones', async () => {
    const guard = createStorageGuard({ firstAfterMs: 0 });
    const order: string[] = [];
    const write = (name: string, first = false) => guard.write(() => void order.push(name), { first });
    let free!: () => void;
    const inHand = guard.write(() => new Promise<void>((resolve) => (free = resolve)).then(() => void order.push('in hand')));
    const writes = [write('a'), write('b'), write('first 1', true), write('c'), write('first 2', true)];
    expect(guard.queued).toBe(6);
    free();
    await Promise.all([inHand, ...writes]);
    expect(order).toEqual(['in hand', 'first 1', 'a', 'first 2', 'b', 'c']);
    expect(guard.queued).toBe(0);
  });

  it('keeps a write that failed for lack of storage ahead of one asked to go first while it waits', async () => {
    const guard = createStorageGuard({ retryMs: 10, firstAfterMs: 0 });
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

  it('lets the writes in order go on while writes asked to go first keep coming', async () => {
    const guard = createStorageGuard({ firstAfterMs: 0 });
    const order: string[] = [];
    // Each first write, as it runs, asks for the next (a commit that waits, and events that keep
    // coming meanwhile); the writes in order still go, one between two first ones.
    let left = 6;
    const first = (): Promise<void> =>
      guard.write(
        async () => {
          order.push('first');
          await new Promise((resolve) => setImmediate(resolve));
          if (--left > 0) void first();
        },
        { first: true },
      );
    const inOrder = [guard.write(() => void order.push('a')), guard.write(() => void order.push('b')), guard.write(() => void order.push('c'))];
    void first();
    await Promise.all(inOrder);
    expect(order.slice(0, 6)).toEqual(['a', 'first', 'b', 'first', 'c', 'first']);
  });

  it('keeps the writes asked to go first in the order they were asked for', async () => {
    const guard = createStorageGuard({ firstAfterMs: 0 });
    const order: string[] = [];
    const write = (name: string, first = false) => guard.write(() => void order.push(name), { first });
    let free!: () => void;
    const inHand = guard.write(() => new Promise<void>((resolve) => (free = resolve)).then(() => void order.push('first 1')), { first: true });
    const writes = [write('a'), write('first 2', true), write('b'), write('first 3', true), write('c')];
    free();
    await Promise.all([inHand, ...writes]);
    expect(order).toEqual(['first 1', 'a', 'first 2', 'b', 'first 3', 'c']);
  });

  it('lets about firstAfterMs of writes in order go between two first ones', async () => {
    // 5 ms of writes of about 0.5 ms each (the guess before any has run): ten between.
    const guard = createStorageGuard({ firstAfterMs: 5 });
    const order: string[] = [];
    let free!: () => void;
    const inHand = guard.write(() => new Promise<void>((resolve) => (free = resolve)));
    const inOrder = Array.from({ length: 20 }, (_, i) => guard.write(() => void order.push(`${i}`)));
    const firsts = [guard.write(() => void order.push('first 1'), { first: true }), guard.write(() => void order.push('first 2'), { first: true })];
    free();
    await Promise.all([inHand, ...inOrder, ...firsts]);
    expect(order.indexOf('first 1')).toBe(0);
    expect(order.indexOf('first 2')).toBe(11);
  });
});
