/** The Gemini API: setup, usage reader, request options (`thinkingConfig`). */
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { TokenUsage as Usage } from '../../shapes/usage.ts';
import { commonSettings, int, withProviderOptions, type ChunkReader, type Effort, type ProviderKit } from './provider-types.ts';

interface UsageMetadata {
  promptTokenCount?: unknown;
  candidatesTokenCount?: unknown;
  cachedContentTokenCount?: unknown;
  thoughtsTokenCount?: unknown;
}

/**
 * Gemini sends `usageMetadata` on its chunks, each a running total: the prompt's count from the
 * first. `promptTokenCount` includes the cached tokens; the output is the candidates' tokens and
 * the thoughts'.
 */
export const googleChunkReader = (): ChunkReader => ({
  read(raw) {
    const chunk = (raw ?? {}) as { usageMetadata?: UsageMetadata; candidates?: Array<{ finishReason?: unknown }> };
    const finish = chunk.candidates?.[0]?.finishReason;
    const finished = finish != null && finish !== 'CONTINUATION';
    const u = chunk.usageMetadata;
    if (!u || typeof u !== 'object') return { usage: null, finished };
    const input = int(u.promptTokenCount);
    const reasoning = int(u.thoughtsTokenCount);
    const output = int(u.candidatesTokenCount) + reasoning;
    const usage: Usage = {
      inputTokens: input,
      outputTokens: output,
      totalTokens: input + output,
      cachedInputTokens: int(u.cachedContentTokenCount),
      reasoningTokens: reasoning,
    };
    return { usage, finished };
  },
});

/** Gemini 3 takes a thinking level; 2.5 a thinking budget (Pro cannot turn thinking off). */
const LEVELS = (m: string) => /gemini-3/.test(m);
const BUDGETS = (m: string) => /gemini-2\.5/.test(m);
const BUDGET: Record<Effort, number> = { minimal: 0, low: 1024, medium: 8192, high: 24_576 };

export const googleKit: ProviderKit = {
  type: 'google',
  model(connection, modelId, fetch, name) {
    return createGoogleGenerativeAI({ apiKey: connection.apiKey, baseURL: connection.baseURL, headers: connection.headers, name, fetch })(modelId);
  },
  reader: googleChunkReader,
  shape(options, modelId, settings) {
    const shaped = commonSettings(options, settings);
    if (!settings.effort) return shaped;
    if (LEVELS(modelId)) {
      // Gemini 3 Pro knows only low and high.
      const level = /pro/.test(modelId) ? (settings.effort === 'minimal' || settings.effort === 'low' ? 'low' : 'high') : settings.effort;
      return withProviderOptions(shaped, 'google', { thinkingConfig: { thinkingLevel: level } });
    }
    if (BUDGETS(modelId)) {
      const budget = settings.effort === 'minimal' && /pro/.test(modelId) ? 128 : BUDGET[settings.effort];
      return withProviderOptions(shaped, 'google', { thinkingConfig: { thinkingBudget: budget } });
    }
    return shaped;
  },
  unsupported(modelId, settings) {
    return settings.effort && !LEVELS(modelId) && !BUDGETS(modelId) ? ['effort'] : [];
  },
};
