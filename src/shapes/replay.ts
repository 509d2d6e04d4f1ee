import { z } from 'zod';
import { modelIdsSchema } from './model-ids.ts';

/** `POST /tasks/{id}/replay`: run a finished model task again on another model or definition. */
export const replayBodySchema = z
  .object({
    model: modelIdsSchema.optional().describe("the replay's model (any provider); default: the original's"),
    subagent_type: z.string().min(1).max(64).optional().describe("the replay's definition; default: the original's"),
    tools: z
      .enum(['recorded', 'live'])
      .default('recorded')
      .describe('recorded: a call equal to the recorded one at its position is answered from the record; live: every call runs (in a worktree copy)'),
  })
  .strict();
export type ReplayBody = z.infer<typeof replayBodySchema>;

const comparedSchema = z.object({ original: z.number(), replay: z.number() });

/** What a replay did against its original, once it ended. */
export const replayComparisonSchema = z.object({
  steps: comparedSchema,
  inputTokens: comparedSchema,
  outputTokens: comparedSchema,
  costMicroUsd: comparedSchema,
  sameSummary: z.boolean().describe('the two summaries are equal, whitespace aside'),
  artifacts: z
    .object({
      same: z.array(z.string()),
      changed: z.array(z.string()),
      missing: z.array(z.string()).describe("the original's artifacts the replay did not hand over"),
    })
    .describe("the artifacts' relative paths, compared by content: the original's as its workspace holds them now, the replay's in its copy"),
});

/** A replay's state: which task it replays, how, where it left the record, and how it compares. */
export const replayStateSchema = z.object({
  of: z.string().describe('the task replayed'),
  tools: z.enum(['recorded', 'live']),
  divergedAtStep: z.number().int().nullable().describe('the step of the first call that differed from the record; null if none did'),
  comparison: replayComparisonSchema.nullable().describe('set once the replay ended'),
});
export type ReplayState = z.infer<typeof replayStateSchema>;

/** One way to replay: the model or definition to run the tasks on (each the original's by default). */
export const replayVariantSchema = z
  .object({
    model: modelIdsSchema.optional(),
    subagent_type: z.string().min(1).max(64).optional(),
  })
  .strict();
export type ReplayVariant = z.infer<typeof replayVariantSchema>;

/** The most replays (tasks × variants) one batch starts. */
export const MAX_REPLAY_ROWS = 100;

/** `POST /replays`: replays of several finished tasks, each on every variant. */
export const replayBatchBodySchema = z
  .object({
    taskIds: z.array(z.string().min(1).max(256)).min(1).max(MAX_REPLAY_ROWS).optional().describe('the tasks to replay'),
    filter: z
      .object({
        parentTaskId: z.string().min(1).max(256).optional(),
        subagent_type: z.string().min(1).max(64).optional(),
        from: z.iso.datetime({ offset: true }).optional().describe('tasks that ended at or after this time'),
        to: z.iso.datetime({ offset: true }).optional().describe('tasks that ended before this time'),
      })
      .strict()
      .optional()
      .describe("or the tenant's finished model tasks that match, oldest first, as many as the batch holds"),
    variants: z.array(replayVariantSchema).min(1).max(5),
    tools: z.enum(['recorded', 'live']).default('recorded'),
  })
  .strict();
export type ReplayBatchBody = z.infer<typeof replayBatchBodySchema>;

/** A batch's row as stored: the task, the variant (its index), and the replay started, or why none was. */
export interface ReplayBatchRow {
  taskId: string;
  variant: number;
  replayTaskId: string | null;
  error: { code: string; message: string } | null;
}
