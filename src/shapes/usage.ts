import { z } from 'zod';

/** Token counts of a model call, a step, a task or a group of records: integers, never null. */
export const tokenUsageSchema = z.object({
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  totalTokens: z.number().int(),
  cachedInputTokens: z.number().int().describe('part of inputTokens'),
  reasoningTokens: z.number().int().describe('part of outputTokens'),
});
/** The counts stored and summed for a call, a task or a group. */
export type TokenCounts = z.infer<typeof tokenUsageSchema>;
export type TokenUsage = TokenCounts & {
  /**
   * One call's input tokens the provider wrote to its prompt cache, where it reports them (part
   * of inputTokens): priced at their own rate, not stored or summed apart.
   */
  cacheWriteTokens?: number;
};

/** A usage as the API shows it: the tokens and what they cost. */
export const usageSchema = tokenUsageSchema.extend({
  costMicroUsd: z.number().int().nullable().describe('whole micro-dollars (1e-6 USD) at the price of each call; null when some of the tokens have no price'),
});
export type Usage = z.infer<typeof usageSchema>;

/** The token fields of a usage, in the order the contract lists them: the one list every sum uses. */
export const tokenFields = Object.keys(tokenUsageSchema.shape) as Array<keyof TokenCounts>;

export const zeroUsage = (): TokenUsage => Object.fromEntries(tokenFields.map((f) => [f, 0])) as TokenUsage;

/** Adds two usages field by field. */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return Object.fromEntries(tokenFields.map((f) => [f, a[f] + b[f]])) as TokenUsage;
}

/** The token fields of anything that carries them (a task row, a record), as a usage. */
export function usageOf(source: TokenUsage): TokenUsage {
  return Object.fromEntries(tokenFields.map((f) => [f, source[f]])) as TokenUsage;
}

/** The API's usage of a row that keeps its cost and its unpriced tokens (tasks, records). */
export function pricedUsageOf(source: TokenUsage & { costMicroUsd: number; unpricedTokens: number }): Usage {
  return { ...usageOf(source), costMicroUsd: source.unpricedTokens > 0 ? null : source.costMicroUsd };
}
