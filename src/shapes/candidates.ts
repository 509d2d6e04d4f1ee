import { z } from 'zod';
import { outcomeResultSchema } from './outcome.ts';

/** Most attempts one task may run at once. */
export const MAX_CANDIDATES = 8;

/**
 * `options.candidates`: the task runs `n` attempts at once (child tasks, `models` assigned in turn),
 * each on its own worktree copied from one snapshot of the workspace, each checked by the outcome,
 * and keeps one. Only with `isolation: "worktree"` and an outcome.
 */
export const candidatesSpecSchema = z.object({
  n: z.number().int().min(2).max(MAX_CANDIDATES).describe('attempts run at once'),
  models: z
    .array(z.string().min(1).max(200))
    .min(1)
    .max(MAX_CANDIDATES)
    .optional()
    .describe("the attempts' models, assigned in turn (attempt i gets models[i mod length]); default: the task's model"),
  pick: z
    .enum(['first_satisfied', 'best'])
    .optional()
    .describe('best (default): the most criteria passed, ties the cheapest; first_satisfied: the first satisfied one, the others cancelled'),
});
export type CandidatesSpec = z.infer<typeof candidatesSpecSchema>;

/** One attempt of a task with candidates, as its TaskOutput lists it. */
export const candidateSchema = z.object({
  taskId: z.string().describe('the attempt, a child task (GET /tasks/{taskId})'),
  model: z.string().nullable(),
  status: z.enum(['queued', 'running', 'paused', 'completed', 'aborted', 'error']).describe("the attempt's status when last seen"),
  outcome: outcomeResultSchema.nullable().describe("the attempt's outcome once it ended"),
  costMicroUsd: z.number().int().describe('what the attempt cost (its own usage record)'),
  selected: z.boolean().describe("the attempt kept: the task's summary, output, artifacts and changes are its"),
});
export type Candidate = z.infer<typeof candidateSchema>;
