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
import { isAbortError, safeParseJSON, type FlexibleSchema, type ParseResult } from '@ai-sdk/provider-utils';
import { createParser } from 'eventsource-parser';

type Part = LanguageModelV3StreamPart;
type Emit = (part: Part) => void;

/** The JSON events of an answer's body, parsed and checked against `schema`, a body read at a time. */
export interface SseEvents<T> {
  /** The events the next read(s) of the body complete, in order (at least one); null at the body's end. */
  next(): Promise<Array<ParseResult<T>> | null>;
  cancel(reason?: unknown): Promise<void>;
}

/** The response an answer's body is of: what an error reading it names, as the SDK's does. */
export interface AnswerResponse {
  url: string;
  statusCode: number;
  responseHeaders: Record<string, string> | undefined;
  requestBodyValues: unknown;
}

export function sseEvents<T>(body: ReadableStream<Uint8Array>, schema: FlexibleSchema<T>, response: AnswerResponse): SseEvents<T> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let data: string[] = [];
  // As the SDK reads an answer: `[DONE]` ends nothing and is dropped, and an event the body ends
  // inside of (no blank line after it) is never seen.
  const parser = createParser({ onEvent: (event) => event.data !== '[DONE]' && data.push(event.data) });
  let ended = false;
  return {
    async next() {
      while (data.length === 0 && !ended) {
        let read: Awaited<ReturnType<typeof reader.read>>;
        try {
          read = await reader.read();
        } catch (error) {
          // As the SDK wraps a body's failure (a connection cut mid-answer): an abort stays itself.
          if (isAbortError(error)) throw error;
          throw new APICallError({ message: 'Failed to process successful response', cause: error, ...response });
        }
        const { done, value } = read;
        if (done) {
          ended = true;
          parser.feed(decoder.decode());
        } else parser.feed(decoder.decode(value, { stream: true }));
      }
      if (data.length === 0) return null;
      const texts = data;
      data = [];
      const events: Array<ParseResult<T>> = [];
      for (const text of texts) events.push(await safeParseJSON({ text, schema }));
      return events;
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/** What a provider's transform does with an answer's events: its own state, per answer. */
export interface AnswerTransform<T> {
  /** The parts before any event (`stream-start`). */
  start(emit: Emit): void;
  /** The parts of one event, or of one that failed to parse or to match the schema. */
  event(event: ParseResult<T>, emit: Emit): void;
  /** The parts after the body's last event (the open blocks' ends, `finish`). */
  end(emit: Emit): void;
}

/**
 * The answer's parts: `read` (events already read, by a check before the answer was handed on)
 * first, then the rest of `events`. Each pull hands on every part of one read of the body. An
 * error of the body or of the transform ends the stream after the parts before it; a cancel
 * cancels the body.
 */
export function partStream<T>(events: SseEvents<T>, transform: AnswerTransform<T>, read: Array<ParseResult<T>> = []): ReadableStream<Part> {
  let started = false;
  let cancelled = false;
  return new ReadableStream<Part>(
    {
      async pull(controller) {
        const parts: Part[] = [];
        const emit: Emit = (part) => parts.push(part);
        try {
          if (!started) {
            started = true;
            transform.start(emit);
            for (const event of read) transform.event(event, emit);
          }
          while (parts.length === 0) {
            const batch = await events.next();
            // Cancelled while reading: the reader has gone, and the answer's end is not its end.
            if (cancelled) return;
            if (batch === null) {
              transform.end(emit);
              for (const part of parts) controller.enqueue(part);
              return controller.close();
            }
            for (const event of batch) transform.event(event, emit);
          }
        } catch (err) {
          if (cancelled) return;
          for (const part of parts) controller.enqueue(part);
          return controller.error(err);
        }
        for (const part of parts) controller.enqueue(part);
      },
      cancel: (reason) => {
        cancelled = true;
        return events.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
