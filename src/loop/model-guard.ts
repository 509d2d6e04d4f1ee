import type { LanguageModel } from 'ai';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import { openaiChunkReader } from './providers/openai.ts';
import type { ChunkReader } from './providers/provider-types.ts';
import { isWait, pullsOfResult, withPulledStream, type Next, type PullSource, type Pulls } from '../util/pulled-stream.ts';

type StreamPart = { type: string; [k: string]: unknown };

/** The model sent no content (text, tool call, usage, end) for the stall timeout. */
export class ModelStallError extends Error {
  readonly code = 'MODEL_STALL';
  constructor(ms: number, phase: 'first byte' | 'content') {
    super(`the model sent no ${phase} for ${ms} ms; the request was cut`);
    this.name = 'ModelStallError';
  }
}

/** The model's answer was not a whole answer (no finish reason), so it cannot count as one. */
export class IncompleteStreamError extends Error {
  readonly code = 'MODEL_INCOMPLETE';
  constructor(detail: string) {
    super(`the model's answer ended without a finish reason (${detail}); treated as a provider error`);
    this.name = 'IncompleteStreamError';
  }
}

const noop = () => {};

const CONTENT_PARTS = new Set(['text-delta', 'tool-input-start', 'tool-input-delta', 'tool-call', 'reasoning-delta', 'finish']);

const int = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);

export { usageOfRawChunk } from './providers/openai.ts';

/**
 * Usage from the provider's own end part (the SDK's provider-spec shape: `inputTokens` and
 * `outputTokens` as `{ total, cacheRead, reasoning, ... }`); null when it carries no counts.
 */
export function usageOfFinishPart(u: unknown): Usage | null {
  if (!u || typeof u !== 'object') return null;
  const { inputTokens: i, outputTokens: o } = u as { inputTokens?: Record<string, unknown>; outputTokens?: Record<string, unknown> };
  const input = int(i?.total);
  const output = int(o?.total);
  if (input === 0 && output === 0) return null;
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: input + output,
    cachedInputTokens: int(i?.cacheRead),
    reasoningTokens: int(o?.reasoning),
    ...(int(i?.cacheWrite) > 0 && { cacheWriteTokens: int(i?.cacheWrite) }),
  };
}

export interface ModelGuardOptions {
  /**
   * Called once per model call with the usage the provider reported, as soon as the call ends: at
   * its end part, or when it is cut, aborted or fails after a usage chunk arrived. Never called for
   * a call that reported none.
   */
  onUsage(usage: Usage): void | Promise<unknown>;
  /** Cut a call that sends no content for this long (keep-alive comments and lone bytes do not count). */
  stallTimeoutMs: number;
  /** Extra attempts for an answer that delivered nothing usable (an HTML or empty 200). */
  maxRetries: number;
  /**
   * How long a call whose caller aborted (a cancel, a lost lease, a shutdown) is read on for its
   * usage before it is cut: ABORT_GRACE_MS by default, or chosen by the abort's reason.
   */
  abortGraceMs?: number | ((reason: unknown) => number);
  /** A reader of one call's raw chunks, as the guarded model's provider sends them (OpenAI's by default). */
  reader?: () => ChunkReader;
  /** Told of each call read on after its caller aborted, so that a shutdown waits for its usage. */
  readOns?: ReadOns;
}

/** The calls being read on for their usage after their caller aborted (see `gracedSignal`). */
export interface ReadOns {
  /** `ended` settles once the call is over: read to its end, or cut at the end of its grace. */
  track(ended: Promise<void>): void;
  /** Settles once no call is being read on, those that start meanwhile included. */
  drained(): Promise<void>;
}

export function createReadOns(): ReadOns {
  const open = new Set<Promise<void>>();
  return {
    track(ended) {
      open.add(ended);
      void ended.finally(() => open.delete(ended));
    },
    async drained() {
      while (open.size > 0) await Promise.all(open);
    },
  };
}

/**
 * An answer already on its way when the caller aborts is read this much longer for its usage. A
 * process paused past its lease wakes with the provider's whole answer in its socket: the abort
 * comes first, and without the grace the bytes that carry the provider's bill are never read.
 */
export const ABORT_GRACE_MS = 200;

/**
 * The signal a call is made with: it aborts `grace` ms after the caller's (at once when the caller
 * had aborted before the call). `done` forgets the caller's signal once the call is over (a task's
 * signal outlives hundreds of calls).
 */
function gracedSignal(caller: AbortSignal | undefined, grace: number | ((reason: unknown) => number), readOns?: ReadOns) {
  const cut = new AbortController();
  if (!caller) return { cut, done: () => {} };
  if (caller.aborted) {
    cut.abort(caller.reason);
    return { cut, done: () => {} };
  }
  let timer: NodeJS.Timeout | undefined;
  let over = () => {};
  const onAbort = () => {
    timer = setTimeout(() => (cut.abort(caller.reason), over()), typeof grace === 'number' ? grace : grace(caller.reason));
    timer.unref();
    readOns?.track(new Promise<void>((resolve) => (over = resolve)));
  };
  caller.addEventListener('abort', onAbort, { once: true });
  return {
    cut,
    done: () => {
      caller.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      over();
    },
  };
}

/**
 * Wraps a language model so that what the provider reported is never lost and a broken answer is
 * never taken for a complete one. It reads the provider's raw chunks (so usage that arrived before a
 * connection was cut still counts), reports usage the moment a call ends (before the loop runs its
 * tools, so a cancel or crash during a tool loses no tokens), turns a stream that ends without a
 * finish reason into an error (retried while nothing had been passed on), and cuts a call that sends
 * no content for `stallTimeoutMs`. A call whose caller aborts passes nothing more on and ends with
 * the abort's reason, but is cut only `abortGraceMs` later: an answer that ends meanwhile is billed.
 */
export function guardModel(model: LanguageModel, opts: ModelGuardOptions): LanguageModel {
  const inner = model as Exclude<LanguageModel, string> & {
    doStream(options: Record<string, unknown>): Promise<{ stream: ReadableStream<StreamPart> }>;
  };
  const guarded = {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    modelId: inner.modelId,
    get supportedUrls() {
      return (inner as { supportedUrls?: unknown }).supportedUrls;
    },
    doGenerate: (options: Record<string, unknown>) => (inner as unknown as { doGenerate(o: unknown): unknown }).doGenerate(options),
    async doStream(options: { abortSignal?: AbortSignal; includeRawChunks?: boolean }) {
      const caller = options.abortSignal;
      for (let attempt = 0; ; attempt++) {
        // Our own signal: the caller's abort reaches the call after the grace, and a call with no
        // content for the stall timeout can be cut even while the provider is still waiting for
        // its first output chunk.
        const { cut, done } = gracedSignal(caller, opts.abortGraceMs ?? ABORT_GRACE_MS, opts.readOns);
        const timer = setTimeout(() => cut.abort(new ModelStallError(opts.stallTimeoutMs, 'content')), opts.stallTimeoutMs);
        const chunks = (opts.reader ?? openaiChunkReader)();
        let result: { stream: ReadableStream<StreamPart> };
        try {
          result = await inner.doStream({ ...options, includeRawChunks: true, abortSignal: cut.signal });
        } catch (err) {
          done();
          // An error event the SDK's reader met before any output is thrown with it (`data`): the
          // Responses API's `response.failed` carries what the provider billed for the call.
          const billed = usageOfFrame(chunks, err);
          if (billed) bill(opts, billed, caller?.aborted === true);
          throw cut.signal.aborted ? cut.signal.reason : caller?.aborted ? caller.reason : err;
        } finally {
          clearTimeout(timer);
        }
        const stream = guardStream(pullsOfResult(result), opts, chunks, Boolean(options.includeRawChunks), cut, caller, done);
        // Peek until the first content part: an answer with none is retried as a whole.
        const first = await stream.peek();
        if (first.kind === 'empty' && attempt < opts.maxRetries) continue;
        // The stream is made only if someone other than the loop's readers asks for it.
        return withPulledStream({ ...result }, stream.source);
      }
    },
  };
  return guarded as unknown as LanguageModel;
}

/** The usage in the event frame a failed call's error carries (`data`), if any; never throws. */
function usageOfFrame(chunks: ChunkReader, err: unknown): Usage | null {
  try {
    const frame = (err as { data?: unknown } | null)?.data;
    return frame != null ? chunks.read(frame).usage : null;
  } catch {
    return null;
  }
}

/** Reports a call's usage to `onUsage` (once per call: its callers see to that); never throws. */
function bill(opts: ModelGuardOptions, usage: Usage, abandoned: boolean) {
  try {
    const stored = opts.onUsage(usage);
    // Read on after an abort: a shutdown waits for its bill to be stored too.
    if (abandoned && stored) opts.readOns?.track(Promise.resolve(stored).then(noop, noop));
  } catch {
    // Reporting never breaks the model call; the store logs its own failures.
  }
}

function guardStream(
  reader: Pulls<StreamPart>,
  opts: ModelGuardOptions,
  chunks: ChunkReader,
  passRaw: boolean,
  cut: AbortController,
  caller: AbortSignal | undefined,
  done: () => void,
) {
  /** The provider's own end part came (some providers send none for an answer cut short). */
  let ended = false;
  /** The caller aborted: the answer is read on for its usage only (see `gracedSignal`). */
  const abandoned = () => caller?.aborted === true;
  let usage: Usage | null = null;
  let reported = false;
  let finished = false;
  let content = false;
  let stallTimer: NodeJS.Timeout | undefined;
  let stalled: ModelStallError | null = null;
  const buffered: StreamPart[] = [];
  let sourceDone = false;
  let sourceError: unknown = null;

  const report = () => {
    if (reported || !usage) return;
    reported = true;
    bill(opts, usage, abandoned());
  };
  /** (Re)starts the stall clock: one timer per call, pushed back on each content part. */
  const armStall = () => {
    if (stallTimer) {
      stallTimer.refresh();
      return;
    }
    stallTimer = setTimeout(() => {
      stalled = new ModelStallError(opts.stallTimeoutMs, 'content');
      cut.abort(stalled);
      void reader.cancel(stalled).catch(() => {});
    }, opts.stallTimeoutMs);
    stallTimer.unref?.();
  };
  const stopStall = () => {
    clearTimeout(stallTimer);
    stallTimer = undefined;
  };

  /** Reads the next part from the provider (or its wait), noting usage, finish and content on the way. */
  function next(): Next<StreamPart> {
    for (;;) {
      let part: Next<StreamPart>;
      try {
        part = reader.next();
      } catch (err) {
        stopStall();
        done();
        report();
        // Cut while the call was made (its stall timer): an answer handed on with the usage it had
        // read before the failure (openai-chat-answer.ts) fails with the cut's reason, as the call would.
        throw stalled ?? (abandoned() ? caller!.reason : cut.signal.aborted ? cut.signal.reason : err);
      }
      if (isWait(part)) return part;
      if (stalled) {
        done();
        report();
        throw stalled;
      }
      if (part === null) {
        stopStall();
        done();
        report();
        if (abandoned()) throw caller!.reason;
        if (!ended) {
          // The provider's stream ended with no end part at all (Anthropic's for an answer with no
          // `message_stop`): as incomplete as an end part without a finish reason.
          ended = true;
          return { type: 'error', error: new IncompleteStreamError(content ? 'cut mid-answer' : 'no content at all') };
        }
        return null;
      }
      if (part.type === 'raw') {
        const read = chunks.read(part.rawValue);
        if (read.usage) {
          usage = read.usage;
          armStall();
        }
        if (read.finished) finished = true;
        if (!passRaw || abandoned()) continue;
        return part;
      }
      if (abandoned()) {
        // Nothing more reaches the caller; the answer's end (and its usage) is still read.
        if (part.type === 'finish') {
          ended = true;
          usage ??= usageOfFinishPart(part.usage);
        }
        continue;
      }
      if (CONTENT_PARTS.has(part.type)) {
        armStall();
        if (part.type !== 'finish') content = true;
      }
      if (part.type === 'finish') {
        ended = true;
        stopStall();
        // A provider whose raw chunks carry no usage we can read still reports it here.
        usage ??= usageOfFinishPart(part.usage);
        report();
        if (!finished) {
          // The stream ended cleanly but the provider never said it was complete.
          const detail = content ? 'cut mid-answer' : 'no content at all';
          buffered.push(part);
          return { type: 'error', error: new IncompleteStreamError(detail) };
        }
      }
      if (part.type === 'error') report();
      return part;
    }
  }

  armStall();
  /** The next part (or its wait): those `peek` kept first; after the source's end, null, or its error again. */
  const pull = (): Next<StreamPart> => {
    if (buffered.length > 0) return buffered.shift()!;
    if (sourceDone) {
      if (sourceError) throw sourceError as Error;
      return null;
    }
    try {
      const part = next();
      if (part === null) sourceDone = true;
      return part;
    } catch (err) {
      sourceDone = true;
      sourceError = err;
      throw err;
    }
  };

  return {
    /**
     * Reads ahead to the first content part (kept for the consumer). `empty` only for an answer
     * that ended with neither content nor a finish reason (an HTML or empty 200): worth asking
     * again. A complete answer with no text is an answer.
     */
    async peek(): Promise<{ kind: 'content' | 'empty' | 'other' }> {
      const ahead: StreamPart[] = [];
      let kind: 'content' | 'empty' | 'other' = 'other';
      try {
        for (;;) {
          const part = pull();
          if (isWait(part)) {
            await part;
            continue;
          }
          if (part === null) break;
          ahead.push(part);
          if (CONTENT_PARTS.has(part.type) && part.type !== 'finish') {
            kind = 'content';
            break;
          }
          if (part.type === 'error') {
            if (!content && part.error instanceof IncompleteStreamError) kind = 'empty';
            break;
          }
        }
      } catch {
        // The source failed: the consumer gets the error after what was read.
      }
      buffered.unshift(...ahead);
      return { kind };
    },
    source: {
      next: pull,
      async cancel(reason) {
        // Left by the caller (an observer threw): what was reported so far still counts.
        stopStall();
        done();
        report();
        await reader.cancel(reason);
      },
      // No read-ahead: nothing is pulled before `peek` has finished looking.
    } satisfies PullSource<StreamPart>,
  };
}
