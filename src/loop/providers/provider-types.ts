/** What every provider file gives: how to reach the provider, read its raw chunks, and ask it for a model's settings. */
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { PROVIDER_TYPES } from '../../config/config.ts';
import type { TokenUsage as Usage } from '../../shapes/usage.ts';

/** The kinds of connection a provider name can stand for: the configuration's list (`PROVIDERS`' `type`). */
export { PROVIDER_TYPES };
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/** The reasoning setting of a definition or a task, in each provider's own terms when sent. */
export const EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORTS)[number];

/** A model's request settings beyond the conversation (a definition's, overridden by the task's). */
export interface ModelSettings {
  effort?: Effort;
  topP?: number;
  maxOutputTokens?: number;
}

/** One named connection: the built-in `openai`, `anthropic`, `google`, or one of `PROVIDERS`. */
export interface Connection {
  type: ProviderType;
  apiKey?: string;
  baseURL?: string;
  /** OpenAI only: Chat Completions or the Responses API. */
  api?: 'chat' | 'responses';
  headers?: Record<string, string>;
}

/**
 * Reads one call's raw chunks, in order (a fresh reader per call: some providers send a call's
 * usage over several events). `usage` is what the provider reported so far, or null when this
 * chunk changed nothing; `finished` says the answer is complete.
 */
export interface ChunkReader {
  read(raw: unknown): { usage: Usage | null; finished: boolean };
}

/** The part of a call's options a provider shapes: its settings in the provider's own terms, and cache marks. */
export type CallOptions = LanguageModelV3CallOptions;

/** A provider's file: one of these. */
export interface ProviderKit {
  type: ProviderType;
  /** The connection's language model for `modelId`. */
  model(connection: Connection, modelId: string, fetch: typeof globalThis.fetch, name: string): LanguageModelV3;
  reader(): ChunkReader;
  /**
   * The call as this provider is asked it: the settings it takes, in its own terms (the others
   * are left out: see `unsupported`), and its cache marks. Returns a new options object.
   */
  shape(options: CallOptions, modelId: string, settings: ModelSettings): CallOptions;
  /** The settings `modelId` does not take, by name (left out of its requests; a start-up warning names them). */
  unsupported(modelId: string, settings: ModelSettings): Array<keyof ModelSettings>;
}

/** Non-negative whole numbers from a provider's unchecked JSON; anything else is 0. */
export const int = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);

/** Merges `extra` into the call's provider options under `key`. */
export function withProviderOptions(options: CallOptions, key: string, extra: Record<string, unknown>): CallOptions {
  if (Object.keys(extra).length === 0) return options;
  const own = (options.providerOptions?.[key] ?? {}) as Record<string, unknown>;
  return { ...options, providerOptions: { ...options.providerOptions, [key]: { ...own, ...extra } as never } };
}

/** The settings every provider takes as plain call settings. */
export function commonSettings(options: CallOptions, settings: ModelSettings): CallOptions {
  return {
    ...options,
    ...(settings.topP !== undefined && { topP: settings.topP }),
    ...(settings.maxOutputTokens !== undefined && { maxOutputTokens: settings.maxOutputTokens }),
  };
}
