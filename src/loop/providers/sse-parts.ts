/**
 * A provider's streamed answer (server-sent events of JSON) read into the model's stream parts in
 * one stream. The SDK's providers read it through a chain of web streams (the text decoder, the
 * event parser, JSON and its schema, the provider's transform), which at a thousand answers at
 * once costs the main thread more than everything else a chunk goes through (BENCHMARKS.md, stop
 * 67). Here the same steps run as plain calls on each read of the body: eventsource-parser (the
 * SDK's own framing library), the SDK's `safeParseJSON` with the provider's chunk schema, then the
 * provider's transform (openai-chat-answer.ts). The parts and their errors are the SDK's; only the
 * plumbing between them differs.
 */
import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { isAbortError, safeParseJSON, safeValidateTypes, secureJsonParse, type FlexibleSchema, type ParseResult } from '@ai-sdk/provider-utils';
import { createParser } from 'eventsource-parser';
import { isWait, type Next, type PullSource, type Pulls } from '../../util/pulled-stream.ts';

type Part = LanguageModelV3StreamPart;
type Emit = (part: Part) => void;

/** The JSON events of an answer's body, parsed and checked against `schema`, a body read at a time. */
export interface SseEvents<T> {
  /** The events the next read(s) of the body complete, in order (at least one); null at the body's end; or a wait (util/pulled-stream.ts). */
  next(): Next<Array<ParseResult<T>>>;
  cancel(reason?: unknown): Promise<void>;
}

/** The response an answer's body is of: what an error reading it names, as the SDK's does. */
export interface AnswerResponse {
  url: string;
  statusCode: number;
  responseHeaders: Record<string, string> | undefined;
  requestBodyValues: unknown;
}

/**
 * The events of an answer's body (its bytes by plain calls), each parsed as the SDK's `safeParseJSON` parses it with `schema`. `quick`
 * may answer for the schema: given the parsed JSON, the value the schema's check would make of it,
 * or undefined to have the schema check it.
 */
export function sseEvents<T>(
  reader: Pulls<Uint8Array>,
  schema: FlexibleSchema<T>,
  response: AnswerResponse,
  quick?: (value: unknown) => T | undefined,
): SseEvents<T> {
  const decoder = new TextDecoder();
  let data: string[] = [];
  // As the SDK reads an answer: `[DONE]` ends nothing and is dropped, and an event the body ends
  // inside of (no blank line after it) is never seen.
  const parser = createParser({ onEvent: (event) => event.data !== '[DONE]' && data.push(event.data) });
  let ended = false;
  /** Events whose check is a promise (the schema's): their results once all are in, or the wait for them. */
  let checked: Array<ParseResult<T>> | null = null;
  let checking: Promise<unknown> | null = null;
  let checkFailed: { error: unknown } | null = null;
  return {
    next() {
      if (checking) return checking;
      if (checkFailed) throw checkFailed.error;
      if (checked) {
        const events = checked;
        checked = null;
        return events;
      }
      while (data.length === 0 && !ended) {
        let read: Next<Uint8Array>;
        try {
          read = reader.next();
        } catch (error) {
          throw bodyError(error, response);
        }
        if (isWait(read)) return read;
        // Only text is fed: the parser's one check for a byte-order mark at the start is made on
        // its first text, and a first read inside the mark's bytes decodes to none.
        const text = read === null ? decoder.decode() : decoder.decode(read, { stream: true });
        if (read === null) ended = true;
        if (text.length > 0) parser.feed(text);
      }
      if (data.length === 0) return null;
      const texts = data;
      data = [];
      const events: Array<ParseResult<T> | Promise<ParseResult<T>>> = texts.map((text) => parseEvent(text, schema, quick));
      if (!events.some(isWait)) return events as Array<ParseResult<T>>;
      // A check that awaits (the schema's, for an event the quick check left to it): the events
      // go on together once all are checked, in order.
      checking = Promise.all(events.map(async (event) => event)).then(
        (all) => {
          checked = all;
          checking = null;
        },
        (error: unknown) => {
          checkFailed = { error };
          checking = null;
        },
      );
      return checking;
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/**
 * `text` as the SDK's `safeParseJSON` parses it with `schema`, parsed once: the value `quick`
 * makes of the JSON at once, or else the schema's check of it (a promise). A text that is not
 * JSON goes to the SDK's parse, which names the error.
 */
function parseEvent<T>(text: string, schema: FlexibleSchema<T>, quick?: (value: unknown) => T | undefined): ParseResult<T> | Promise<ParseResult<T>> {
  if (!quick) return safeParseJSON({ text, schema });
  let rawValue: unknown;
  try {
    rawValue = secureJsonParse(text);
  } catch {
    return safeParseJSON({ text, schema });
  }
  const value = quick(rawValue);
  return value === undefined ? safeValidateTypes({ value: rawValue, schema }) : { success: true, value, rawValue };
}

/** Node's and undici's codes of a connection lost, refused or timed out, as the SDK retries them. */
const NETWORK_CODES = new Set([
  'ConnectionRefused',
  'ConnectionClosed',
  'FailedToOpenSocket',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * True when `error` or one of its causes is a network failure (a code of NETWORK_CODES). The SDK's
 * walk, by `cause` only: stall-guard.ts's `inChain` also reads retries' and aggregates' errors,
 * which would call retryable what the SDK does not.
 */
function isNetworkFailure(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  }
  return false;
}

/**
 * A failure reading an answer's body as the SDK reports it: an abort as it is, anything else as
 * the call's error, retryable (and so worth a retry or the fallback model) when the connection
 * was lost or timed out.
 */
function bodyError(error: unknown, response: AnswerResponse): unknown {
  if (isAbortError(error)) return error;
  return new APICallError({
    message: 'Failed to process successful response',
    cause: error,
    ...response,
    ...(isNetworkFailure(error) && { isRetryable: true }),
  });
}

/** What a provider's transform does with an answer's events, emitting parts: its own state, per answer. */
export interface AnswerTransform<T> {
  /** The parts before any event (`stream-start`). */
  start(): void;
  /** The parts of one event, or of one that failed to parse or to match the schema. */
  event(event: ParseResult<T>): void;
  /** The parts after the body's last event (the open blocks' ends, `finish`). */
  end(): void;
}

/**
 * The answer's parts: `read` (events already read, by a check before the answer was handed on)
 * first, then the rest of `events`, through the transform `transformOf` makes with the stream's
 * emitter. Each read of the body makes the parts of its events, handed on one by one. An error of
 * the body or of the transform ends the stream once every part before it was read (and an error
 * of the transform cancels the body); a cancel cancels the body, and never fails. A source of
 * parts: the loop's readers read it by plain calls, anyone else as a stream (util/pulled-stream.ts).
 */
export function partSource<T>(events: SseEvents<T>, transformOf: (emit: Emit) => AnswerTransform<T>, read: Array<ParseResult<T>> = []): PullSource<Part> {
  /** The parts made and not yet handed on, from `at`: a new array each read of the body, nothing kept of the last. */
  let parts: Part[] = [];
  let at = 0;
  const transform = transformOf((part) => parts.push(part));
  let first: Array<ParseResult<T>> | null = read;
  let cancelled = false;
  let closed = false;
  /** An error held back until the parts before it were read. */
  let failed: { error: unknown } | null = null;
  return {
    next() {
      if (at < parts.length) return parts[at++];
      if (failed) throw failed.error;
      if (closed || cancelled) return null;
      if (at > 0) {
        parts = [];
        at = 0;
      }
      try {
        if (first) {
          const pending = first;
          // Let go of them: an answer may have sent many before its first output.
          first = null;
          transform.start();
          for (const event of pending) transform.event(event);
        }
        while (parts.length === 0) {
          const batch = events.next();
          // Nothing yet: asked again once there may be (the parts array stays empty meanwhile).
          if (isWait(batch)) return batch;
          if (batch === null) {
            transform.end();
            closed = true;
            break;
          }
          for (const event of batch) transform.event(event);
        }
      } catch (error) {
        if (cancelled) return null;
        // The body may still be sending: nobody will read it now.
        events.cancel(error).catch(() => {});
        failed = { error };
      }
      if (at < parts.length) return parts[at++];
      if (failed) throw failed.error;
      return null;
    },
    cancel: (reason) => {
      cancelled = true;
      return events.cancel(reason).catch(() => {});
    },
  };
}
