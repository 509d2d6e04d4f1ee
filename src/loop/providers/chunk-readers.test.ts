import { describe, expect, it } from 'vitest';
import { anthropicChunkReader } from './anthropic.ts';
import { googleChunkReader } from './google.ts';

describe("Anthropic's raw events", () => {
  it('count cache reads and writes inside the input, from message_start, and the output from message_delta', () => {
    const r = anthropicChunkReader();
    const start = r.read({
      type: 'message_start',
      message: { usage: { input_tokens: 100, cache_read_input_tokens: 800, cache_creation_input_tokens: 50, output_tokens: 1 } },
    });
    expect(start).toEqual({
      usage: { inputTokens: 950, outputTokens: 1, totalTokens: 951, cachedInputTokens: 800, reasoningTokens: 0, cacheWriteTokens: 50 },
      finished: false,
    });
    expect(r.read({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } })).toEqual({ usage: null, finished: false });
    const delta = r.read({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: 70, output_tokens_details: { thinking_tokens: 30 } },
    });
    expect(delta.usage).toMatchObject({ inputTokens: 950, outputTokens: 70, reasoningTokens: 30 });
    expect(r.read({ type: 'message_stop' })).toEqual({ usage: null, finished: true });
  });
});

describe("Gemini's chunks", () => {
  it('read the running usageMetadata, thoughts counted in the output, and the finish reason', () => {
    const r = googleChunkReader();
    expect(r.read({ candidates: [{ content: { parts: [{ text: 'a' }] } }], usageMetadata: { promptTokenCount: 500, cachedContentTokenCount: 200 } })).toEqual({
      usage: { inputTokens: 500, outputTokens: 0, totalTokens: 500, cachedInputTokens: 200, reasoningTokens: 0 },
      finished: false,
    });
    const last = r.read({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 500, candidatesTokenCount: 40, thoughtsTokenCount: 60 } });
    expect(last).toMatchObject({ usage: { outputTokens: 100, reasoningTokens: 60 }, finished: true });
    expect(r.read({ candidates: [{ finishReason: 'CONTINUATION' }] }).finished).toBe(false);
  });
});
