import { z } from 'zod';

/** Token counts of a model call, a step, a task or a group of records: integers, never null. */
export const usageSchema = z.object({
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  totalTokens: z.number().int(),
  cachedInputTokens: z.number().int(),
  reasoningTokens: z.number().int(),
});
export type Usage = z.infer<typeof usageSchema>;

/** The token fields of a usage, in the order the contract lists them: the one list every sum uses. */
export const tokenFields = Object.keys(usageSchema.shape) as Array<keyof Usage>;

export const zeroUsage = (): Usage => Object.fromEntries(tokenFields.map((f) => [f, 0])) as Usage;

/** Adds two usages field by field. */
export function addUsage(a: Usage, b: Usage): Usage {
  return Object.fromEntries(tokenFields.map((f) => [f, a[f] + b[f]])) as Usage;
}

/** The token fields of anything that carries them (a task row, a record), as a usage. */
export function usageOf(source: Usage): Usage {
  return Object.fromEntries(tokenFields.map((f) => [f, source[f]])) as Usage;
}
