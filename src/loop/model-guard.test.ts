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
  const model = guardModel(fakeModel(parts) as never, { onUsage: (u) => billed.push(u), stallTimeoutMs: 5000, maxRetries: 0 });
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
