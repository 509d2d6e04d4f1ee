import { describe, expect, it } from 'vitest';
import { guardModel, usageOfFinishPart, usageOfRawChunk } from './model-guard.ts';
import type { TokenUsage as Usage } from '../shapes/usage.ts';

/** A provider model that streams the given parts (no network): the guard's only input. */
function fakeModel(parts: Array<Record<string, unknown>>) {
  return {
    specificationVersion: 'v3',
    provider: 'fake',
    modelId: 'fake',
    supportedUrls: {},
    doGenerate: async () => {
      throw new Error('not used');
    },
    doStream: async () => ({
      stream: new ReadableStream({
        start(c) {
          for (const p of parts) c.enqueue(p);
          c.close();
        },
      }),
    }),
  };
}

async function drain(parts: Array<Record<string, unknown>>) {
  const billed: Usage[] = [];
  const model = guardModel(fakeModel(parts) as never, { onUsage: (u) => void billed.push(u), stallTimeoutMs: 5000, maxRetries: 0 });
  const { stream } = await (model as unknown as { doStream(o: object): Promise<{ stream: ReadableStream }> }).doStream({});
  const seen: string[] = [];
  for (const reader = stream.getReader(); ;) {
    const r = await reader.read();
    if (r.done) break;
    seen.push((r.value as { type: string }).type);
  }
  return { billed, seen };
}

const finishChunk = { type: 'raw', rawValue: { choices: [{ finish_reason: 'stop' }] } };

/**
 * A provider model whose answer (a text part, then usage and its end) arrives `afterMs` after the
 * call, as from a socket: aborting the call's signal errors its stream with the signal's reason.
 */
function slowModel(afterMs: number) {
  const calls: Array<{ signal: AbortSignal }> = [];
  const model = {
    ...fakeModel([]),
    doStream: async (o: { abortSignal: AbortSignal }) => {
      calls.push({ signal: o.abortSignal });
      // As fetch does: a request whose signal had aborted is never sent.
      if (o.abortSignal.aborted) throw o.abortSignal.reason;
      return {
        stream: new ReadableStream({
          start(c) {
            const timer = setTimeout(() => {
              c.enqueue({ type: 'text-delta', id: '0', delta: 'late' });
              c.enqueue(finishChunk);
              c.enqueue({ type: 'raw', rawValue: { choices: [], usage: { prompt_tokens: 103, completion_tokens: 10 } } });
              c.enqueue({ type: 'finish', finishReason: { unified: 'stop' }, usage: { inputTokens: { total: 103 }, outputTokens: { total: 10 } } });
              c.close();
            }, afterMs);
            o.abortSignal.addEventListener('abort', () => {
              clearTimeout(timer);
              c.error(o.abortSignal.reason);
            });
          },
        }),
      };
    },
  };
  return { model, calls };
}

/** Calls `model` with a signal aborted right after the call is made; what the caller then reads. */
async function abortedCall(model: object, abortGraceMs: number | ((reason: unknown) => number)) {
  const billed: Usage[] = [];
  const guarded = guardModel(model as never, { onUsage: (u) => void billed.push(u), stallTimeoutMs: 5000, maxRetries: 0, abortGraceMs });
  const caller = new AbortController();
  const called = (guarded as unknown as { doStream(o: object): Promise<{ stream: ReadableStream }> }).doStream({ abortSignal: caller.signal });
  caller.abort(new Error('cancelled by the caller'));
  const seen: string[] = [];
  let error: unknown = null;
  try {
    const reader = (await called).stream.getReader();
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      seen.push((r.value as { type: string }).type);
    }
  } catch (err) {
    error = err;
  }
  return { billed, seen, error };
}

describe('guardModel', () => {
  it('bills the usage of a raw usage chunk once, at the end part', async () => {
    const { billed, seen } = await drain([
      { type: 'text-delta', id: '0', delta: 'hi' },
      finishChunk,
      { type: 'raw', rawValue: { choices: [], usage: { prompt_tokens: 30, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 10 } } } },
      { type: 'finish', finishReason: { unified: 'stop' }, usage: { inputTokens: { total: 30 }, outputTokens: { total: 3 } } },
    ]);
    expect(billed).toEqual([{ inputTokens: 30, outputTokens: 3, totalTokens: 33, cachedInputTokens: 10, reasoningTokens: 0 }]);
    expect(seen).toEqual(['text-delta', 'finish']);
  });

  it('falls back to the end part when no raw chunk carried usage it could read', async () => {
    const { billed } = await drain([
      { type: 'text-delta', id: '0', delta: 'hi' },
      finishChunk,
      { type: 'finish', finishReason: { unified: 'stop' }, usage: { inputTokens: { total: 40, cacheRead: 4 }, outputTokens: { total: 5, reasoning: 2 } } },
    ]);
    expect(billed).toEqual([{ inputTokens: 40, outputTokens: 5, totalTokens: 45, cachedInputTokens: 4, reasoningTokens: 2 }]);
  });

  it('turns an end without a finish reason into an error part', async () => {
    const { seen } = await drain([
      { type: 'text-delta', id: '0', delta: 'cut' },
      { type: 'finish', finishReason: { unified: 'other' }, usage: {} },
    ]);
    expect(seen).toEqual(['text-delta', 'error', 'finish']);
  });

  it('bills an answer that ends within the grace after its caller aborted, and passes none of it on', async () => {
    const { model, calls } = slowModel(30);
    const { billed, seen, error } = await abortedCall(model, 2000);
    expect(billed).toEqual([{ inputTokens: 103, outputTokens: 10, totalTokens: 113, cachedInputTokens: 0, reasoningTokens: 0 }]);
    expect(seen).toEqual([]);
    expect(error).toMatchObject({ message: 'cancelled by the caller' });
    // The answer ended on its own: the call was never cut.
    expect(calls[0].signal.aborted).toBe(false);
  });

  it("chooses the grace by the abort's reason", async () => {
    const reasons: unknown[] = [];
    const grace = (reason: unknown) => (reasons.push(reason), (reason as Error).message.startsWith('cancelled') ? 20 : 2000);
    const cut = await abortedCall(slowModel(300).model, grace);
    expect(cut.billed).toEqual([]);
    expect(reasons).toEqual([expect.objectContaining({ message: 'cancelled by the caller' })]);
    const read = slowModel(300);
    const { billed } = await abortedCall(read.model, () => 2000);
    expect(billed).toHaveLength(1);
    expect(read.calls[0].signal.aborted).toBe(false);
  });

  it('cuts an aborted call at the end of the grace, with the reason of the abort', async () => {
    const { model, calls } = slowModel(60_000);
    const { billed, seen, error } = await abortedCall(model, 20);
    expect(calls[0].signal.aborted).toBe(true);
    expect(billed).toEqual([]);
    expect(seen).toEqual([]);
    expect(error).toMatchObject({ message: 'cancelled by the caller' });
  });

  it('makes no call for a caller that aborted before it', async () => {
    const { model, calls } = slowModel(0);
    const billed: Usage[] = [];
    const guarded = guardModel(model as never, { onUsage: (u) => void billed.push(u), stallTimeoutMs: 5000, maxRetries: 0 });
    const signal = AbortSignal.abort(new Error('gone'));
    const answer = (guarded as unknown as { doStream(o: object): Promise<{ stream: ReadableStream }> }).doStream({ abortSignal: signal });
    await expect(answer).rejects.toMatchObject({ message: 'gone' });
    expect(calls[0].signal.aborted).toBe(true);
    expect(billed).toEqual([]);
  });
});

describe('usage parsers', () => {
  it('read Chat Completions and Responses usage, and nothing else', () => {
    expect(
      usageOfRawChunk({
        type: 'response.completed',
        response: { usage: { input_tokens: 7, output_tokens: 1, output_tokens_details: { reasoning_tokens: 1 } } },
      }),
    ).toEqual({
      inputTokens: 7,
      outputTokens: 1,
      totalTokens: 8,
      cachedInputTokens: 0,
      reasoningTokens: 1,
    });
    expect(usageOfRawChunk({ choices: [{ delta: { content: 'x' } }] })).toBeNull();
    expect(usageOfFinishPart({ inputTokens: {}, outputTokens: {} })).toBeNull();
  });
});
