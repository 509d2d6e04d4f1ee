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
    fetch: settings.stallTimeoutMs ? stallGuardedFetch(settings.stallTimeoutMs) : undefined,
  });
  return (modelId) => (settings.api === 'responses' ? openai.responses(modelId) : openai.chat(modelId));
}
