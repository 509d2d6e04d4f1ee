import { z } from 'zod';

// A paused task: why (a budget, or the caller's answers), and the requests it waits on.

/** Why a task is paused: the budget it reached, on which measure, its limit and what was spent. */
export const budgetPauseSchema = z.object({
  reason: z.literal('budget'),
  budget: z.enum(['task', 'parent', 'user']),
  measure: z.enum(['tokens', 'costMicroUsd', 'durationMs']),
  limit: z.number().int(),
  spent: z.number().int(),
  since: z.string().describe('ISO 8601 time it paused'),
  task: z.string().optional().describe('budget "task" of an ancestor (nesting): the task whose own budget it is; its spend counts every descendant\'s'),
  attempts: z.array(z.string()).optional().describe('a task with candidates: its attempts paused at this budget, each resumed by a resume of the task'),
});
export type BudgetPause = z.infer<typeof budgetPauseSchema>;

/** One tool call waiting for the caller's answer. */
export const approvalRequestSchema = z.object({
  requestId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  input: z.unknown(),
});
export type ApprovalRequest = z.infer<typeof approvalRequestSchema>;

/** A caller's (or the timeout's) answer to an approval request. */
export const approvalAnswerSchema = z.object({
  decision: z.enum(['allow', 'deny']),
  message: z.string().optional(),
  input: z.record(z.string(), z.unknown()).optional(),
  by: z.enum(['caller', 'timeout']),
});
export type ApprovalAnswer = z.infer<typeof approvalAnswerSchema>;

/** The caller's (or the timeout's) result of a caller-run tool's call: its output, or an error the model reads. */
export const toolAnswerSchema = z.object({
  output: z.unknown().optional(),
  error: z.string().optional(),
  by: z.enum(['caller', 'timeout']),
});
export type ToolAnswer = z.infer<typeof toolAnswerSchema>;

/** One request of a pause: an approval (`kind: approval`) or a caller-run tool's call (`kind: tool`), with its answer once given. */
export const pendingRequestSchema = approvalRequestSchema.extend({
  kind: z.enum(['approval', 'tool']),
  answer: z
    .union([approvalAnswerSchema, z.object({ by: z.enum(['caller', 'timeout']), isError: z.boolean() })])
    .nullable()
    .describe('approval: the decision; tool: who answered and whether it was an error'),
});
export type PendingRequest = z.infer<typeof pendingRequestSchema>;

const waitPauseFields = {
  since: z.string().describe('ISO 8601 time it paused'),
  expiresAt: z.string().describe('when the unanswered requests are denied or fail (options.approvalTimeoutMs)'),
  pending: z.array(pendingRequestSchema).describe('every request of the step; the task goes on once all are answered'),
};

/**
 * Tool calls whose permission rule is `ask`: the first one, and every request of the step in
 * `pending` (with its answer once given). The task goes on once all are answered.
 */
export const approvalPauseSchema = approvalRequestSchema.extend({ reason: z.literal('approval'), ...waitPauseFields });

/** A call of a caller-run tool (`options.clientTools`) waits for its result: the first one, and every request of the step in `pending`. */
export const toolPauseSchema = approvalRequestSchema.extend({ reason: z.literal('tool'), ...waitPauseFields });

/** A pause on the caller: approvals, caller-run tools' results, or both (the reason is the first request's kind). */
export type ApprovalPause = z.infer<typeof approvalPauseSchema> | z.infer<typeof toolPauseSchema>;

export const pauseSchema = z.discriminatedUnion('reason', [budgetPauseSchema, approvalPauseSchema, toolPauseSchema]);
export type Pause = z.infer<typeof pauseSchema>;
