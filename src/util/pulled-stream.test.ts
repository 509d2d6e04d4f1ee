import { describe, expect, it } from 'vitest';
import {
  interpose,
  interposeResult,
  isWait,
  pulledSourceOf,
  pulledStream,
  pullsOf,
  pullsOfResult,
  withPulledStream,
  type Next,
  type PullSource,
  type Pulls,
} from './pulled-stream.ts';

/**
 * A source of `values`, then an end (or `error`), counting the times it was asked; `hold` makes
 * each value wait until released (or cancelled).
 */
function sourceOf(values: number[], opts: { error?: Error; hold?: boolean } = {}) {
  const pending = [...values];
  const seen = { pulls: 0, cancelled: [] as unknown[] };
  let release: (() => void) | null = null;
  let held = false;
  const source: PullSource<number> = {
    next() {
      seen.pulls++;
      if (opts.hold && !held) {
        held = true;
        return new Promise<void>((resolve) => (release = resolve));
      }
      held = false;
      if (pending.length > 0) return pending.shift()!;
      if (opts.error) throw opts.error;
      return null;
    },
    async cancel(reason) {
      seen.cancelled.push(reason);
      release?.();
    },
  };
  return { source, seen, release: () => release?.() };
}

/** A source whose `next` is `answer` made async: each value or end after a wait of a millisecond. */
const slowly = (answer: () => number | null): PullSource<number> => {
  let ready = false;
  return {
    next() {
      if (!ready) {
        ready = true;
        return new Promise((r) => setTimeout(r, 1));
      }
      ready = false;
      return answer();
    },
    cancel: async () => {},
  };
};

async function readAll(read: () => Promise<number | null>) {
  const got: number[] = [];
  for (let v = await read(); v !== null; v = await read()) got.push(v);
  return got;
}

const streamRead = (stream: ReadableStream<number>) => {
  const reader = stream.getReader();
  return async () => {
    const r = await reader.read();
    return r.done ? null : r.value;
  };
};

describe('a pulled stream', () => {
  it('gives the same values, end and error read as a stream or by plain calls', async () => {
    expect(await readAll(streamRead(pulledStream(sourceOf([1, 2, 3]).source)))).toEqual([1, 2, 3]);
    const direct = pullsOf(pulledStream(sourceOf([1, 2, 3]).source));
    expect(await readAll(() => direct.read())).toEqual([1, 2, 3]);
    // An end is for ever.
    expect(await direct.read()).toBeNull();

    const boom = new Error('boom');
    const asStream = streamRead(pulledStream(sourceOf([1, 2], { error: boom }).source));
    const byCalls = pullsOf(pulledStream(sourceOf([1, 2], { error: boom }).source));
    for (const read of [asStream, () => byCalls.read()]) {
      expect([await read(), await read()]).toEqual([1, 2]);
      await expect(read()).rejects.toBe(boom);
      // And so is an error.
      await expect(read()).rejects.toBe(boom);
    }
  });

  it('is read by its source itself, only as asked, and by one reader', async () => {
    const { source, seen } = sourceOf([1, 2, 3]);
    const stream = pulledStream(source);
    const reader = pullsOf(stream);
    expect(seen.pulls).toBe(0);
    expect(stream.locked).toBe(true);
    expect(() => pullsOf(stream)).toThrow(TypeError);
    expect(await reader.read()).toBe(1);
    expect(seen.pulls).toBe(1);
    // A value that is there comes by a plain call, no promise between.
    expect(reader.next()).toBe(2);
  });

  it("waits once for a chain of layers: the wait of the one under it is each layer's own", async () => {
    const { source, seen, release } = sourceOf([1, 2], { hold: true });
    /** A layer that adds 10 to what the layer under it gives, passing its waits up. */
    const adding = (under: Pulls<number>): PullSource<number> => ({
      next(): Next<number> {
        const v = under.next();
        return isWait(v) || v === null ? v : v + 10;
      },
      cancel: (reason) => under.cancel(reason),
    });
    let stream = pulledStream(source);
    for (let i = 0; i < 3; i++) stream = pulledStream(adding(pullsOf(stream)));
    const reader = pullsOf(stream);
    const wait = reader.next();
    expect(isWait(wait)).toBe(true);
    // Asked again while it waits: the same wait, and the source is not asked again.
    expect(reader.next()).toBe(wait);
    expect(seen.pulls).toBe(1);
    release();
    await wait;
    expect(reader.next()).toBe(31);
    const second = reader.read();
    release();
    expect(await second).toBe(32);
    const end = reader.read();
    release();
    expect(await end).toBeNull();
    expect(seen.pulls).toBe(6);
  });

  it('fails with an error a wait fails with, and for ever', async () => {
    const boom = new Error('boom');
    const reader = pullsOf(pulledStream<number>({ next: () => Promise.reject(boom), cancel: async () => {} }));
    await expect(reader.read()).rejects.toBe(boom);
    expect(() => reader.next()).toThrow(boom);
    const asStream = streamRead(pulledStream<number>({ next: () => Promise.reject(boom), cancel: async () => {} }));
    await expect(asStream()).rejects.toBe(boom);
  });

  it('ends a read waiting on its source when cancelled, and never fails a cancel', async () => {
    const { source, seen } = sourceOf([1], { hold: true });
    const reader = pullsOf(pulledStream(source));
    const waiting = reader.read();
    await reader.cancel('gone');
    expect(await waiting).toBeNull();
    expect(seen.cancelled).toEqual(['gone']);
    expect(await reader.read()).toBeNull();
    // Once: the source was let go already.
    await reader.cancel('again');
    expect(seen.cancelled).toEqual(['gone']);

    const failing = pullsOf(pulledStream<number>({ next: () => 1, cancel: () => Promise.reject(new Error('no')) }));
    await expect(failing.cancel()).resolves.toBeUndefined();
  });

  it('makes reads asked for together one after the other, and reads a stream read or cancelled as one only as one', async () => {
    let waits = 0;
    let n = 0;
    const source = slowly(() => (n < 3 ? ++n : null));
    const reader = pullsOf(
      pulledStream<number>({
        next() {
          const v = source.next();
          if (isWait(v)) waits++;
          return v;
        },
        cancel: async () => {},
      }),
    );
    expect(await Promise.all([reader.read(), reader.read(), reader.read(), reader.read()])).toEqual([1, 2, 3, null]);
    // One wait for each value and the end: reads asked together shared the wait pending.
    expect(waits).toBe(4);

    const cancelled = pulledStream(sourceOf([1, 2]).source);
    await cancelled.cancel('bye');
    expect(await pullsOf(cancelled).read()).toBeNull();

    const boom = new Error('boom');
    const once = sourceOf([], { error: boom });
    const failed = pulledStream(once.source);
    const first = failed.getReader();
    await expect(first.read()).rejects.toBe(boom);
    first.releaseLock();
    await expect(pullsOf(failed).read()).rejects.toBe(boom);
    // The stream's error, not the source asked again.
    expect(once.seen.pulls).toBe(1);
  });

  it('takes another source in its place before anyone reads it, read either way, and only then', async () => {
    /** Doubles what comes, and says when it is cancelled. */
    const doubling =
      (cancelled: unknown[]) =>
      (values: Pulls<number>): PullSource<number> => ({
        next() {
          const v = values.next();
          return isWait(v) || v === null ? v : v * 2;
        },
        cancel: async (reason) => {
          cancelled.push(reason);
          await values.cancel(reason);
        },
      });
    const asStream = pulledStream(sourceOf([1, 2]).source);
    expect(interpose(asStream, doubling([]))).toBe(true);
    // Once: a second would wrap the first.
    expect(interpose(asStream, doubling([]))).toBe(false);
    expect(await readAll(streamRead(asStream))).toEqual([2, 4]);

    const { source, seen } = sourceOf([1, 2, 3]);
    const byCalls = pulledStream(source);
    const cancelled: unknown[] = [];
    expect(interpose(byCalls, doubling(cancelled))).toBe(true);
    const reader = pullsOf(byCalls);
    expect(await reader.read()).toBe(2);
    await reader.cancel('gone');
    // The cancel reaches the source under the one put in its place.
    expect([cancelled, seen.cancelled]).toEqual([['gone'], ['gone']]);

    // Read, locked, or not a pulled stream: left as it is.
    const read = pulledStream(sourceOf([1, 2]).source);
    const first = read.getReader();
    expect(await first.read()).toEqual({ done: false, value: 1 });
    first.releaseLock();
    expect(interpose(read, doubling([]))).toBe(false);
    expect(await readAll(streamRead(read))).toEqual([2]);
    const locked = pulledStream(sourceOf([1]).source);
    pullsOf(locked);
    expect(interpose(locked, doubling([]))).toBe(false);
    expect(interpose(new ReadableStream<number>(), doubling([]))).toBe(false);
  });

  it('reads any other stream through a reader of it, with the same end, error and cancel', async () => {
    const boom = new Error('boom');
    let n = 0;
    const failing = pullsOf(
      new ReadableStream<number>({
        pull: (c) => (n < 2 ? c.enqueue(++n) : c.error(boom)),
      }),
    );
    expect([await failing.read(), await failing.read()]).toEqual([1, 2]);
    await expect(failing.read()).rejects.toBe(boom);

    let cancelled: unknown;
    const waiting = pullsOf(new ReadableStream<number>({ pull: () => new Promise(() => {}), cancel: (reason) => void (cancelled = reason) }));
    const read = waiting.read();
    await waiting.cancel('gone');
    expect(await read).toBeNull();
    expect(cancelled).toBe('gone');
  });

  it("gives a call's result a stream made only when asked for, and read from its source when not", async () => {
    const { source, seen } = sourceOf([1, 2]);
    const result = withPulledStream({ request: { body: 'b' } }, source);
    // A spread (a layer passing the result on) does not make it.
    expect({ ...result }).toEqual({ request: { body: 'b' } });
    const reader = pullsOfResult(result);
    expect(await readAll(() => reader.read())).toEqual([1, 2]);
    expect(seen.pulls).toBe(3);
    // Asked for after its source was taken: a stream another reader holds.
    expect(result.stream.locked).toBe(true);
    expect(() => pullsOfResult(result)).toThrow(TypeError);

    // Asked for first: the SDK's readers read it as a stream, and the loop's reader as calls on it.
    const asked = withPulledStream({}, sourceOf([3, 4]).source);
    expect(await readAll(streamRead(asked.stream))).toEqual([3, 4]);
    const made = withPulledStream({}, sourceOf([5]).source);
    expect(made.stream).toBe(made.stream);
    const byCalls = pullsOfResult(made);
    expect(await readAll(() => byCalls.read())).toEqual([5]);
    // Any other result: its stream, read by calls.
    const other = pullsOfResult({ stream: pulledStream(sourceOf([6]).source) });
    expect(await readAll(() => other.read())).toEqual([6]);
  });

  it("puts a layer in the place of a result's source while nobody asked for its stream, under any property's name", async () => {
    const doubled = (values: Pulls<number>): PullSource<number> => ({
      next: () => {
        const v = values.next();
        return isWait(v) || v === null ? v : v * 2;
      },
      cancel: (reason) => values.cancel(reason),
    });
    // Read by calls, and asked for as a stream: both give the layer's values.
    const byCalls = withPulledStream({}, sourceOf([1, 2]).source, 'body');
    expect(interposeResult(byCalls, doubled)).toBe(true);
    const calls = pulledSourceOf<number>(byCalls)!;
    expect(await readAll(() => calls.read())).toEqual([2, 4]);
    const asStream = withPulledStream({}, sourceOf([3]).source, 'body');
    expect(interposeResult(asStream, doubled)).toBe(true);
    expect(await readAll(streamRead(asStream.body))).toEqual([6]);
    // Once only: not again on the result, nor on the stream made after it.
    const once = withPulledStream({}, sourceOf([5]).source, 'body');
    expect(interposeResult(once, doubled)).toBe(true);
    expect(interposeResult(once, doubled)).toBe(false);
    expect(interpose(once.body, doubled)).toBe(false);
    expect(await readAll(streamRead(once.body))).toEqual([10]);
    // Its stream made, its source taken, or no lazy stream at all: nothing is done.
    expect(interposeResult(asStream, doubled)).toBe(false);
    expect(interposeResult(byCalls, doubled)).toBe(false);
    expect(interposeResult({ body: pulledStream(sourceOf([4]).source) }, doubled)).toBe(false);
  });

  it('ends at a cancel while a wait is pending, even when that wait then fails', async () => {
    let fail: ((error: unknown) => void) | null = null;
    const reader = pullsOf(
      pulledStream<number>({
        next: () => new Promise((_, reject) => (fail = reject)),
        // Cancelling the source's I/O fails the wait it answered, as an aborted request would.
        cancel: async () => fail?.(new Error('aborted by the cancel')),
      }),
    );
    const pending = reader.read();
    await reader.cancel('gone');
    expect(await pending).toBeNull();
    expect(reader.next()).toBeNull();
  });

  it('gives reads asked together their values in the order asked, one asked as a wait settles too', async () => {
    let release!: () => void;
    let waited = false;
    const values = [1, 2];
    const reader = pullsOf(
      pulledStream<number>({
        next() {
          if (waited) return values.shift() ?? null;
          waited = true;
          return new Promise<void>((resolve) => (release = resolve));
        },
        cancel: async () => {},
      }),
    );
    const first = reader.read();
    let second!: Promise<number | null>;
    release();
    // Asked right after the wait settled, before the first read has gone on.
    queueMicrotask(() => {
      second = reader.read();
    });
    expect(await first).toBe(1);
    expect(await second).toBe(2);
  });
});
