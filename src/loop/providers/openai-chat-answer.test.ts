import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { safeParseJSON, secureJsonParse, zodSchema } from '@ai-sdk/provider-utils';
import { chunkData, openaiChatAnswers, plainChunk } from './openai-chat-answer.ts';
import { guardModel } from '../model-guard.ts';

/**
 * Every answer here is read twice from the same bytes: by @ai-sdk/openai's own chat model, and by
 * openaiChatAnswers over the same model. The parts (raw chunks included), the request sent and the
 * errors thrown must be the same.
 */

const chunk = (choices: object[], extra: object = {}) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-m', choices, ...extra })}\n\n`;
const delta = (d: object, finish: string | null = null, extra: object = {}) => chunk([{ index: 0, delta: d, finish_reason: finish, ...extra }]);
const usage = (u: object) => chunk([], { usage: u });
const DONE = 'data: [DONE]\n\n';
const USAGE = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 100, audio_tokens: 0 } };

type Answer = { status?: number; body: string | null; cuts?: number[]; failAfter?: Error; contentType?: string };

/** A fetch that answers `answer` (its bytes cut at `cuts`, each piece a read of its own) and keeps the request's body. */
function serve(answer: Answer, sent: string[]) {
  return async (_url: unknown, init?: RequestInit) => {
    sent.push(init?.body as string);
    const bytes = answer.body === null ? null : new TextEncoder().encode(answer.body);
    let next = 1;
    const cuts = [0, ...(answer.cuts ?? []).filter((c) => bytes && c > 0 && c < bytes.length), bytes?.length ?? 0];
    const body =
      bytes === null
        ? null
        : new ReadableStream<Uint8Array>(
            {
              // A read at a time, as a socket gives them: a failure comes after every byte before it was read.
              pull(c) {
                if (next < cuts.length) c.enqueue(bytes.slice(cuts[next - 1], cuts[next++]));
                else if (answer.failAfter) c.error(answer.failAfter);
                else c.close();
              },
            },
            { highWaterMark: 0 },
          );
    return new Response(body, { status: answer.status ?? 200, headers: { 'content-type': answer.contentType ?? 'text/event-stream' } });
  };
}

const model = (answer: Answer, sent: string[]) => createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1', fetch: serve(answer, sent) }).chat('gpt-m');

const CALL: LanguageModelV3CallOptions = {
  prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  tools: [{ type: 'function', name: 'read_file', description: 'reads', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }],
  topK: 3,
};

/** Errors as data: their kind, message and what the loop and the retries read of them. */
const plain = (v: unknown): unknown => {
  if (v instanceof Error) {
    const e = v as Error & { statusCode?: number; isRetryable?: boolean; responseBody?: string; data?: unknown };
    return { error: e.name, message: e.message, statusCode: e.statusCode, isRetryable: e.isRetryable, responseBody: e.responseBody, data: e.data };
  }
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
};

/** Generated ids (tool calls without one, sources) numbered in order of appearance, the same way on both sides. */
function numberIds(parts: unknown[]): unknown[] {
  const ids = new Map<string, string>();
  const id = (s: string) => ids.get(s) ?? (ids.set(s, `id${ids.size + 1}`), ids.get(s)!);
  return parts.map((p) => {
    const part = { ...(p as Record<string, unknown>) };
    if (typeof part.toolCallId === 'string') part.toolCallId = id(part.toolCallId);
    if (part.type !== 'text-start' && part.type !== 'text-delta' && part.type !== 'text-end' && typeof part.id === 'string') part.id = id(part.id);
    return part;
  });
}

type Read = { request: string; parts: unknown[]; thrown?: unknown; ended?: unknown };

async function read(m: LanguageModelV3, sent: string[], includeRawChunks: boolean): Promise<Read> {
  const parts: LanguageModelV3StreamPart[] = [];
  try {
    const { stream } = await m.doStream({ ...CALL, includeRawChunks });
    const reader = stream.getReader();
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        parts.push(r.value);
      }
    } catch (err) {
      return { request: sent[0], parts: numberIds(plain(parts) as unknown[]), ended: plain(err) };
    }
  } catch (err) {
    return { request: sent[0], parts: [], thrown: plain(err) };
  }
  return { request: sent[0], parts: numberIds(plain(parts) as unknown[]) };
}

/** The answer read by the SDK and by openaiChatAnswers, raw chunks on and off; resolves with ours (raw on). */
async function readBoth(answer: Answer): Promise<Read> {
  let ours: Read | undefined;
  for (const raw of [true, false]) {
    const [sdkSent, ourSent] = [[], []] as string[][];
    const sdk = await read(model(answer, sdkSent), sdkSent, raw);
    const mine = await read(openaiChatAnswers(model(answer, ourSent)), ourSent, raw);
    expect(mine).toEqual(sdk);
    ours ??= mine;
  }
  return ours!;
}

const types = (r: Read) => r.parts.map((p) => (p as { type: string }).type);

const TEXT = [
  delta({ role: 'assistant', content: '' }),
  ...['Hel', 'lo, ', 'wörld 🙂'].map((c) => delta({ content: c })),
  delta({}, 'stop'),
  usage({ ...USAGE, completion_tokens_details: { reasoning_tokens: 10, accepted_prediction_tokens: 2, rejected_prediction_tokens: 1 } }),
  DONE,
].join('');

describe('openaiChatAnswers reads an answer as @ai-sdk/openai does', () => {
  it('text: the same parts, usage (cache reads, reasoning, predictions) and finish, with the same request and warnings', async () => {
    const r = await readBoth({ body: TEXT });
    expect(types(r)).toEqual([
      'stream-start',
      'raw',
      'response-metadata',
      'text-start',
      'text-delta',
      'raw',
      'text-delta',
      'raw',
      'text-delta',
      'raw',
      'text-delta',
      'raw',
      'raw',
      'text-end',
      'finish',
    ]);
    const finish = r.parts.at(-1) as { usage: { inputTokens: { cacheRead: number }; outputTokens: { reasoning: number } }; finishReason: { unified: string } };
    expect([finish.finishReason.unified, finish.usage.inputTokens.cacheRead, finish.usage.outputTokens.reasoning]).toEqual(['stop', 100, 10]);
    expect((r.parts[0] as { warnings: unknown[] }).warnings).not.toEqual([]);
    expect(JSON.parse(r.request)).toMatchObject({ stream: true, stream_options: { include_usage: true }, tools: [{ function: { name: 'read_file' } }] });
  });

  it('the same bytes cut anywhere (inside an event, a line ending, a multi-byte character) read the same', async () => {
    const bytes = new TextEncoder().encode(TEXT).length;
    for (let at = 1; at < bytes; at += 7) await readBoth({ body: TEXT, cuts: [at, at + 3] });
    // Every byte a read of its own.
    await readBoth({ body: TEXT, cuts: Array.from({ length: bytes }, (_, i) => i) });
  });

  it('CRLF framing, comments, event names, fields it ignores and an event the body ends inside of', async () => {
    const body = `: keep-alive\r\n\r\nevent: message\r\n${delta({ content: 'a' }).replace(/\n\n$/, '\r\n\r\n')}id: 7\nretry: 10\n${delta({ content: 'b' }, 'stop')}${usage(USAGE)}data: {"choices": [`;
    const r = await readBoth({ body, cuts: [5, 40, 41, 100] });
    expect(types(r)).toContain('finish');
    // A byte-order mark, its bytes over three reads; and the mark's three bytes read as Latin-1
    // (which the event parser drops from its first text), the first read inside the first of them.
    expect(types(await readBoth({ body: `\uFEFF${TEXT}`, cuts: [1, 2, 3] }))).toContain('text-delta');
    expect(types(await readBoth({ body: `\u00EF\u00BB\u00BF${TEXT}`, cuts: [1] }))).toContain('text-delta');
  });

  it('parallel tool calls, their arguments over several chunks, one with no id and no type', async () => {
    const body = [
      delta({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] }),
      delta({ tool_calls: [{ index: 1, function: { name: 'read_file', arguments: '{"path":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: 'th":"a"}' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '"b"}' } }] }),
      delta({}, 'tool_calls'),
      usage(USAGE),
      DONE,
    ].join('');
    const r = await readBoth({ body, cuts: [90, 200] });
    const calls = r.parts.filter((p) => (p as { type: string }).type === 'tool-call') as Array<{ input: string }>;
    expect(calls.map((c) => c.input)).toEqual(['{"path":"a"}', '{"path":"b"}']);
  });

  it('a refusal, citations and log probabilities', async () => {
    const lp = { content: [{ token: 'n', logprob: -0.1, top_logprobs: [{ token: 'n', logprob: -0.1 }] }], refusal: null };
    const body = [
      delta({ role: 'assistant', refusal: 'No.' }, null, { logprobs: lp }),
      delta({ annotations: [{ type: 'url_citation', url_citation: { start_index: 0, end_index: 3, url: 'https://example.org/a', title: 'A' } }] }),
      delta({}, 'stop'),
      usage(USAGE),
      DONE,
    ].join('');
    const r = await readBoth({ body });
    expect((r.parts.at(-1) as { finishReason: { unified: string } }).finishReason.unified).toBe('content-filter');
    expect(types(r)).toContain('source');
  });

  it('finish reasons it maps, and one it does not know', async () => {
    for (const reason of ['length', 'content_filter', 'function_call', 'something_new'])
      await readBoth({ body: [delta({ content: 'x' }), delta({}, reason), DONE].join('') });
  });

  it('an answer with no finish, no usage and no [DONE]; an empty body', async () => {
    await readBoth({ body: delta({ content: 'cut' }) });
    await readBoth({ body: '' });
  });

  it('a chunk that is not JSON, and one that does not fit the schema: error parts, the answer read on', async () => {
    const r = await readBoth({
      body: [delta({ content: 'a' }), 'data: {not json\n\n', 'data: {"choices": 5}\n\n', delta({ content: 'b' }, 'stop'), DONE].join(''),
    });
    expect(types(r).filter((t) => t === 'error')).toHaveLength(2);
    // Before any output too: the call is not refused, the parts say so.
    await readBoth({ body: ['data: {not json\n\n', delta({ content: 'b' }, 'stop'), DONE].join('') });
  });

  it('an error frame after output is an error part; before any output it is the call’s error, with its status and retry', async () => {
    const frame = (error: object) => `data: ${JSON.stringify({ error })}\n\n`;
    const after = await readBoth({ body: [delta({ content: 'a' }), frame({ message: 'boom', type: 'server_error' }), DONE].join('') });
    expect((after.parts.at(-1) as { finishReason: { unified: string } }).finishReason.unified).toBe('error');
    // The frame's message, unless it has nothing beside it (or is a `response.failed`, whose
    // message is in a response this schema drops): the status and retry are read from its code and type.
    const unnamed = 'OpenAI stream failed before any output was generated';
    const errors: Array<[object, string, number, boolean]> = [
      [{ message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' }, 'slow down', 429, true],
      [{ message: 'pay up', type: 'insufficient_quota', code: 'insufficient_quota' }, 'pay up', 429, false],
      [{ message: 'busy', code: 503 }, 'busy', 503, true],
      [{ message: 'bad', code: '400', param: 'x' }, 'bad', 400, false],
      [{ message: 'who', type: 'invalid_authentication' }, 'who', 401, false],
      [{ message: 'failed', type: 'response.failed' }, unnamed, 500, true],
      [{ message: 'odd' }, unnamed, 500, true],
    ];
    for (const [error, message, statusCode, isRetryable] of errors) {
      const r = await readBoth({ body: [delta({ role: 'assistant', content: '' }), frame(error), DONE].join('') });
      expect(r.thrown).toMatchObject({ error: 'AI_APICallError', message, statusCode, isRetryable });
    }
  });

  it('a failed response: the same error, status and retry from its body (JSON, empty, not JSON)', async () => {
    for (const [status, body] of [
      [400, JSON.stringify({ error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null } })],
      [429, JSON.stringify({ error: { message: 'rate limited', code: 'rate_limit_exceeded' } })],
      [500, ''],
      [503, '<html>down</html>'],
    ] as const) {
      const r = await readBoth({ status, body, contentType: 'application/json' });
      expect(r.thrown).toMatchObject({ error: 'AI_APICallError', statusCode: status });
    }
  });

  it('a body cut by the network ends the stream with its error, after every part read before it; a lost connection may be retried', async () => {
    // undici's error for a socket closed mid-body names its cause's code; a plain one has none.
    const lost = new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
    for (const [failAfter, isRetryable] of [
      [new TypeError('terminated'), false],
      [lost, true],
    ] as const) {
      const cut = TEXT.indexOf('wörld');
      // Before any output: the call's error.
      expect((await readBoth({ body: TEXT.slice(0, 20), failAfter })).thrown).toMatchObject({
        message: 'Failed to process successful response',
        isRetryable,
      });
      // After: the stream's, once the parts before it were read.
      const [sdkSent, ourSent] = [[], []] as string[][];
      const sdk = await read(model({ body: TEXT.slice(0, cut), failAfter, cuts: [cut - 50] }, sdkSent), sdkSent, true);
      const mine = await read(openaiChatAnswers(model({ body: TEXT.slice(0, cut), failAfter, cuts: [cut - 50] }, ourSent)), ourSent, true);
      expect(mine.ended).toMatchObject({ error: 'AI_APICallError', message: 'Failed to process successful response', isRetryable });
      expect(mine.ended).toEqual(sdk.ended);
      expect(mine.parts.slice(0, sdk.parts.length)).toEqual(sdk.parts);
      expect(types(mine).filter((t) => t === 'text-delta')).toHaveLength(3);
    }
  });

  it('an error frame after a usage chunk, before any output, is handed on: the guard bills the usage, and the call fails with the frame', async () => {
    const body = [usage(USAGE), `data: ${JSON.stringify({ error: { message: 'upstream failed', type: 'server_error' } })}\n\n`, DONE].join('');
    // The SDK throws it as the call's error, and its usage is lost: ours hands the parts on.
    const [sdkSent, ourSent] = [[], []] as string[][];
    expect((await read(model({ body }, sdkSent), sdkSent, true)).thrown).toMatchObject({ error: 'AI_APICallError', message: 'upstream failed' });
    const mine = await read(openaiChatAnswers(model({ body }, ourSent)), ourSent, true);
    expect(mine.thrown).toBeUndefined();
    expect(types(mine)).toEqual(['stream-start', 'raw', 'response-metadata', 'raw', 'error', 'finish']);
    expect(mine.parts[4]).toMatchObject({ error: { message: 'upstream failed' } });

    const billed: unknown[] = [];
    const guarded = guardModel(openaiChatAnswers(model({ body }, [])), { onUsage: (u) => void billed.push(u), stallTimeoutMs: 5_000, maxRetries: 0 });
    const parts: string[] = [];
    const reader = (await (guarded as LanguageModelV3).doStream(CALL)).stream.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value.type);
    expect(parts).toContain('error');
    expect(billed).toEqual([expect.objectContaining({ inputTokens: 120, outputTokens: 30, cachedInputTokens: 100 })]);
  });

  it('a chunk the tool-call tracker refuses (a new call with no name) ends the stream after every part before it', async () => {
    const body = [
      delta({ role: 'assistant', content: 'a' }),
      delta({ content: 'b' }),
      delta({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { arguments: '{}' } }] }),
      delta({ content: 'never' }),
      DONE,
    ].join('');
    const [sdkSent, ourSent] = [[], []] as string[][];
    const sdk = await read(model({ body }, sdkSent), sdkSent, false);
    const mine = await read(openaiChatAnswers(model({ body }, ourSent)), ourSent, false);
    expect(mine.ended).toEqual(sdk.ended);
    expect(mine.ended).toMatchObject({ message: expect.stringContaining('function.name') as unknown });
    expect(mine.parts.slice(0, sdk.parts.length)).toEqual(sdk.parts);
    expect(types(mine)).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-delta']);
  });

  it('a cancel of the answer cancels the body, with its reason', async () => {
    let cancelled: unknown = null;
    const fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull: (c) => c.enqueue(new TextEncoder().encode(delta({ content: 'more' }))),
          cancel: (reason) => void (cancelled = reason),
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    const m = openaiChatAnswers(createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1', fetch }).chat('gpt-m'));
    const reader = (await m.doStream(CALL)).stream.getReader();
    expect((await reader.read()).value?.type).toBe('stream-start');
    expect((await reader.read()).value?.type).toBe('response-metadata');
    await reader.cancel('stopped');
    expect(cancelled).toBe('stopped');
    // A body whose own cancel fails: the answer's cancel still resolves, as the SDK's does.
    const failing = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull: (c) => c.enqueue(new TextEncoder().encode(delta({ content: 'x' }))),
          cancel: () => Promise.reject(new Error('cancel failed')),
        }),
        {
          headers: { 'content-type': 'text/event-stream' },
        },
      );
    const other = (
      await openaiChatAnswers(createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1', fetch: failing }).chat('gpt-m')).doStream(CALL)
    ).stream.getReader();
    await other.read();
    await expect(other.cancel('stopped')).resolves.toBeUndefined();
  });

  it('checks the common chunks without zod into what zod makes of them, and leaves it every other', async () => {
    // A seeded generator (no flaky draws): chunks of every shape the schema has, right and wrong.
    let seed = 68;
    // mulberry32
    const rand = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
    const one = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
    const ABSENT = Symbol('absent');
    const INFINITE = '__infinite__';
    const of = (choices: Array<[string, unknown[]]>) => {
      const o: Record<string, unknown> = {};
      for (const [key, values] of choices) {
        const v = one(values);
        if (v !== ABSENT) o[key] = v;
      }
      return o;
    };
    const anyOf = [ABSENT, null, 'x', '', 0, 1.5, -0, INFINITE, true, [], {}, 'assistant', 'user'];
    const A = ABSENT;
    const number = [A, A, null, 0, 7, -0, 1.5, INFINITE, '3', true];
    const toolCall = () =>
      rand() < 0.05
        ? one(anyOf)
        : of([
            ['index', [0, 0, 0, 0, 0, 1, 2, 1.5, A, '0', INFINITE, null]],
            ['id', [A, A, null, 'call_1', 'call_1', 'call_1', 3]],
            ['type', [A, A, null, 'function', 'function', 'function', 'other']],
            [
              'function',
              [
                of([
                  ['name', [A, A, null, 'read_file', 'read_file', 4]],
                  ['arguments', [A, null, '', '{"pa', '{"path":"a"}', 5]],
                  ['extra', [A, A, A, 'dropped']],
                ]),
                of([['arguments', [A, '{}']]]),
                A,
                null,
                'f',
              ],
            ],
            ['extra', [A, A, A, 'dropped']],
          ]);
    const toolCalls = () => (rand() < 0.05 ? one(anyOf) : Array.from({ length: one([1, 1, 1, 2, 0]) }, toolCall));
    const details = (keys: string[]) =>
      rand() < 0.05 ? one(anyOf) : of([...keys.map((k): [string, unknown[]] => [k, number]), ['extra', [A, A, A, 'dropped']]]);
    const usage = () =>
      rand() < 0.05
        ? one(anyOf)
        : of([
            ['prompt_tokens', number],
            ['completion_tokens', number],
            ['total_tokens', number],
            ['prompt_tokens_details', [A, A, null, details(['cached_tokens', 'cache_write_tokens'])]],
            ['completion_tokens_details', [A, A, null, details(['reasoning_tokens', 'accepted_prediction_tokens', 'rejected_prediction_tokens'])]],
            ['extra', [A, A, A, 'dropped']],
          ]);
    const delta = () =>
      rand() < 0.05
        ? one(anyOf)
        : of([
            ['role', [A, A, A, null, 'assistant', 'assistant', 'assistant', 'user', 1]],
            ['content', [A, null, 'Hello', 'Hello', 'Hello', 'Hello', '', 7, ['x']]],
            ['refusal', [A, A, A, A, null, 'no', 3]],
            [
              'tool_calls',
              [
                A,
                A,
                A,
                A,
                A,
                A,
                null,
                [],
                [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{' } }],
                toolCalls(),
                toolCalls(),
                toolCalls(),
                toolCalls(),
              ],
            ],
            ['annotations', [A, A, A, A, A, A, null, []]],
            ['audio', [A, A, { id: 'a' }]],
          ]);
    const choice = () =>
      rand() < 0.03
        ? one(anyOf)
        : of([
            ['delta', [A, null, delta(), delta(), delta(), delta(), delta(), 'x']],
            ['logprobs', [A, null, null, null, null, { content: null }, 1]],
            ['finish_reason', [A, null, null, null, 'stop', 'tool_calls', 2]],
            ['index', [0, 0, 0, 0, 1, 1.5, A, '0', INFINITE]],
            ['extra', [A, A, 'dropped']],
          ]);
    const chunk = () =>
      rand() < 0.02
        ? one([...anyOf.filter((v) => v !== A), { error: { message: 'boom' } }])
        : of([
            ['id', [A, null, 'chatcmpl-1', 'chatcmpl-1', 'chatcmpl-1', 'chatcmpl-1', 1]],
            ['object', [A, 'chat.completion.chunk']],
            ['created', [A, null, 1_700_000_000, 1_700_000_000, 1_700_000_000, 1_700_000_000, INFINITE, '1']],
            ['model', [A, null, 'gpt-m', 'gpt-m', 'gpt-m', 'gpt-m', 2]],
            ['system_fingerprint', [A, 'fp']],
            ['choices', [[], [choice()], [choice()], [choice()], [choice(), choice()], A, null, {}]],
            ['usage', [A, A, A, A, null, null, { prompt_tokens: 1 }, usage(), usage(), usage()]],
            ['error', [A, A, A, A, A, A, { message: 'both' }]],
          ]);
    const schema = zodSchema(chunkData);
    let quick = 0;
    let left = 0;
    /** Chunks with tool calls or usage taken by hand. */
    let calls = 0;
    let billed = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = JSON.stringify(chunk()).replaceAll(`"${INFINITE}"`, '1e400');
      const byZod = await safeParseJSON({ text, schema });
      const byHand = plainChunk(secureJsonParse(text));
      if (byHand === undefined) {
        left++;
        continue;
      }
      quick++;
      if (byHand.usage) billed++;
      if (byHand.choices.some((c) => c.delta?.tool_calls)) calls++;
      // The same object, its keys in the same order, null told from absent.
      expect(byZod.success, text).toBe(true);
      expect(JSON.stringify(byHand), text).toBe(JSON.stringify(byZod.success && byZod.value));
      expect(byHand, text).toEqual(byZod.success && byZod.value);
    }
    // Both ways were taken often.
    expect(quick).toBeGreaterThan(1000);
    expect(left).toBeGreaterThan(1000);
    expect(calls).toBeGreaterThan(50);
    expect(billed).toBeGreaterThan(200);
    // Tool calls and usage, their keys out of the schema's order and with keys it drops.
    for (const odd of [
      {
        id: 'c1',
        created: 1,
        choices: [
          {
            index: 0,
            delta: {
              role: 'assistant',
              content: null,
              tool_calls: [{ type: 'function', function: { arguments: '', name: 'f', extra: 1 }, index: 0, extra: 2 }],
            },
            finish_reason: null,
          },
        ],
      },
      {
        model: 'm',
        choices: [],
        usage: { completion_tokens_details: { reasoning_tokens: 0, extra: 1 }, total_tokens: 3, prompt_tokens_details: null, prompt_tokens: 1, extra: 2 },
      },
    ]) {
      const byZod = await safeParseJSON({ text: JSON.stringify(odd), schema });
      expect(byZod.success).toBe(true);
      expect(JSON.stringify(plainChunk(odd))).toBe(JSON.stringify(byZod.success && byZod.value));
    }
    // What the scripted model and OpenAI send is taken by hand.
    const sent = {
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null }],
    };
    expect(plainChunk(sent)).toEqual({
      id: 'c1',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null }],
    });
  });

  it('is written against the installed @ai-sdk/openai, and shares its provider-utils; a model without what it reads is used as it is', () => {
    // An upgrade of @ai-sdk/openai fails here first: read its chat model's doStream again, bring
    // this reader and the cases above in line with it, then change the version.
    const require = createRequire(import.meta.url);
    expect((require('@ai-sdk/openai/package.json') as { version: string }).version).toBe('3.0.141');
    expect(createRequire(require.resolve('@ai-sdk/openai')).resolve('@ai-sdk/provider-utils')).toBe(require.resolve('@ai-sdk/provider-utils'));
    const other = { ...model({ body: '' }, []), getArgs: undefined } as unknown as LanguageModelV3;
    expect(openaiChatAnswers(other)).toBe(other);
    const chat = model({ body: '' }, []);
    expect(openaiChatAnswers(chat)).not.toBe(chat);
  });
});
