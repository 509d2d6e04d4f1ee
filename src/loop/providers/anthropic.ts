/** Anthropic's Messages API: setup, usage reader, request options (effort or extended thinking, cache breakpoints). */
import { createAnthropic } from '@ai-sdk/anthropic';
import type { LanguageModelV3Message } from '@ai-sdk/provider';
import type { TokenUsage as Usage } from '../../shapes/usage.ts';
import { commonSettings, int, withProviderOptions, type CallOptions, type ChunkReader, type Effort, type ProviderKit } from './provider-types.ts';

/**
 * Anthropic reports a call's usage over two events: `message_start` carries the prompt's tokens
 * (plain input, cache reads, cache writes, apart), `message_delta` the output. Input here counts
 * all three, as OpenAI's does; an answer cut after `message_start` is billed for its prompt.
 */
export const anthropicChunkReader = (): ChunkReader => {
  let plain = 0;
  let read = 0;
  let written = 0;
  let output = 0;
  let reasoning = 0;
  const usage = (): Usage => {
    const input = plain + read + written;
    return {
      inputTokens: input,
      outputTokens: output,
      totalTokens: input + output,
      cachedInputTokens: read,
      reasoningTokens: reasoning,
      ...(written > 0 && { cacheWriteTokens: written }),
    };
  };
  type Counts = { input_tokens?: unknown; output_tokens?: unknown; cache_read_input_tokens?: unknown; cache_creation_input_tokens?: unknown };
  const take = (u: Counts & { output_tokens_details?: { thinking_tokens?: unknown } | null }) => {
    if (u.input_tokens != null) plain = int(u.input_tokens);
    if (u.cache_read_input_tokens != null) read = int(u.cache_read_input_tokens);
    if (u.cache_creation_input_tokens != null) written = int(u.cache_creation_input_tokens);
    if (u.output_tokens != null) output = int(u.output_tokens);
    if (u.output_tokens_details?.thinking_tokens != null) reasoning = int(u.output_tokens_details.thinking_tokens);
  };
  return {
    read(raw) {
      const event = (raw ?? {}) as { type?: unknown; message?: { usage?: Counts }; usage?: Counts };
      if (event.type === 'message_start' && event.message?.usage) {
        take(event.message.usage);
        return { usage: usage(), finished: false };
      }
      if (event.type === 'message_delta' && event.usage) {
        take(event.usage);
        return { usage: usage(), finished: false };
      }
      return { usage: null, finished: event.type === 'message_stop' };
    },
  };
};

/** Claude models that take `effort` (Opus 4.5, the 4.6 generation and later). */
const takesEffort = (m: string) => /claude-(opus-4-[5-9]|sonnet-4-[6-9]|haiku-4-[6-9]|[a-z]+-[5-9])/.test(m);
/** Claude models with extended thinking and a budget (3.7, the 4 generation before them). */
const takesThinking = (m: string) => /claude-(3-7-sonnet|sonnet-4|opus-4|haiku-4-5)/.test(m) && !takesEffort(m);

/** Extended thinking's budget per level (Anthropic's minimum is 1,024). */
const THINKING_BUDGET: Record<Effort, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576 };

const CACHE = { anthropic: { cacheControl: { type: 'ephemeral' } } };

/**
 * Cache breakpoints: on the system prompt (the tools before it are cached with it) and on the
 * conversation's last message, so the next step, a follow-up and every fork child read the prefix
 * back. Two of Anthropic's four; the rest are left to the caller.
 */
function markCache(prompt: CallOptions['prompt']): CallOptions['prompt'] {
  const lastSystem = prompt.map((m) => m.role).lastIndexOf('system');
  const last = prompt.length - 1;
  return prompt.map((m, i): LanguageModelV3Message =>
    i === lastSystem || (i === last && m.role !== 'system') ? { ...m, providerOptions: { ...m.providerOptions, ...CACHE } } : m,
  );
}

export const anthropicKit: ProviderKit = {
  type: 'anthropic',
  model(connection, modelId, fetch, name) {
    return createAnthropic({ apiKey: connection.apiKey, baseURL: connection.baseURL, headers: connection.headers, name, fetch })(modelId);
  },
  reader: anthropicChunkReader,
  shape(options, modelId, settings) {
    const shaped = { ...commonSettings(options, settings), prompt: markCache(options.prompt) };
    if (!settings.effort) return shaped;
    if (takesEffort(modelId)) return withProviderOptions(shaped, 'anthropic', { effort: settings.effort === 'minimal' ? 'low' : settings.effort });
    if (takesThinking(modelId)) {
      // Extended thinking takes no topP of ours (Anthropic allows only 0.95 to 1 with it).
      const thinking = { ...shaped, topP: undefined };
      return withProviderOptions(thinking, 'anthropic', { thinking: { type: 'enabled', budgetTokens: THINKING_BUDGET[settings.effort] } });
    }
    return shaped;
  },
  unsupported(modelId, settings) {
    if (!settings.effort) return [];
    if (takesThinking(modelId)) return settings.topP !== undefined ? ['topP'] : [];
    return takesEffort(modelId) ? [] : ['effort'];
  },
};
