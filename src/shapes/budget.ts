import { z } from 'zod';
import { contextIdSchema } from './task.ts';

/** `/budgets/:scope/:id`: a parent task's or a user's standing budget. */
export const standingBudgetParamsSchema = z.object({ scope: z.enum(['parent', 'user']), id: contextIdSchema });

export const standingBudgetBodySchema = z
  .object({
    maxTokens: z.number().int().min(1).nullable().optional(),
    maxCostUsd: z.number().positive().max(1_000_000).nullable().optional(),
  })
  .refine((b) => b.maxTokens != null || b.maxCostUsd != null, 'set maxTokens, maxCostUsd or both');

export const standingBudgetSchema = z.object({
  scope: z.enum(['parent', 'user']),
  id: z.string(),
  maxTokens: z.number().int().nullable(),
  maxCostUsd: z.number().nullable(),
  spent: z.object({ tokens: z.number().int(), costMicroUsd: z.number().int() }).describe('every task of the scope, running ones included'),
});
