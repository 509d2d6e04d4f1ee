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
 */

/** Where a pulled stream's values come from, one at a time. */
export interface PullSource<T> {
  /**
   * The next value, or null at the end. Never called again while a call is pending, nor after it
   * returned null or threw. After `cancel`, a pending call must settle (any value: it is dropped).
   */
  pull(): Promise<T | null>;
  /** The reader has gone: stop, and let go of what is upstream. */
  cancel(reason?: unknown): Promise<void>;
}

/** A stream read as plain calls. */
export interface Pulls<T> {
  /** The next value; null at the end and ever after (a cancel is an end); rejects with the stream's error, every time after too. */
  read(): Promise<T | null>;
  /** Cancels the stream (a read pending resolves null). Never fails. */
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
  const stream: ReadableStream<T> = new ReadableStream<T>(
    {
      async pull(controller) {
        // Read as a stream: from now on only as one (its end, error or cancel is the stream's).
        direct.delete(stream);
        const value = (await held.source.pull()) as T | null;
        if (value === null) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => {
        direct.delete(stream);
        return held.source.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  direct.set(stream, held);
  return stream;
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
  return {
    async read() {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
    cancel: (reason) => reader.cancel(reason).catch(() => {}),
  };
}

/** A source's values as a stream's reader gets them: one pull at a time, the end and the error kept, a cancel ending it. */
function sourcePulls<T>(source: PullSource<T>): Pulls<T> {
  let ended = false;
  let failure: { error: unknown } | null = null;
  /** Reads asked for and not yet settled, and the last of them (the next waits for it). */
  let unsettled = 0;
  let last: Promise<T | null> | null = null;
  const readOne = async (): Promise<T | null> => {
    try {
      if (failure) throw failure.error;
      if (ended) return null;
      try {
        const value = await source.pull();
        if (ended || value === null) {
          ended = true;
          return null;
        }
        return value;
      } catch (error) {
        // Cancelled while it was read: as a stream's read, it ends.
        if (ended) return null;
        failure = { error };
        throw error;
      }
    } finally {
      unsettled--;
    }
  };
  return {
    read() {
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
