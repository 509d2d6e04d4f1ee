import { z } from 'zod';
import { contextIdSchema } from './task.ts';
import { tokenUsageSchema } from './usage.ts';

const count = z.number().int();

const isoTime = z
  .string()
  .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date or time')
  .transform((s) => Date.parse(s));

export const usageFilterSchema = z.object({
  userId: contextIdSchema.optional(),
  parentTaskId: contextIdSchema.optional(),
  subagent_type: z.string().min(1).max(64).optional(),
  model: z.string().min(1).max(200).optional(),
  from: isoTime.optional().describe('inclusive, by start time'),
  to: isoTime.optional().describe('exclusive, by start time'),
});

/** `GET /usage`: the filters, an optional grouping, and where the sums come from. */
export const usageQuerySchema = usageFilterSchema.extend({
  groupBy: z.enum(['user', 'parentTask', 'subagentType', 'model', 'day']).optional(),
  source: z
    .enum(['auto', 'records'])
    .default('auto')
    .describe(
      'auto: roll-ups kept with every record where they can answer (milliseconds at any size); records: sum the raw records (for audits; slow at scale)',
    ),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000).describe('groups per page (with groupBy)'),
  cursor: z.string().max(256).optional().describe('nextCursor of the previous page: the groups whose key sorts after it'),
});

/** `GET /usage/records`: the filters and a page. */
export const usageRecordsQuerySchema = usageFilterSchema.extend({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(64).optional(),
});

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
  groups: z
    .array(usageTotalsSchema.extend({ key: z.string().describe('the user, parent task, type, model or UTC day') }))
    .describe('in key order; at most `limit`'),
  nextCursor: z.string().nullable().describe('with groupBy, when more groups follow: pass it as cursor for the next page'),
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
  usageReported: z.boolean().describe('false when the task ran in an external (ACP) agent that reported no usage: its tokens are unknown, not zero'),
});

export const usageRecordListSchema = z.object({ records: z.array(usageRecordSchema), nextCursor: z.string().nullable() });

/** A usage record as the store reads it: times as epoch ms. */
export type StoredUsageRecord = Omit<z.infer<typeof usageRecordSchema>, 'startedAt' | 'completedAt' | 'costMicroUsd'> & {
  costMicroUsd: number;
  startedAt: number;
  completedAt: number | null;
};
