import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import { stallGuardedFetch } from './stall-guard.ts';

/** Turns a model id into a language model of the configured provider. */
export type ModelProvider = (modelId: string) => LanguageModel;

export interface ProviderSettings {
  apiKey?: string;
  baseURL?: string;
  api: 'chat' | 'responses';
  /** Cut a model response that sends nothing for this long. */
  stallTimeoutMs?: number;
  /** Told of every error status the provider answers (for metrics). */
  onHttpError?(status: number): void;
}

/**
 * An OpenAI-compatible provider. Local servers (Ollama, vLLM, llama.cpp) need no key, so with a
 * base URL and no key a placeholder is sent; with neither, the call fails with the SDK's clear
 * "API key is missing" error, which ends the task as `provider_error`.
 */
export function createModelProvider(settings: ProviderSettings): ModelProvider {
  const openai = createOpenAI({
    apiKey: settings.apiKey ?? (settings.baseURL ? 'no-key' : undefined),
    baseURL: settings.baseURL,
    fetch: watchStatus(settings.stallTimeoutMs ? stallGuardedFetch(settings.stallTimeoutMs) : fetch, (status) => settings.onHttpError?.(status)),
  });
  return (modelId) => (settings.api === 'responses' ? openai.responses(modelId) : openai.chat(modelId));
}

function watchStatus(inner: typeof fetch, onError?: (status: number) => void): typeof fetch {
  if (!onError) return inner;
  return async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await inner(input, init);
    if (res.status >= 400) onError(res.status);
    return res;
  };
}
