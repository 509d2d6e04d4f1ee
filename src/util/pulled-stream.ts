/**
 * Web streams between the service's own layers that its own readers read by plain calls. An
 * answer goes through several layers of the service (the fetch's body, the delta merge, the
 * provider's reader, the model guard), and the SDK's interfaces between them are web streams:
 * each read through one costs a pull, a queue and three or four promises, and at a thousand
 * answers at once those reads were a fifth of the main thread's garbage (BENCHMARKS.md, stop 68).
 * A layer makes its stream with `pulledStream`; a layer reading it takes `pullsOf(stream)`, which
 * for such a stream calls the source itself, and for any other stream reads it as a stream. Anyone
 * else (the SDK) reads the stream as a stream, with the same values, end and error. Before anyone
 * reads it, another layer may take its source's place (`interpose`): the merge of deltas does, in
 * the fetch's own body.
 *
 * A read waits once, wherever it waits: a source's `next()` answers at once with a value or the
 * end when it has one, and otherwise with a wait, a promise to await before asking again (the
 * socket's next bytes, a turn of the event loop, a schema's check). A layer passes the wait of the
 * layer under it up as its own, so a read of the whole chain is one plain call while bytes are
 * there, and one promise while none are: between two chunks an answer holds no suspended reader
 * in each of its layers. Those readers lived long enough to be moved to the old generation: at a
 * thousand answers, what it collected fell from 160 to 90 MB in four seconds (BENCHMARKS.md,
 * stop 70).
 */
import { Readable } from 'node:stream';

/** Whether a web stream was read from or cancelled (Node's `isDisturbed` takes web streams too; its types name only Node's). */
const isDisturbed = (stream: ReadableStream<unknown>) => Readable.isDisturbed(stream as unknown as Readable);

/** What `next()` answers: a value, null at the end, or a wait (a promise to await before asking again). Values are never promises. */
export type Next<T> = T | null | Promise<unknown>;

/** True for a wait (see Next). */
export const isWait = <T>(next: Next<T>): next is Promise<unknown> => next instanceof Promise;

/** Where a pulled stream's values come from, one at a time. */
export interface PullSource<T> {
  /**
   * The next value, null at the end, or a wait; throws the stream's error. Never called again
   * while a wait it answered is pending, nor after it answered null or threw. A wait settles once
   * asking again can give something (a value, the end, an error, or another wait); after
   * `cancel`, a pending wait must settle.
   */
  next(): Next<T>;
  /** The reader has gone: stop, and let go of what is upstream. */
  cancel(reason?: unknown): Promise<void>;
}

/** A stream read as plain calls. */
export interface Pulls<T> {
  /**
   * The next value, null at the end and ever after (a cancel is an end), or a wait; throws the
   * stream's error, every time after too. Asked again while a wait is pending, the same wait.
   */
  next(): Next<T>;
  /** The next value, or null at the end: `next()` with its waits awaited. */
  read(): Promise<T | null>;
  /** Cancels the stream (a wait pending settles, and the next answer is the end). Never fails. */
  cancel(reason?: unknown): Promise<void>;
}

/** A pulled stream's source, while nobody has read it as a stream (`interpose` may put another in its place). */
const direct = new WeakMap<ReadableStream<unknown>, { source: PullSource<unknown>; interposed?: true }>();

/**
 * A stream of `source`'s values, pulled only as its reader asks (a high-water mark of 0: nothing
 * is read ahead), that `pullsOf` reads by calling `source` itself.
 */
export function pulledStream<T>(source: PullSource<T>): ReadableStream<T> {
  const held = { source: source as PullSource<unknown> };
  let cancelled = false;
  const stream: ReadableStream<T> = new ReadableStream<T>(
    {
      async pull(controller) {
        // Read as a stream: from now on only as one (its end, error or cancel is the stream's).
        direct.delete(stream);
        for (;;) {
          const next = held.source.next() as Next<T>;
          if (!isWait(next)) {
            if (next === null) controller.close();
            else controller.enqueue(next);
            return;
          }
          await next;
          // Cancelled while it waited: the source is not asked again.
          if (cancelled) return;
        }
      },
      cancel: (reason) => {
        direct.delete(stream);
        cancelled = true;
        return held.source.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  direct.set(stream, held);
  return stream;
}

/** A model call's result whose stream is made only when asked for (`withPulledStream`). */
interface LazyStream {
  /** Its source, until the stream is made (which holds it from then on, and lets go at its end). */
  source: PullSource<unknown> | null;
  /** The stream, once someone asked for it. */
  made: ReadableStream<unknown> | null;
  /** Its source was taken by `pullsOfResult`. */
  taken: boolean;
  /** A layer took its source's place (`interposeResult`): no other may, on it or on the stream made. */
  interposed: boolean;
}
const LAZY = Symbol('lazy stream');

/**
 * `result` (a model call's: the SDK's interfaces hand an answer on as `{ stream, ... }`) with a
 * `stream` of `source`'s values that is made only when someone asks for it: a layer of the service
 * reading it with `pullsOfResult` calls the source itself, and no web stream is made at all. The
 * web stream was most of what OpenAI's reader and the guard each made per answer, and Node 20
 * makes each slowly (about 16 µs in a burst of a thousand answers' starts: BENCHMARKS.md, stop
 * 70). The property is not enumerable,
 * so a spread of the result does not make it; asked for after its source was taken, it is a stream
 * already locked, as one read by another reader. `key` names the property (`body`: a Response's).
 */
export function withPulledStream<R extends object, T, K extends string = 'stream'>(
  result: R,
  source: PullSource<T>,
  key: K = 'stream' as K,
): R & { [k in K]: ReadableStream<T> } {
  const lazy: LazyStream = { source, made: null, taken: false, interposed: false };
  Object.defineProperty(result, LAZY, { value: lazy });
  Object.defineProperty(result, key, {
    configurable: true,
    enumerable: false,
    get() {
      if (!lazy.made) {
        const made = pulledStream(lazy.source!);
        if (lazy.interposed) direct.get(made)!.interposed = true;
        if (lazy.taken) made.getReader();
        else lazy.source = null;
        lazy.made = made;
      }
      return lazy.made;
    },
  });
  return result as R & { [k in K]: ReadableStream<T> };
}

/**
 * The source of `result`'s stream made by `withPulledStream`, read by plain calls, when nobody
 * asked for the stream yet (it is then made locked, if asked for); null for any other.
 */
export function pulledSourceOf<T>(result: object): Pulls<T> | null {
  const lazy = (result as { [LAZY]?: LazyStream })[LAZY];
  if (!lazy || lazy.made) return null;
  if (lazy.taken) throw new TypeError('the stream was taken by another reader');
  lazy.taken = true;
  return sourcePulls(lazy.source as PullSource<T>);
}

/**
 * Whether `result`'s stream made by `withPulledStream` was read (or its source taken, or it was
 * cancelled), without making it; null for any other result.
 */
export function pulledStreamUsed(result: object): boolean | null {
  const lazy = (result as { [LAZY]?: LazyStream })[LAZY];
  if (!lazy) return null;
  return lazy.taken || (lazy.made !== null && isDisturbed(lazy.made));
}

/**
 * Puts `wrap(values)` in the place of the source of `result`'s stream made by `withPulledStream`,
 * while nobody asked for that stream or took its source, once (as `interpose` does for a
 * stream's); false (nothing done) for any other.
 */
export function interposeResult<T>(result: object, wrap: (values: Pulls<T>) => PullSource<T>): boolean {
  const lazy = (result as { [LAZY]?: LazyStream })[LAZY];
  if (!lazy || lazy.made || lazy.taken || lazy.interposed) return false;
  lazy.interposed = true;
  lazy.source = wrap(sourcePulls(lazy.source as PullSource<T>));
  return true;
}

/** `result.stream` read by plain calls (pullsOf), from its source itself when it was made by `withPulledStream` and nobody asked for it. */
export function pullsOfResult<T>(result: { stream: ReadableStream<T> }): Pulls<T> {
  return pulledSourceOf<T>(result) ?? pullsOf(result.stream);
}

/**
 * Puts `wrap(values)` in the place of `stream`'s source, `values` being what that source gave:
 * the same stream (and whatever holds it, a Response) then gives what `wrap` makes of them. Only
 * for a `pulledStream` nobody has read, locked or interposed on yet; false (nothing done) for any
 * other.
 */
export function interpose<T>(stream: ReadableStream<T>, wrap: (values: Pulls<T>) => PullSource<T>): boolean {
  const held = direct.get(stream);
  if (!held || held.interposed || stream.locked) return false;
  held.interposed = true;
  held.source = wrap(sourcePulls(held.source as PullSource<T>));
  return true;
}

/**
 * `stream` read by plain calls: its source's own, when it is a `pulledStream` nobody has read
 * (it is locked, so that nobody else does); otherwise through a reader of it. Reads asked for
 * together are made one after the other, as a stream's are.
 */
export function pullsOf<T>(stream: ReadableStream<T>): Pulls<T> {
  const held = direct.get(stream);
  const reader = stream.getReader();
  if (held) {
    direct.delete(stream);
    return sourcePulls(held.source as PullSource<T>);
  }
  /** The reader's last answer, until `next()` hands it on. */
  let answer: { done: true } | { done: false; value: T } | { error: unknown } | null = null;
  let reading: Promise<unknown> | null = null;
  return sourcePulls<T>({
    next() {
      if (answer) {
        const got = answer;
        answer = null;
        if ('error' in got) throw got.error;
        return got.done ? null : got.value;
      }
      reading ??= reader.read().then(
        (r) => {
          answer = r.done ? { done: true } : { done: false, value: r.value };
          reading = null;
        },
        (error: unknown) => {
          answer = { error };
          reading = null;
        },
      );
      return reading;
    },
    cancel: (reason) => reader.cancel(reason).catch(() => {}),
  });
}

/** A source's values as a stream's reader gets them: the end and the error kept, a cancel ending it, one wait at a time. */
function sourcePulls<T>(source: PullSource<T>): Pulls<T> {
  let ended = false;
  let failure: { error: unknown } | null = null;
  /** The wait the source answered, while it is pending. */
  let waiting: Promise<unknown> | null = null;
  const next = (): Next<T> => {
    if (failure) throw failure.error;
    if (ended) return null;
    if (waiting) return waiting;
    let value: Next<T>;
    try {
      value = source.next();
    } catch (error) {
      // Cancelled while it was read: as a stream's read, it ends.
      if (ended) return null;
      failure = { error };
      throw error;
    }
    if (isWait(value)) {
      const wait: Promise<unknown> = value.then(
        () => {
          waiting = null;
        },
        (error: unknown) => {
          // A wait that fails is the stream's error, unless it was cancelled meanwhile (an end).
          if (!ended) failure ??= { error };
          waiting = null;
        },
      );
      waiting = wait;
      return wait;
    }
    if (value === null) ended = true;
    return value;
  };
  /** Reads asked for and not yet settled, and the last of them (the next starts once it has settled). */
  let unsettled = 0;
  let last: Promise<T | null> | null = null;
  const readOne = async (): Promise<T | null> => {
    try {
      for (;;) {
        const value = next();
        if (!isWait(value)) return value;
        await value;
      }
    } finally {
      unsettled--;
    }
  };
  return {
    next,
    read() {
      // Reads asked for together are made one after the other, so each gets its value in the order asked.
      const read = unsettled++ === 0 || !last ? readOne() : last.then(readOne, readOne);
      last = read;
      return read;
    },
    async cancel(reason) {
      if (ended || failure) return;
      ended = true;
      try {
        await source.cancel(reason);
      } catch {
        // A cancel never fails.
      }
    },
  };
}
