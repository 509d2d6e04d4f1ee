/** OpenAI (Chat Completions or the Responses API): setup, usage reader, request options. */
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { TokenUsage as Usage } from '../../shapes/usage.ts';
import { openaiChatAnswers } from './openai-chat-answer.ts';
import { commonSettings, int, withProviderOptions, type ChunkReader, type ProviderKit } from './provider-types.ts';

/** A usage object as OpenAI and compatible servers send it (Chat Completions or Responses names), every field unchecked. */
interface ProviderUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  input_tokens?: unknown;
  output_tokens?: unknown;
  total_tokens?: unknown;
  prompt_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null;
  input_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null;
  /** Anthropic's name for the tokens written to its prompt cache, which some compatible servers keep. */
  cache_creation_input_tokens?: unknown;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
  output_tokens_details?: { reasoning_tokens?: unknown } | null;
}

/**
 * Usage as the provider reported it in one raw chunk: a Chat Completions chunk's `usage`, or a
 * Responses API `response.completed` / `response.incomplete` event. Null when the chunk has none.
 */
export function usageOfRawChunk(raw: unknown): Usage | null {
  if (!raw || typeof raw !== 'object') return null;
  const chunk = raw as { type?: unknown; usage?: unknown; response?: { usage?: unknown } };
  const responses = typeof chunk.type === 'string' && chunk.type.startsWith('response.');
  const u = (responses ? chunk.response?.usage : chunk.usage) as ProviderUsage | null | undefined;
  if (!u || typeof u !== 'object') return null;
  const input = int(responses ? u.input_tokens : u.prompt_tokens);
  const output = int(responses ? u.output_tokens : u.completion_tokens);
  const details = responses ? u.input_tokens_details : u.prompt_tokens_details;
  const written = int(details?.cache_write_tokens) || int(u.cache_creation_input_tokens);
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: int(u.total_tokens) || input + output,
    cachedInputTokens: int(details?.cached_tokens),
    reasoningTokens: int((responses ? u.output_tokens_details : u.completion_tokens_details)?.reasoning_tokens),
    ...(written > 0 && { cacheWriteTokens: written }),
  };
}

/** True when a raw chunk says the answer is complete (a finish reason, or the Responses API's end event). */
function isFinishChunk(raw: unknown): boolean {
  if (!raw || typeof raw !== 'object') return false;
  const chunk = raw as { type?: unknown; choices?: Array<{ finish_reason?: unknown }> };
  if (chunk.type === 'response.completed' || chunk.type === 'response.incomplete') return true;
  return Array.isArray(chunk.choices) && chunk.choices.some((c) => c?.finish_reason != null);
}

/** Reads OpenAI's raw chunks (and those of compatible servers): each usage chunk is whole. */
export const openaiChunkReader = (): ChunkReader => ({ read: (raw) => ({ usage: usageOfRawChunk(raw), finished: isFinishChunk(raw) }) });

/** OpenAI's reasoning models (o-series, gpt-5 and later but its chat models), as @ai-sdk/openai tells them. */
const isReasoningModel = (modelId: string) => /^o\d+(-|$)/.test(modelId) || (/^gpt-([5-9]|\d{2,})/.test(modelId) && !/^gpt-[\d.]+-chat/.test(modelId));

export const openaiKit: ProviderKit = {
  type: 'openai',
  model(connection, modelId, fetch, name): LanguageModelV3 {
    // Local servers (Ollama, vLLM, llama.cpp) need no key, so with a base URL and no key a
    // placeholder is sent; with neither, the call fails with the SDK's clear "API key is missing"
    // error, which ends the task as `provider_error`.
    const openai = createOpenAI({
      apiKey: connection.apiKey ?? (connection.baseURL ? 'no-key' : undefined),
      baseURL: connection.baseURL,
      headers: connection.headers,
      name,
      fetch,
    });
    return connection.api === 'responses' ? openai.responses(modelId) : openaiChatAnswers(openai.chat(modelId));
  },
  reader: openaiChunkReader,
  shape(options, modelId, settings) {
    const shaped = commonSettings(options, { ...settings, ...(isReasoningModel(modelId) && { topP: undefined }) });
    if (!settings.effort || !isReasoningModel(modelId)) return shaped;
    // `minimal` is a gpt-5 level; the o-series' lowest is `low`.
    const effort = settings.effort === 'minimal' && modelId.startsWith('o') ? 'low' : settings.effort;
    return withProviderOptions(shaped, 'openai', { reasoningEffort: effort });
  },
  unsupported(modelId, settings) {
    const reasoning = isReasoningModel(modelId);
    return [...(settings.effort && !reasoning ? (['effort'] as const) : []), ...(settings.topP !== undefined && reasoning ? (['topP'] as const) : [])];
  },
};
