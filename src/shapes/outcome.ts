import { z } from 'zod';

/** Largest rubric, in bytes of UTF-8. */
export const MAX_RUBRIC_BYTES = 64 * 1024;

/**
 * `options.outcome` (and a definition's `outcome`): how the service checks a subagent's `complete`
 * before it trusts it. At least one of `rubric` and `verify`.
 */
export const outcomeSpecSchema = z
  .object({
    rubric: z
      .string()
      .min(1)
      .refine((s) => Buffer.byteLength(s) <= MAX_RUBRIC_BYTES, `at most ${MAX_RUBRIC_BYTES} bytes`)
      .optional()
      .describe('criteria the grader model checks the delivered work against, in a fresh context'),
    verify: z
      .object({
        command: z.string().min(1).max(100_000).describe("a bash command run in the task's sandbox; exit 0 passes"),
        timeoutMs: z.number().int().min(100).optional().describe("at most the service's BASH_TIMEOUT_MS"),
      })
      .optional(),
    maxIterations: z.number().int().min(1).max(10).optional().describe('checks of `complete` before the task ends anyway (default 3)'),
    graderModel: z.string().min(1).max(200).optional().describe("the model that grades the rubric (default: the task's model)"),
  })
  .refine((o) => o.rubric !== undefined || o.verify !== undefined, { message: 'give a rubric, a verify command, or both', path: ['rubric'] });
export type OutcomeSpec = z.infer<typeof outcomeSpecSchema>;

/** Checks of `complete` when `maxIterations` is not given. */
export const DEFAULT_MAX_ITERATIONS = 3;

/** One criterion as the last check judged it (`verify` for the command). */
export const criterionSchema = z.object({ name: z.string(), passed: z.boolean(), note: z.string() });
export type Criterion = z.infer<typeof criterionSchema>;

/** A task's outcome: where its checks stand (the last one's criteria and feedback). */
export const outcomeResultSchema = z.object({
  status: z
    .enum(['satisfied', 'failed', 'max_iterations_reached'])
    .describe('failed: the last check failed with iterations left, or the run ended without a complete that was checked'),
  iterations: z.number().int().min(0).describe('checks of complete so far'),
  criteria: z.array(criterionSchema),
  feedback: z.string().nullable().describe('what the worker was told to fix (null once satisfied)'),
});
export type OutcomeResult = z.infer<typeof outcomeResultSchema>;
