import { describe, expect, it } from 'vitest';
import { usageOfRawChunk } from '../loop/model-guard.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { costMicroUsd, loadPriceTable } from './prices.ts';

const rates = { inputPerMTok: 3, cachedInputPerMTok: 0.3, cacheWritePerMTok: 3.75, outputPerMTok: 15 };

describe('a call priced by its kinds of tokens', () => {
  it('bills cache writes at their own rate, inside the input tokens', () => {
    // 10,000 in: 2,000 read from the cache, 6,000 written to it, 2,000 plain; 1,000 out.
    const usage = { inputTokens: 10_000, outputTokens: 1_000, totalTokens: 11_000, cachedInputTokens: 2_000, reasoningTokens: 0, cacheWriteTokens: 6_000 };
    // 2,000 × 3 + 2,000 × 0.3 + 6,000 × 3.75 + 1,000 × 15 = 6,000 + 600 + 22,500 + 15,000 µ$.
    expect(costMicroUsd(usage, rates)).toBe(44_100);
    // Without the report they are plain input.
    expect(costMicroUsd({ ...usage, cacheWriteTokens: undefined }, rates)).toBe(8_000 * 3 + 600 + 15_000);
    // A report larger than the uncached input never makes a negative count.
    expect(costMicroUsd({ ...usage, cacheWriteTokens: 50_000 }, rates)).toBe(8_000 * 3.75 + 600 + 15_000);
  });

  it('reads cache writes where compatible servers report them', () => {
    const chat = { choices: [], usage: { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 60 } } };
    expect(usageOfRawChunk(chat)).toMatchObject({ inputTokens: 100, cachedInputTokens: 10, cacheWriteTokens: 60 });
    const anthropicStyle = { choices: [], usage: { prompt_tokens: 100, completion_tokens: 5, cache_creation_input_tokens: 40 } };
    expect(usageOfRawChunk(anthropicStyle)).toMatchObject({ cacheWriteTokens: 40 });
    expect(usageOfRawChunk({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } })).not.toHaveProperty('cacheWriteTokens');
  });
});

describe('prices by provider:model', () => {
  it("take the file's key for it, else its bare key, else the package's price for that provider", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'prices-'));
    try {
      const file = path.join(dir, 'prices.json');
      writeFileSync(file, JSON.stringify({ 'local:qwen3': { inputPerMTok: 1, outputPerMTok: 2 }, qwen3: { inputPerMTok: 5, outputPerMTok: 6 } }));
      const table = loadPriceTable(file);
      const at = Date.parse('2026-06-01');
      expect(table.ratesOf('local:qwen3', at, 1)).toMatchObject({ inputPerMTok: 1, outputPerMTok: 2 });
      expect(table.ratesOf('ollama:qwen3', at, 1)).toMatchObject({ inputPerMTok: 5, outputPerMTok: 6 });
      expect(table.ratesOf('anthropic:claude-sonnet-4-5', at, 1)).toEqual({
        inputPerMTok: 3,
        cachedInputPerMTok: 0.3,
        cacheWritePerMTok: 3.75,
        outputPerMTok: 15,
      });
      expect(table.ratesOf('google:gemini-2.5-flash', at, 1)).toMatchObject({ inputPerMTok: 0.3, cachedInputPerMTok: 0.03, outputPerMTok: 2.5 });
      expect(table.ratesOf('local:no-such-model', at, 1)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
