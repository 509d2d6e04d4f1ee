/**
 * The lead tools a task that may start children gives its model (nesting; contract v1.3
 * background children): what each takes and answers, as `tool.call` inputs and `tool.result`
 * outputs carry them. The tools are built from these; the OpenAPI document names them
 * (`x-tools`), so a client's types know them.
 */
import { z } from 'zod';
import { taskErrorSchema, taskStatusSchema } from './task.ts';

/** `wait`'s bounds (Codex's): at least 10 s, at most an hour, 30 s unless the model says. */
export const WAIT_MIN_MS = 10_000;
export const WAIT_MAX_MS = 3_600_000;
export const WAIT_DEFAULT_MS = 30_000;
/** Most children one `wait` names, and characters of one `send_input` message (as a steering message's). */
export const MAX_WAIT_IDS = 64;
export const MAX_INPUT_CHARS = 64 * 1024;

const taskId = z.string().min(1).max(256);

export const taskToolInputSchema = z.object({
  subagent_type: z.string().describe('The type of subagent (a type of GET /agents)'),
  description: z.string().min(1).max(80).describe('Short label (3-7 words)'),
  prompt: z.string().min(1).max(100_000).describe('Self-contained task: goal, context, expected files, scope (for shell: the command)'),
  run_in_background: z.boolean().optional().describe("answer at once with the subagent's task_id while it works (default: the definition's `background`)"),
});

/** What a lead's model reads of a child: its compact TaskOutput. */
export const childOutputSchema = z.object({
  task_id: z.string(),
  status: taskStatusSchema,
  summary: z.string().nullable(),
  output: z.unknown(),
  artifacts: z.array(z.object({ relativePath: z.string(), size: z.number().int(), fsType: z.enum(['file', 'directory', 'symlink']) })),
  changes: z.object({ added: z.array(z.string()), modified: z.array(z.string()), deleted: z.array(z.string()) }).optional(),
  error: taskErrorSchema.optional(),
});

/** `task` with `run_in_background`: the child, at once. */
export const backgroundStartedSchema = z.object({ task_id: z.string(), status: taskStatusSchema });

export const waitInputSchema = z.object({
  task_ids: z.array(taskId).min(1).max(MAX_WAIT_IDS).optional().describe('The subagents to wait for (default: every one started in the background)'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(`Longest wait in ms, ${WAIT_MIN_MS}..${WAIT_MAX_MS} (default ${WAIT_DEFAULT_MS}); the answer says which still run`),
});

export const waitResultSchema = z.object({
  finished: z.array(childOutputSchema).describe('the children waited for that have ended'),
  running: z
    .array(z.object({ task_id: z.string(), status: taskStatusSchema, description: z.string() }))
    .describe('those that have not (a paused one waits on its caller)'),
  timedOut: z.boolean().describe('nothing ended within timeoutMs'),
});

export const sendInputInputSchema = z.object({
  task_id: taskId.describe('The subagent (its task_id)'),
  message: z.string().min(1).max(MAX_INPUT_CHARS),
});

export const sendInputResultSchema = z.union([
  z.object({ task_id: z.string(), status: taskStatusSchema, delivered: z.literal('before its next step') }).describe('steered: it has not ended'),
  z.object({ task_id: z.string(), status: taskStatusSchema, continues: z.string() }).describe('it had ended: task_id is the follow-up that continues it'),
]);

export const closeAgentInputSchema = z.object({ task_id: taskId.describe('The subagent (its task_id)') });

export type ChildOutput = z.infer<typeof childOutputSchema>;
export type BackgroundStarted = z.infer<typeof backgroundStartedSchema>;
export type WaitResult = z.infer<typeof waitResultSchema>;
export type SendInputResult = z.infer<typeof sendInputResultSchema>;
