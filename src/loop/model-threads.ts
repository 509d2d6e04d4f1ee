import { Worker } from 'node:worker_threads';
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import { ModelStallError } from './model-guard.ts';

export interface ModelThreadSettings {
  apiKey?: string;
  baseURL?: string;
  api: 'chat' | 'responses';
  stallTimeoutMs?: number;
  onHttpError?(status: number): void;
}

/** A provider's model whose streamed calls run on a model thread; everything else runs here. */
export interface ModelThreads {
  model(local: LanguageModelV3): LanguageModelV3;
  /** Stops the threads; calls still streaming fail as a provider would (a retryable error). */
  close(): Promise<void>;
}

/** An error as model-thread.mjs posts it. */
interface WireError {
  name?: string;
  message?: string;
  stack?: string;
  code?: string;
  apiCall?: boolean;
  url?: string;
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  isRetryable?: boolean;
  data?: unknown;
  cause?: WireError;
  /** A thrown value that was not an Error. */
  value?: unknown;
}

type Posted =
  | { id: number; started: { request?: { body?: unknown }; response?: { headers?: Record<string, string> } } }
  | { id: number; part: LanguageModelV3StreamPart }
  | { id: number; end: true }
  | { id: number; error: WireError }
  | { httpError: number };

/** Messages from a thread handed over in one turn of the event loop. */
const PER_TURN = 64;

interface Call {
  started(result: Omit<LanguageModelV3StreamResult, 'stream'>): void;
  part(part: LanguageModelV3StreamPart): void;
  end(): void;
  fail(err: Error): void;
}

interface Thread {
  worker: Worker;
  calls: Map<number, Call>;
}

/**
 * Model threads: the provider's HTTP requests and the parsing of its streamed answers (SSE,
 * JSON, the schema check of every chunk), which with hundreds of tasks streaming at once took
 * turns of 100-200 ms of the event loop, run on `count` worker threads. The SDK's loop, the tools,
 * billing and events stay here: a call is one message out, its parts come back in order, a
 * thread's parts of one turn in one message. Errors come back as the provider's own (an
 * `APICallError` keeps its status and retryability, so the SDK's retries and the fallback models
 * decide as before).
 */
export function startModelThreads(count: number, settings: ModelThreadSettings): ModelThreads {
  const threads: Array<Thread | null> = Array.from({ length: count }, () => null);
  let next = 0;
  let closed = false;

  const spawn = (slot: number): Thread => {
    const worker = new Worker(new URL('./model-thread.mjs', import.meta.url), {
      workerData: { apiKey: settings.apiKey, baseURL: settings.baseURL, api: settings.api, stallTimeoutMs: settings.stallTimeoutMs },
    });
    worker.unref();
    const thread: Thread = { worker, calls: new Map() };
    // What each part sets off (the SDK's loop, the guard, events, the next request) runs when
    // this handler returns: a batch of hundreds of streams' parts is handed over PER_TURN at a
    // time, the event loop taking a turn in between, so no other work waits for all of them.
    const inbox: Posted[] = [];
    let scheduled = false;
    const deliver = () => {
      scheduled = false;
      const some = inbox.splice(0, PER_TURN);
      for (const msg of some) {
        if ('httpError' in msg) {
          settings.onHttpError?.(msg.httpError);
          continue;
        }
        const call = thread.calls.get(msg.id);
        if (!call) continue;
        if ('part' in msg) call.part(partFromWire(msg.part, settings));
        else if ('started' in msg) call.started(msg.started);
        else if ('end' in msg) call.end();
        else call.fail(asError(errorFromWire(msg.error, settings)));
      }
      if (inbox.length > 0) {
        scheduled = true;
        setImmediate(deliver);
      }
    };
    worker.on('message', (batch: Posted[]) => {
      for (const msg of batch) inbox.push(msg);
      if (!scheduled) deliver();
    });
    const lost = (why: string) => {
      if (threads[slot] === thread) threads[slot] = null;
      const err = new APICallError({ message: `the model thread stopped (${why})`, url: settings.baseURL ?? '', requestBodyValues: {}, isRetryable: true });
      for (const call of [...thread.calls.values()]) call.fail(err);
      thread.calls.clear();
    };
    worker.on('error', (err) => lost(err.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    return thread;
  };

  /** The thread with the fewest calls under way, started on first use or after it stopped. */
  const pick = (): Thread => {
    let best = -1;
    for (let i = 0; i < count; i++) {
      const slot = (next + i) % count;
      const size = threads[slot]?.calls.size ?? 0;
      if (best === -1 || size < (threads[best]?.calls.size ?? 0)) best = slot;
      if (size === 0) break;
    }
    next = (best + 1) % count;
    return (threads[best] ??= spawn(best));
  };

  let ids = 0;
  function doStream(local: LanguageModelV3, options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { abortSignal, ...rest } = options;
    // The reason is the caller's, whatever it is, as fetch rejects with it.
    if (abortSignal?.aborted) return Promise.reject(abortSignal.reason as Error);
    if (closed)
      return Promise.reject(new APICallError({ message: 'the service is stopping', url: settings.baseURL ?? '', requestBodyValues: {}, isRetryable: false }));
    const thread = pick();
    const id = ++ids;
    return new Promise((resolve, reject) => {
      let controller!: ReadableStreamDefaultController<LanguageModelV3StreamPart>;
      let started = false;
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        start: (c) => {
          controller = c;
        },
        cancel: () => stop(),
      });
      const forget = () => {
        abortSignal?.removeEventListener('abort', onAbort);
        thread.calls.delete(id);
      };
      /** Tells the thread to drop the request (its answer is no longer read). */
      const stop = () => {
        if (!thread.calls.has(id)) return;
        forget();
        thread.worker.postMessage({ op: 'cancel', id });
      };
      // As fetch does: an abort rejects the call, or errors its answer, with the signal's reason.
      const onAbort = () => {
        stop();
        if (started) controller.error(abortSignal!.reason);
        else reject(abortSignal!.reason as Error);
      };
      abortSignal?.addEventListener('abort', onAbort, { once: true });
      thread.calls.set(id, {
        started: (result) => {
          started = true;
          resolve({ ...result, stream });
        },
        part: (part) => controller.enqueue(part),
        end: () => {
          forget();
          controller.close();
        },
        fail: (err) => {
          forget();
          if (started) controller.error(err);
          else reject(err);
        },
      });
      thread.worker.postMessage({ op: 'stream', id, modelId: local.modelId, options: optionsToWire(rest) });
    });
  }

  return {
    model: (local) => ({
      specificationVersion: local.specificationVersion,
      provider: local.provider,
      modelId: local.modelId,
      get supportedUrls() {
        return local.supportedUrls;
      },
      doGenerate: (options) => local.doGenerate(options),
      doStream: (options) => doStream(local, options),
    }),
    async close() {
      closed = true;
      await Promise.all(threads.flatMap((t) => (t ? [t.worker.terminate()] : [])));
    },
  };
}

/** A prompt's file given by URL goes as its text (a URL object cannot be posted); the thread rebuilds it. */
function optionsToWire(options: Omit<LanguageModelV3CallOptions, 'abortSignal'>) {
  if (!options.prompt.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'file' && p.data instanceof URL))) return options;
  return {
    ...options,
    prompt: options.prompt.map((m) =>
      Array.isArray(m.content)
        ? { ...m, content: m.content.map((p) => (p.type === 'file' && p.data instanceof URL ? { ...p, data: p.data.href, urlData: true } : p)) }
        : m,
    ),
  };
}

function partFromWire(part: LanguageModelV3StreamPart, settings: ModelThreadSettings): LanguageModelV3StreamPart {
  return part.type === 'error' ? { ...part, error: errorFromWire(part.error as WireError, settings) } : part;
}

/** A thrown value that is not an Error (some libraries throw strings) as one, its text kept. */
function asError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}

/** Turns a posted error back into one: the provider's `APICallError`, a stall, or an Error with its name and code. */
export function errorFromWire(wire: WireError, settings: Pick<ModelThreadSettings, 'stallTimeoutMs' | 'baseURL'>): unknown {
  if ('value' in wire) return wire.value;
  const cause = wire.cause ? errorFromWire(wire.cause, settings) : undefined;
  if (wire.code === 'MODEL_STALL_FIRST_BYTE') return new ModelStallError(settings.stallTimeoutMs ?? 0, 'first byte');
  let err: Error;
  if (wire.apiCall) {
    err = new APICallError({
      message: wire.message ?? 'the model call failed',
      url: wire.url ?? settings.baseURL ?? '',
      requestBodyValues: {},
      statusCode: wire.statusCode,
      responseHeaders: wire.responseHeaders,
      responseBody: wire.responseBody,
      isRetryable: wire.isRetryable,
      data: wire.data,
      cause,
    });
  } else {
    err = new Error(wire.message, cause === undefined ? undefined : { cause });
    err.name = wire.name ?? 'Error';
  }
  if (wire.code) (err as Error & { code?: string }).code = wire.code;
  if (wire.stack) err.stack = wire.stack;
  return err;
}
