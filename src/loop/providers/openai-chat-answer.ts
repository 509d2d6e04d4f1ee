/**
 * OpenAI's Chat Completions answers read without the SDK's chain of web streams (sse-parts.ts):
 * the SDK's chat model still builds every request (its `getArgs`: the prompt, tools, settings and
 * warnings) and handles every failed response; its streamed answer becomes the same parts the
 * SDK's chat model makes of it, the same chunk schema, tool-call tracker and error frames. The
 * test beside this file reads the same bytes both ways and compares every part; it also names
 * the @ai-sdk/openai version this was written against, so that an upgrade is read against it.
 */
import {
  APICallError,
  EmptyResponseBodyError,
  type JSONValue,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
  type SharedV3Warning,
} from '@ai-sdk/provider';
import {
  StreamingToolCallTracker,
  combineHeaders,
  createJsonErrorResponseHandler,
  extractResponseHeaders,
  generateId,
  lazySchema,
  postJsonToApi,
  zodSchema,
  type FetchFunction,
  type ParseResult,
} from '@ai-sdk/provider-utils';
import { z } from 'zod';
import { partSource, sseEvents, type AnswerTransform } from './sse-parts.ts';
import { isWait, pulledSourceOf, pullsOf, withPulledStream } from '../../util/pulled-stream.ts';

const errorData = z.object({
  error: z.object({
    message: z.string(),
    // Loose: compatible servers fill these their own ways.
    type: z.string().nullish(),
    param: z.any().nullish(),
    code: z.union([z.string(), z.number()]).nullish(),
  }),
});

const logprob = z.object({ token: z.string(), logprob: z.number(), top_logprobs: z.array(z.object({ token: z.string(), logprob: z.number() })) });

/** One streamed chunk, or an error frame, as the SDK's chat model checks it (unknown keys dropped). Its test reads it too. */
export const chunkData = z.union([
  z.object({
    id: z.string().nullish(),
    created: z.number().nullish(),
    model: z.string().nullish(),
    choices: z.array(
      z.object({
        delta: z
          .object({
            role: z.enum(['assistant']).nullish(),
            content: z.string().nullish(),
            refusal: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number(),
                  id: z.string().nullish(),
                  type: z.literal('function').nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }),
                }),
              )
              .nullish(),
            annotations: z
              .array(
                z.object({
                  type: z.literal('url_citation'),
                  url_citation: z.object({ start_index: z.number(), end_index: z.number(), url: z.string(), title: z.string() }),
                }),
              )
              .nullish(),
          })
          .nullish(),
        logprobs: z.object({ content: z.array(logprob).nullish(), refusal: z.array(logprob).nullish() }).nullish(),
        finish_reason: z.string().nullish(),
        index: z.number(),
      }),
    ),
    usage: z
      .object({
        prompt_tokens: z.number().nullish(),
        completion_tokens: z.number().nullish(),
        total_tokens: z.number().nullish(),
        prompt_tokens_details: z.object({ cached_tokens: z.number().nullish(), cache_write_tokens: z.number().nullish() }).nullish(),
        completion_tokens_details: z
          .object({
            reasoning_tokens: z.number().nullish(),
            accepted_prediction_tokens: z.number().nullish(),
            rejected_prediction_tokens: z.number().nullish(),
          })
          .nullish(),
      })
      .nullish(),
  }),
  errorData,
]);
type Chunk = z.infer<typeof chunkData>;
type ChatChunk = Exclude<Chunk, { error: unknown }>;
type ChatUsage = NonNullable<ChatChunk['usage']>;

const chunkSchema = lazySchema(() => zodSchema(chunkData));

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
/** A `.nullish()` key of the schema: absent, null, or a value `ok` accepts. */
const nullish = (o: Json, key: string, ok: (v: unknown) => boolean) => !(key in o) || o[key] === null || ok(o[key]);
const isString = (v: unknown) => typeof v === 'string';
const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
/** Copies the keys `o` has, of `keys`, in that order (the schema's): what zod's parse keeps of an object. */
const pick = (o: Json, keys: readonly string[]) => {
  const out: Json = {};
  for (const key of keys) if (key in o) out[key] = o[key];
  return out;
};
const CHUNK_KEYS = ['id', 'created', 'model', 'choices', 'usage'] as const;
const CHOICE_KEYS = ['delta', 'logprobs', 'finish_reason', 'index'] as const;
const DELTA_KEYS = ['role', 'content', 'refusal', 'tool_calls', 'annotations'] as const;
const TOOL_CALL_KEYS = ['index', 'id', 'type', 'function'] as const;
const FUNCTION_KEYS = ['name', 'arguments'] as const;
const USAGE_KEYS = ['prompt_tokens', 'completion_tokens', 'total_tokens', 'prompt_tokens_details', 'completion_tokens_details'] as const;
const USAGE_DETAILS = [
  ['prompt_tokens_details', ['cached_tokens', 'cache_write_tokens']],
  ['completion_tokens_details', ['reasoning_tokens', 'accepted_prediction_tokens', 'rejected_prediction_tokens']],
] as const;

/** An object whose `keys` are each absent, null or a number, as zod makes it; else undefined. */
const numbers = (v: unknown, keys: readonly string[]): Json | undefined =>
  isObject(v) && keys.every((key) => nullish(v, key, isNumber)) ? pick(v, keys) : undefined;

/** A chunk's `usage` (an object) as zod makes it, or undefined for anything else. */
function plainUsage(usage: unknown): Json | undefined {
  const out = numbers(usage, USAGE_KEYS.slice(0, 3));
  if (!out || !isObject(usage)) return undefined;
  for (const [key, keys] of USAGE_DETAILS) {
    if (!(key in usage)) continue;
    const details = usage[key] === null ? null : numbers(usage[key], keys);
    if (details === undefined) return undefined;
    out[key] = details;
  }
  return out;
}

/** A delta's `tool_calls` (an array) as zod makes it, or undefined for anything else. */
function plainToolCalls(calls: unknown): Json[] | undefined {
  if (!Array.isArray(calls)) return undefined;
  const out: Json[] = [];
  for (const call of calls as unknown[]) {
    if (!isObject(call) || !isNumber(call.index) || !nullish(call, 'id', isString) || !nullish(call, 'type', (v) => v === 'function')) return undefined;
    const fn = call.function;
    if (!isObject(fn) || !nullish(fn, 'name', isString) || !nullish(fn, 'arguments', isString)) return undefined;
    const picked = pick(call, TOOL_CALL_KEYS);
    picked.function = pick(fn, FUNCTION_KEYS);
    out.push(picked);
  }
  return out;
}

/**
 * What `chunkData`'s check makes of the chunks every answer is made of, without zod: text, a role,
 * a refusal, a finish, tool calls' deltas and usage, with no annotations or logprobs. It is the
 * object zod's parse makes (the schema's keys that are present, in the schema's order, the others
 * dropped); for any other value, undefined, and zod checks it. At a thousand answers at once,
 * zod's parse of each chunk was an eighth of the main thread's garbage (BENCHMARKS.md, stop 68),
 * and of the tool calls' and usage chunks a twelfth (stop 69).
 * The test beside this file compares the two on generated chunks.
 */
export function plainChunk(value: unknown): ChatChunk | undefined {
  if (!isObject(value) || !nullish(value, 'id', isString) || !nullish(value, 'created', isNumber) || !nullish(value, 'model', isString)) return undefined;
  const usage = value.usage == null ? value.usage : plainUsage(value.usage);
  if (usage === undefined && 'usage' in value) return undefined;
  if (!Array.isArray(value.choices)) return undefined;
  const choices: Json[] = [];
  for (const choice of value.choices as unknown[]) {
    if (!isObject(choice) || !isNumber(choice.index) || !nullish(choice, 'finish_reason', isString) || !nullish(choice, 'logprobs', () => false))
      return undefined;
    const delta = choice.delta;
    if (!nullish(choice, 'delta', isObject)) return undefined;
    const out = pick(choice, CHOICE_KEYS);
    if (isObject(delta)) {
      if (!nullish(delta, 'role', (v) => v === 'assistant') || !nullish(delta, 'content', isString) || !nullish(delta, 'refusal', isString)) return undefined;
      if (!nullish(delta, 'annotations', () => false)) return undefined;
      const calls = delta.tool_calls == null ? delta.tool_calls : plainToolCalls(delta.tool_calls);
      if (calls === undefined && 'tool_calls' in delta) return undefined;
      out.delta = pick(delta, DELTA_KEYS);
      if (calls) (out.delta as Json).tool_calls = calls;
    }
    choices.push(out);
  }
  const chunk = pick(value, CHUNK_KEYS);
  chunk.choices = choices;
  if (usage) chunk.usage = usage;
  return chunk as ChatChunk;
}
const failedResponse = createJsonErrorResponseHandler({
  errorSchema: lazySchema(() => zodSchema(errorData)),
  errorToMessage: (data: z.infer<typeof errorData>) => data.error.message,
});

/** What of the SDK's chat model this file uses; absent (another version of it), the SDK's own stream is used. */
interface ChatModelInternals {
  getArgs(options: LanguageModelV3CallOptions): Promise<{ args: Record<string, unknown>; warnings: SharedV3Warning[] }>;
  config: { url(o: { path: string; modelId: string }): string; headers(): Record<string, string | undefined>; fetch?: FetchFunction };
}

const hasInternals = (model: object): model is ChatModelInternals & LanguageModelV3 => {
  const m = model as Partial<ChatModelInternals>;
  return typeof m.getArgs === 'function' && typeof m.config?.url === 'function' && typeof m.config.headers === 'function';
};

/** `model` (the SDK's chat model) with its streamed answers read by this file. */
export function openaiChatAnswers(model: LanguageModelV3): LanguageModelV3 {
  if (!hasInternals(model)) return model;
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls;
    },
    doGenerate: (options) => model.doGenerate(options),
    doStream: (options) => streamAnswer(model, options),
  };
}

async function streamAnswer(model: ChatModelInternals & LanguageModelV3, options: LanguageModelV3CallOptions) {
  const { args, warnings } = await model.getArgs(options);
  const body = { ...args, stream: true, stream_options: { include_usage: true } };
  const url = model.config.url({ path: '/chat/completions', modelId: model.modelId });
  const { responseHeaders, value: answer } = await postJsonToApi({
    url,
    headers: combineHeaders(model.config.headers(), options.headers),
    body,
    failedResponseHandler: failedResponse,
    successfulResponseHandler: async ({ response }) => {
      // The service's fetch makes no web stream of an event stream's body unless asked for one (request-fetch.ts).
      const bytes = pulledSourceOf<Uint8Array>(response) ?? (response.body ? pullsOf<Uint8Array>(response.body) : null);
      if (bytes === null) throw new EmptyResponseBodyError({});
      return { responseHeaders: extractResponseHeaders(response), value: { body: bytes, statusCode: response.status } };
    },
    abortSignal: options.abortSignal,
    fetch: model.config.fetch,
  });
  const events = sseEvents(answer.body, chunkSchema, { url, statusCode: answer.statusCode, responseHeaders, requestBodyValues: body }, plainChunk);
  // As the SDK does: an error frame before any output is the call's error (and may be retried).
  const read: Array<ParseResult<Chunk>> = [];
  let frame: { error: unknown } | null = null;
  try {
    for (let decided = false; !decided && !frame;) {
      const batch = events.next();
      if (isWait(batch)) {
        await batch;
        continue;
      }
      if (batch === null) break;
      for (const event of batch) {
        read.push(event);
        if (decided || frame) continue;
        if (!event.success || isOutput(event.value)) decided = true;
        else if ('error' in event.value) frame = { error: event.value.error };
      }
    }
  } catch (failure) {
    // The body failed, or the call was cut, before any output: the call's error, as the SDK's,
    // unless the provider had already reported its usage (an answer with no output, then its
    // connection lost). Then the parts read go on, usage and all, and the failure after them (the
    // events keep it), so that the guard bills what the provider reported; it is not retried.
    if (!usageRead(read)) throw failure;
  }
  // An error frame after the usage: handed on the same way, the frame an error part after it.
  if (frame && !usageRead(read)) {
    events.cancel().catch(() => {});
    throw streamError(frame.error, url, body, responseHeaders);
  }
  // The stream is made only if someone other than the loop's readers asks for it.
  return withPulledStream(
    { request: { body }, response: { headers: responseHeaders } },
    partSource(events, chatTransform(warnings, options.includeRawChunks === true), read),
  );
}

/** Whether the provider reported its usage in the events read. */
const usageRead = (read: Array<ParseResult<Chunk>>) => read.some((event) => event.success && !('error' in event.value) && event.value.usage != null);

const isOutput = (chunk: Chunk) =>
  !('error' in chunk) &&
  chunk.choices.some((c) => !!c.delta?.content || !!c.delta?.refusal || (c.delta?.tool_calls?.length ?? 0) > 0 || (c.delta?.annotations?.length ?? 0) > 0);

/** One answer's parts (text in one block, `0`; tool calls, sources, response metadata, the finish), made with `emit`. */
const chatTransform =
  (warnings: SharedV3Warning[], includeRaw: boolean) =>
  (emit: (part: LanguageModelV3StreamPart) => void): AnswerTransform<Chunk> => {
    const tools = new StreamingToolCallTracker({ enqueue: emit }, { generateId, typeValidation: 'if-present' });
    let finishReason: LanguageModelV3FinishReason = { unified: 'other', raw: undefined };
    let usage: ChatUsage | undefined;
    let rawFinish: string | undefined;
    let metadataSent = false;
    let textOpen = false;
    let refused = false;
    const logprobs: JSONValue[] = [];
    let hasLogprobs = false;
    const openai: Record<string, JSONValue> = {};
    const errored = (error: unknown) => {
      finishReason = { unified: 'error', raw: undefined };
      rawFinish = undefined;
      emit({ type: 'error', error });
    };
    return {
      start() {
        emit({ type: 'stream-start', warnings });
      },
      event(event) {
        if (includeRaw) emit({ type: 'raw', rawValue: event.rawValue });
        if (!event.success) return errored(event.error);
        const chunk = event.value;
        if ('error' in chunk) return errored(chunk.error);
        if (!metadataSent && (chunk.id || chunk.model || chunk.created)) {
          metadataSent = true;
          emit({
            type: 'response-metadata',
            id: chunk.id ?? undefined,
            modelId: chunk.model ?? undefined,
            timestamp: chunk.created ? new Date(chunk.created * 1000) : undefined,
          });
        }
        if (chunk.usage != null) {
          usage = chunk.usage;
          const details = chunk.usage.completion_tokens_details;
          if (details?.accepted_prediction_tokens != null) openai.acceptedPredictionTokens = details.accepted_prediction_tokens;
          if (details?.rejected_prediction_tokens != null) openai.rejectedPredictionTokens = details.rejected_prediction_tokens;
        }
        const choice = chunk.choices[0];
        if (choice?.finish_reason != null) rawFinish = choice.finish_reason;
        if (choice?.logprobs != null && (choice.logprobs.content != null || choice.logprobs.refusal != null)) {
          hasLogprobs = true;
          logprobs.push(...(choice.logprobs.content ?? []), ...(choice.logprobs.refusal ?? []));
        }
        const delta = choice?.delta;
        if (delta == null) return;
        const texts: string[] = [];
        if (delta.content) texts.push(delta.content);
        if (delta.refusal) {
          refused = true;
          texts.push(delta.refusal);
        }
        // An empty content opens the text block as the SDK's does (its first chunk often carries one).
        if (texts.length === 0 && delta.content === '') texts.push('');
        for (const text of texts) {
          if (!textOpen) {
            emit({ type: 'text-start', id: '0' });
            textOpen = true;
          }
          emit({ type: 'text-delta', id: '0', delta: text });
        }
        for (const call of delta.tool_calls ?? []) tools.processDelta(call);
        for (const a of delta.annotations ?? [])
          emit({ type: 'source', sourceType: 'url', id: generateId(), url: a.url_citation.url, title: a.url_citation.title });
      },
      end() {
        if (textOpen) emit({ type: 'text-end', id: '0' });
        tools.flush();
        if (rawFinish != null) finishReason = { unified: unifiedFinish(rawFinish, refused), raw: rawFinish };
        if (hasLogprobs) openai.logprobs = logprobs;
        emit({ type: 'finish', finishReason, usage: usageOf(usage), providerMetadata: { openai } });
      },
    };
  };

function unifiedFinish(raw: string, refused: boolean): LanguageModelV3FinishReason['unified'] {
  switch (raw) {
    case 'stop':
      return refused ? 'content-filter' : 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case 'function_call':
    case 'tool_calls':
      return 'tool-calls';
    default:
      return 'other';
  }
}

/** The answer's usage in the SDK's terms (the cache's reads and writes out of the input, reasoning out of the output). */
function usageOf(usage: ChatUsage | undefined): LanguageModelV3Usage {
  if (usage == null) {
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      raw: undefined,
    };
  }
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  const cacheRead = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const cacheWrite = usage.prompt_tokens_details?.cache_write_tokens ?? undefined;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  return {
    inputTokens: { total: input, noCache: input - cacheRead - (cacheWrite ?? 0), cacheRead, cacheWrite },
    outputTokens: { total: output, text: Math.max(0, output - reasoning), reasoning },
    raw: usage,
  };
}

/** An error frame before any output, as the SDK's chat model reports it. */
function streamError(frame: unknown, url: string, body: unknown, responseHeaders: Record<string, string> | undefined) {
  const error = frameError(frame);
  const statusCode = error ? statusOf(error) : 500;
  return new APICallError({
    message: error?.message ?? 'OpenAI stream failed before any output was generated',
    url,
    requestBodyValues: body,
    statusCode,
    responseHeaders,
    responseBody: JSON.stringify(frame),
    data: frame,
    isRetryable: error ? error.code !== 'insufficient_quota' && error.type !== 'insufficient_quota' && retryableStatus(statusCode) : true,
  });
}

type FrameError = { message: string; code?: string | number; type?: string };

const record = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined);
const codeOf = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? v : undefined);

function frameError(frame: unknown): FrameError | undefined {
  const value = record(frame);
  if (!value) return undefined;
  if (value.type === 'response.failed') {
    const failed = record(record(value.response)?.error);
    return typeof failed?.message === 'string' ? { message: failed.message, code: codeOf(failed.code), type: 'response.failed' } : undefined;
  }
  const nested = record(value.error);
  const error = nested ?? value;
  if (typeof error.message !== 'string') return undefined;
  if (!nested && typeof error.type !== 'string' && !('code' in error) && !('param' in error)) return undefined;
  return { message: error.message, code: codeOf(error.code), type: typeof error.type === 'string' ? error.type : undefined };
}

const isHttpError = (n: number) => Number.isInteger(n) && n >= 400 && n <= 599;
const retryableStatus = (n: number) => n === 408 || n === 409 || n === 429 || n >= 500;

/** The HTTP status an error frame stands for: its code when it is one, else read from its code and type. */
function statusOf(error: FrameError): number {
  if (typeof error.code === 'number' && isHttpError(error.code)) return error.code;
  if (typeof error.code === 'string' && /^\d{3}$/.test(error.code) && isHttpError(Number(error.code))) return Number(error.code);
  const said = [error.code, error.type]
    .filter((v) => v !== undefined)
    .join(' ')
    .toLowerCase();
  if (said.includes('insufficient_quota') || said.includes('rate_limit')) return 429;
  if (said.includes('authentication')) return 401;
  if (said.includes('permission')) return 403;
  if (said.includes('not_found')) return 404;
  if (['invalid', 'bad_request', 'context_length'].some((t) => said.includes(t))) return 400;
  if (said.includes('overload')) return 503;
  if (said.includes('timeout')) return 504;
  return 500;
}
