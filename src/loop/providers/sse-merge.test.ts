import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { dialectOf, MAX_PENDING_BYTES, mergeEvents, mergingBody } from './sse-merge.ts';

const openai = dialectOf('http://127.0.0.1:1/v1/chat/completions')!;
const anthropic = dialectOf('http://127.0.0.1:1/v1/messages')!;
const gemini = dialectOf('http://127.0.0.1:1/v1beta/models/g:streamGenerateContent?alt=sse')!;

const chat = (delta: object, finish: string | null = null, extra: object = {}) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}`;
const claude = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}`;
const gem = (parts: object[], usage: object, finishReason?: string) =>
  `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...(finishReason && { finishReason }) }], usageMetadata: usage, modelVersion: 'g', responseId: 'r1' })}`;

/** The events of an SSE text, each with its data parsed. */
const eventsOf = (sse: string) =>
  sse
    .split('\n\n')
    .filter(Boolean)
    .map((e) => {
      const data = e
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6);
      return data.startsWith('{') ? JSON.parse(data) : data;
    });

/** A body that delivers `parts` as separate reads. */
const bodyOf = (parts: Array<string | Uint8Array>) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(typeof p === 'string' ? new TextEncoder().encode(p) : p);
      c.close();
    },
  });

async function readAll(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const reads: Uint8Array[] = [];
  for await (const r of body) reads.push(r);
  return reads;
}
const textOf = (reads: Uint8Array[]) => Buffer.concat(reads).toString('utf8');

describe('merged text deltas', () => {
  it("OpenAI's chat chunks: the deltas of one read become one, in order, the role kept; tool calls, the finish, usage and [DONE] pass as they came", () => {
    const toolCall = chat({ tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '' } }] });
    const finish = chat({}, 'tool_calls');
    const usage = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } })}`;
    const out = mergeEvents(
      [
        chat({ role: 'assistant', content: '' }),
        chat({ content: 'Hel' }),
        chat({ content: 'lo, ' }),
        chat({ content: 'wörld' }),
        toolCall,
        chat({ content: 'after' }),
        finish,
        usage,
        'data: [DONE]',
      ],
      openai,
    );
    const events = eventsOf(out);
    expect(events).toHaveLength(6);
    expect(events[0].choices[0]).toEqual({ index: 0, delta: { role: 'assistant', content: 'Hello, wörld' }, finish_reason: null });
    expect(`${out}`.split('\n\n').slice(1, 6)).toEqual([toolCall, chat({ content: 'after' }), finish, usage, 'data: [DONE]']);
  });

  it('does not merge what is more than text: a finish in the same chunk, usage, another key, a second role, another message or choice', () => {
    const kept = [
      chat({ content: 'a' }),
      chat({ content: 'b' }, 'stop'),
      chat({ content: 'c' }, null, { usage: { prompt_tokens: 1 } }),
      chat({ content: 'd', refusal: null }),
      chat({ role: 'assistant', content: 'e' }),
      `data: ${JSON.stringify({ id: 'c2', choices: [{ index: 0, delta: { content: 'f' } }] })}`,
      `data: ${JSON.stringify({ id: 'c2', choices: [{ index: 1, delta: { content: 'g' } }] })}`,
    ];
    expect(mergeEvents(kept, openai)).toBe(kept.map((e) => `${e}\n\n`).join(''));
  });

  it("Anthropic's events: text deltas of one block merge under their event name; other blocks, JSON deltas and comments pass", () => {
    const json = claude('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"a"' } });
    const out = mergeEvents(
      [
        claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'one ' } }),
        claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'two' } }),
        ': a comment',
        claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' three' } }),
        claude('content_block_delta', { index: 2, delta: { type: 'text_delta', text: 'other block' } }),
        json,
      ],
      anthropic,
    );
    expect(out.split('\n\n').filter(Boolean)).toEqual([
      claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'one two' } }),
      ': a comment',
      claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' three' } }),
      claude('content_block_delta', { index: 2, delta: { type: 'text_delta', text: 'other block' } }),
      json,
    ]);
  });

  it("Gemini's chunks: one candidate's text parts merge carrying the last one's running usage; a call, a finish, a thought pass", () => {
    const call = gem([{ functionCall: { name: 'f', args: {} } }], { promptTokenCount: 5, totalTokenCount: 5 });
    const thought = gem([{ text: 'hmm', thought: true }], { promptTokenCount: 5, totalTokenCount: 5 });
    const finish = gem([{ text: '' }], { promptTokenCount: 5, candidatesTokenCount: 9, totalTokenCount: 14 }, 'STOP');
    const out = mergeEvents(
      [
        gem([{ text: 'a' }], { promptTokenCount: 5, totalTokenCount: 6 }),
        gem([{ text: 'b' }], { promptTokenCount: 5, totalTokenCount: 7 }),
        thought,
        call,
        finish,
      ],
      gemini,
    );
    expect(out.split('\n\n').filter(Boolean)).toEqual([gem([{ text: 'ab' }], { promptTokenCount: 5, totalTokenCount: 7 }), thought, call, finish]);
  });

  it('looks into an event only if it may add text: JSON with spaces still merges; a read with at most one such event passes as it came', async () => {
    const spaced = (content: string) => `data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": ${JSON.stringify(content)}}}]}`;
    expect(eventsOf(mergeEvents([spaced('a'), spaced('b')], openai))).toEqual([{ id: 'c1', choices: [{ index: 0, delta: { content: 'ab' } }] }]);
    // A tool call's chunk carries "content": null; the arguments may quote "content" escaped.
    const call = chat({ content: null, tool_calls: [{ index: 0, function: { arguments: '{\\"content\\": \\"x\\"}' } }] });
    const read = new TextEncoder().encode(`${chat({ content: 'only' })}\n\n${call}\n\n${chat({}, 'tool_calls')}\n\n`);
    const reads = await readAll(mergingBody(bodyOf([read]), openai));
    expect(reads).toHaveLength(1);
    expect(Buffer.from(reads[0]).equals(Buffer.from(read))).toBe(true);
    // Anthropic and Gemini: events of the other kinds are passed as they came, between merged runs.
    const ping = claude('ping', {});
    const td = (text: string) => claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
    expect(
      mergeEvents([td('a'), td('b'), ping, td('c')], anthropic)
        .split('\n\n')
        .filter(Boolean),
    ).toEqual([td('ab'), ping, td('c')]);
    const call2 = gem([{ functionCall: { name: 'f', args: {} } }], { totalTokenCount: 1 });
    expect(
      mergeEvents([call2, gem([{ text: 'x' }], {}), gem([{ text: 'y' }], {})], gemini)
        .split('\n\n')
        .filter(Boolean),
    ).toEqual([call2, gem([{ text: 'xy' }], {})]);
  });

  it('a body: a read of one event passes as its own bytes; a character split across reads arrives whole; a read of several is merged', async () => {
    const one = new TextEncoder().encode(`${chat({ content: 'solo' })}\n\n`);
    const euro = new TextEncoder().encode(`${chat({ content: '€ and 🙂' })}\n\n`);
    const cut = euro.indexOf(0xe2) + 1; // inside the € sign
    const reads = await readAll(
      mergingBody(
        bodyOf([
          one,
          euro.slice(0, cut),
          euro.slice(cut),
          `${chat({ content: 'x' })}\n\n${chat({ content: 'y' })}\n\n${chat({ content: 'z' }).slice(0, 20)}`,
          `${chat({ content: 'z' }).slice(20)}\n\n`,
        ]),
        openai,
      ),
    );
    expect(Buffer.from(reads[0]).equals(Buffer.from(one))).toBe(true);
    expect(eventsOf(textOf(reads)).map((e) => e.choices[0].delta.content)).toEqual(['solo', '€ and 🙂', 'xy', 'z']);
  });

  it('a stream framed with CRLF passes as it came, and an unfinished last event is not lost', async () => {
    const crlf = `${chat({ content: 'a' })}\r\n\r\n${chat({ content: 'b' })}\r\n\r\n`;
    expect(textOf(await readAll(mergingBody(bodyOf([crlf.slice(0, 10), crlf.slice(10)]), openai)))).toBe(crlf);
    expect(textOf(await readAll(mergingBody(bodyOf([`${chat({ content: 'a' })}\n\n${chat({ content: 'b' })}\n\ndata: {"cut`]), openai)))).toBe(
      `${chat({ content: 'ab' })}\n\ndata: {"cut`,
    );
  });

  it('an event longer than the bound passes as it came, bytes in order, and later ones are no longer merged', async () => {
    const long = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"${'x'.repeat(MAX_PENDING_BYTES)}"}}]}`;
    const parts = [long.slice(0, 600_000), long.slice(600_000), `\n\n${chat({ content: 'a' })}\n\n${chat({ content: 'b' })}\n\n`];
    const reads = await readAll(mergingBody(bodyOf(parts), openai));
    // Held until the bound, then everything as it came: nothing lost, nothing merged after it.
    expect(reads.map((r) => r.byteLength)).toEqual([Buffer.byteLength(parts[0]) + Buffer.byteLength(parts[1]), Buffer.byteLength(parts[2])]);
    expect(textOf(reads)).toBe(parts.join(''));
  });

  it("a body's failure after what it sent is the merged stream's, and a cancel reaches the body", async () => {
    const cut = new TypeError('terminated');
    let sent = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ === 0) return c.enqueue(new TextEncoder().encode(`${chat({ content: 'before' })}\n\n`));
        c.error(cut);
      },
    });
    const reader = mergingBody(failing, openai).getReader();
    expect(eventsOf(textOf([(await reader.read()).value!])).map((e) => e.choices[0].delta.content)).toEqual(['before']);
    await expect(reader.read()).rejects.toBe(cut);

    let cancelled: unknown = null;
    const endless = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new TextEncoder().encode(`${chat({ content: 'more' })}\n\n`)),
      cancel: (reason) => void (cancelled = reason),
    });
    const merged = mergingBody(endless, openai).getReader();
    await merged.read();
    await merged.cancel('the step was aborted');
    expect(cancelled).toBe('the step was aborted');
  });

  it('a read waits for its turn of the shared slice; a cancel while it waits ends the stream cleanly', async () => {
    const turns: Array<() => void> = [];
    const slices = { enter: () => new Promise<void>((resolve) => turns.push(resolve)) };
    const reader = mergingBody(bodyOf([`${chat({ content: 'one' })}\n\n`, `${chat({ content: 'two' })}\n\n`]), openai, slices).getReader();
    let first: { value?: Uint8Array } | null = null;
    const reading = reader.read().then((r) => (first = r));
    await new Promise((resolve) => setImmediate(resolve));
    expect(first).toBeNull();
    expect(turns).toHaveLength(1);
    turns[0]();
    await reading;
    expect(eventsOf(textOf([first!.value!]))[0].choices[0].delta.content).toBe('one');

    let cancelled: unknown = null;
    const endless = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new TextEncoder().encode(`${chat({ content: 'more' })}\n\n`)),
      cancel: (reason) => void (cancelled = reason),
    });
    const held = mergingBody(endless, null, slices).getReader();
    const pending = held.read();
    await new Promise((resolve) => setImmediate(resolve));
    await held.cancel('aborted while waiting');
    turns.at(-1)!();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(cancelled).toBe('aborted while waiting');
  });
});

/** The real provider packages read the merged stream: the same text and usage, fewer parts. */
async function streamed(model: LanguageModelV3): Promise<{ text: string; deltas: number; parts: LanguageModelV3StreamPart[] }> {
  const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const p of stream) parts.push(p);
  const deltas = parts.filter((p) => p.type === 'text-delta');
  return { text: deltas.map((p) => (p as { delta: string }).delta).join(''), deltas: deltas.length, parts };
}

const sseResponse = (sse: string, merge: typeof openai | null) => {
  const body = bodyOf([sse]);
  return new Response(merge ? mergingBody(body, merge) : body, { headers: { 'content-type': 'text/event-stream' } });
};

/** Events as one SSE text, each ended by a blank line. */
const sseOf = (events: string[]) => events.map((e) => `${e}\n\n`).join('');

/**
 * The answer `make` streams, read as it came and merged: the same text, finish and usage both ways.
 * Resolves with the text parts of each.
 */
async function readBothWays(make: (merge: boolean) => LanguageModelV3, text: string): Promise<[number, number]> {
  const [plain, merged] = [await streamed(make(false)), await streamed(make(true))];
  expect([plain.text, merged.text]).toEqual([text, text]);
  const finish = (s: typeof plain) => s.parts.find((p) => p.type === 'finish');
  expect(finish(merged)).toEqual(finish(plain));
  return [plain.deltas, merged.deltas];
}

describe('merged deltas read by the SDK', () => {
  it('@ai-sdk/openai (chat): the same text, finish and usage from one part instead of six (one empty, for the role)', async () => {
    const sse = sseOf([
      chat({ role: 'assistant', content: '' }),
      ...['a', 'b', 'c', 'd', 'e'].map((c) => chat({ content: c })),
      chat({}, 'stop'),
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 } })}`,
      'data: [DONE]',
    ]);
    const model = (merge: boolean) =>
      createOpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1', fetch: async () => sseResponse(sse, merge ? openai : null) }).chat('m');
    expect(await readBothWays(model, 'abcde')).toEqual([6, 1]);
  });

  it('@ai-sdk/anthropic: the same text, finish and usage from one part instead of three', async () => {
    const sse = sseOf([
      claude('message_start', {
        message: { id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 9, output_tokens: 1 } },
      }),
      claude('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ...['x', 'y', 'z'].map((t) => claude('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } })),
      claude('content_block_stop', { index: 0 }),
      claude('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }),
      claude('message_stop', {}),
    ]);
    const model = (merge: boolean) =>
      createAnthropic({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1', fetch: async () => sseResponse(sse, merge ? anthropic : null) })('m');
    expect(await readBothWays(model, 'xyz')).toEqual([3, 1]);
  });

  it('@ai-sdk/google: the same text, finish and usage from one part instead of three', async () => {
    const sse = sseOf([
      gem([{ text: 'p' }], { promptTokenCount: 5, totalTokenCount: 6 }),
      gem([{ text: 'q' }], { promptTokenCount: 5, totalTokenCount: 7 }),
      gem([{ text: 'r' }], { promptTokenCount: 5, totalTokenCount: 8 }),
      gem([{ text: '' }], { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 }, 'STOP'),
    ]);
    const model = (merge: boolean) =>
      createGoogleGenerativeAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1beta', fetch: async () => sseResponse(sse, merge ? gemini : null) })('g');
    expect(await readBothWays(model, 'pqr')).toEqual([3, 1]);
  });
});
