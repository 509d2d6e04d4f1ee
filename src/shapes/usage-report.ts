import { z } from 'zod';
import { tokenUsageSchema } from './usage.ts';

const count = z.number().int();

/** Sums over usage records: `GET /usage`'s totals and each of its groups. */
export const usageTotalsSchema = z.object({
  tasks: count,
  steps: count,
  ...tokenUsageSchema.shape,
  costMicroUsd: count.describe('what the priced tokens cost, in whole micro-dollars'),
  unpricedTokens: count.describe('tokens of models with no price (not in costMicroUsd)'),
  durationMs: count,
});
export type UsageTotals = z.infer<typeof usageTotalsSchema>;

export const usageReportSchema = z.object({
  totals: usageTotalsSchema,
  groups: z.array(usageTotalsSchema.extend({ key: z.string().describe('the user, parent task, type, model or UTC day') })),
});

/** One task's usage record, as `GET /usage/records` lists it. */
export const usageRecordSchema = z.object({
  id: z.string(),
  taskId: z.string(),
  subagent_type: z.string(),
  parentTaskId: z.string(),
  userId: z.string(),
  toolCallId: z.string().nullable(),
  description: z.string(),
  model: z.string().nullable(),
  steps: count,
  ...tokenUsageSchema.shape,
  costMicroUsd: count.nullable().describe('null when some of its tokens have no price (see unpricedTokens)'),
  unpricedTokens: count,
  status: z.string(),
  startedAt: z.string(),
  completedAt: z.string().nullable(),
  durationMs: count,
});

export const usageRecordListSchema = z.object({ records: z.array(usageRecordSchema), nextCursor: z.string().nullable() });

/** A usage record as the store reads it: times as epoch ms. */
export type StoredUsageRecord = Omit<z.infer<typeof usageRecordSchema>, 'startedAt' | 'completedAt' | 'costMicroUsd'> & {
  costMicroUsd: number;
  startedAt: number;
  completedAt: number | null;
};
