import { z } from 'zod';
import { modelIdsSchema } from './model-ids.ts';
import { replayStateSchema } from './replay.ts';
import { artifactSchema, skippedPathSchema, stopReasonSchema } from './artifact.ts';
import { candidateSchema, candidatesSpecSchema } from './candidates.ts';
import { outcomeResultSchema, outcomeSpecSchema } from './outcome.ts';
import { approvalRequestSchema, pauseSchema } from './pause.ts';
import { permissionsSchema } from './permissions.ts';
import { usageSchema } from './usage.ts';

// The contract's request and task shapes, composing the shared ones beside them.
export * from './artifact.ts';
export * from './usage.ts';
export * from './outcome.ts';
export * from './pause.ts';
export * from './candidates.ts';

/** Ids that reach paths and queries: `[A-Za-z0-9._:-]`, 1..128 chars, and never `.` or `..`. */
export const contextIdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'must match [A-Za-z0-9._:-]')
  .refine((s) => s !== '.' && s !== '..', 'must not be "." or ".."');

const timezoneSchema = z.string().refine((tz) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}, 'must be an IANA time zone such as Europe/Berlin');

export const taskContextSchema = z.object({
  parentTaskId: contextIdSchema,
  userId: contextIdSchema,
  toolCallId: z.string().min(1).max(256).optional(),
  timezone: timezoneSchema.optional(),
});
export type TaskContext = z.infer<typeof taskContextSchema>;

/** A budget of one task: it pauses (never fails) when the next model step would start past it. */
export const taskBudgetSchema = z.object({
  maxTokens: z.number().int().min(1).optional().describe('total tokens of the task'),
  maxCostUsd: z.number().positive().max(1_000_000).optional().describe('US dollars, at the price of each call'),
  maxDurationMs: z.number().int().min(1).optional().describe('time spent running (pauses do not count)'),
});
export type TaskBudget = z.infer<typeof taskBudgetSchema>;

/** A caller-run tool: offered to the model; its calls are run by the caller (`POST /tasks/{id}/tool-results/{requestId}`). */
export const clientToolSchema = z.object({
  name: z
    .string()
    .regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/, 'must be a tool name: a letter, then letters, digits, _ or -, at most 64')
    .describe('not the name of a tool of the service'),
  description: z.string().min(1).max(4096),
  inputSchema: z.record(z.string(), z.unknown()).describe('JSON Schema of its input (an object schema)'),
});
export type ClientTool = z.infer<typeof clientToolSchema>;

/** A host pattern of a network allow-list: a name, `*.` and a domain, or an IP literal; `:<port>` optional. */
const hostPatternSchema = z
  .string()
  .max(253)
  .regex(/^(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/, 'a host name, *.<domain>, or an IP literal, with an optional :<port>');
/** `"none"` (no network at all) or `{ allow: [host patterns] }`: reached through the service's egress proxy. */
export const networkPolicySchema = z.union([
  z.literal('none'),
  z.object({
    allow: z.array(hostPatternSchema).max(100),
    ask: z
      .boolean()
      .optional()
      .describe('a host off the list becomes an approval request (toolName network, input { host, port }); allowed, it joins the list'),
  }),
]);
export type NetworkPolicy = z.infer<typeof networkPolicySchema>;

/** A model's reasoning setting, sent in its provider's own terms (OpenAI `reasoning_effort`, Anthropic `effort` or extended thinking, Gemini `thinkingConfig`). */
export const effortSchema = z.enum(['minimal', 'low', 'medium', 'high']);
export const topPSchema = z.number().min(0).max(1);
export const maxOutputTokensSchema = z.number().int().min(1).max(1_000_000);

export const taskOptionsSchema = z.object({
  model: modelIdsSchema
    .optional()
    .describe("replaces the definition's model; a list: the first, then the others in turn after a provider error outlived its retries"),
  maxSteps: z.number().int().min(1).max(1000).optional(),
  effort: effortSchema.optional().describe("the model's reasoning setting; replaces the definition's (left out for a model that takes none)"),
  topP: topPSchema.optional().describe("nucleus sampling; replaces the definition's"),
  maxOutputTokens: maxOutputTokensSchema.optional().describe("the most tokens one model call may write; replaces the definition's"),
  timeoutMs: z.number().int().min(100).optional(),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  budget: taskBudgetSchema.optional(),
  permissions: permissionsSchema.optional().describe("allow | ask | deny per tool or bash(<glob>); narrows the definition's"),
  approvalTimeoutMs: z
    .number()
    .int()
    .min(1000)
    .optional()
    .describe("unanswered approvals are denied, and caller-run tools' calls fail, after this (default APPROVAL_TIMEOUT_MS)"),
  clientTools: z.array(clientToolSchema).max(32).optional().describe('tools the caller runs: a call pauses the task until its result is posted'),
  tools: z
    .array(z.string().min(1).max(64))
    .max(64)
    .optional()
    .describe("only these of the definition's tools (complete always stays); names it does not offer are ignored"),
  skills: z
    .array(z.string().min(1).max(64))
    .max(32)
    .optional()
    .describe("only these of the definition's skills are preloaded; a name that is not one of them is a 400"),
  cwd: z.string().min(1).max(4096).optional().describe('a folder inside the workspace where relative paths resolve and commands start (created if missing)'),
  network: networkPolicySchema
    .optional()
    .describe("what the task's commands reach: none, or only these hosts through the service's proxy; narrows the definition's"),
  isolation: z
    .enum(['shared', 'worktree'])
    .optional()
    .describe('worktree: the task works on its own copy of the workspace, taken when it starts; POST /tasks/:id/apply writes its changes back'),
  outcome: outcomeSpecSchema.optional().describe("check complete before trusting it (a verify command, a rubric, or both); adds to the definition's"),
  candidates: candidatesSpecSchema
    .optional()
    .describe('run n attempts at once from one snapshot of the workspace and keep one (with isolation "worktree" and an outcome only)'),
});
export type TaskOptions = z.infer<typeof taskOptionsSchema>;

/**
 * One message of a task's conversation as the model saw it (the ai SDK's ModelMessage): `user`
 * (a prompt, a steering message, a compaction summary), `assistant` (text and tool calls), `tool`
 * (tool results, a long one cut to 16 KiB when stored).
 */
export const modelMessageSchema = z.looseObject({
  role: z.enum(['user', 'assistant', 'tool', 'system']),
  content: z.union([z.string(), z.array(z.unknown()).describe('parts, each with a `type`: text, tool-call, tool-result ...')]),
});

/**
 * Fork mode: the parent's own system prompt and conversation (ai SDK ModelMessages), which the
 * child's model requests begin with, byte for byte, before its prompt.
 */
export const forkSchema = z.object({
  system: z
    .string()
    .max(1024 * 1024)
    .describe("the parent's system prompt, as it sent it"),
  messages: z.array(modelMessageSchema).max(5000).describe("the parent's conversation so far (ai SDK ModelMessages)"),
});
export type Fork = z.infer<typeof forkSchema>;

/**
 * The task tool's own input plus the inherited context. Unknown top-level fields are ignored
 * (the task tool may grow fields); unknown fields inside `context` and `options` are ignored too.
 */
/** A task id: `tsk_` and a ULID. */
export const taskIdSchema = z.string().regex(/^tsk_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a task id (tsk_<ulid>)');

export const createTaskBodySchema = z
  .object({
    /** Continue the conversation of this earlier, finished task (same type and parent). */
    task_id: taskIdSchema.optional(),
    subagent_type: z.string().min(1).max(64).default('fork').describe('a type of GET /agents; "fork" (or left out) with `fork`'),
    description: z.string().min(1).max(80),
    prompt: z.string().min(1).optional(),
    command: z.string().min(1).max(100_000).optional(),
    context: taskContextSchema,
    options: taskOptionsSchema.optional(),
    /** Fork mode: a child that inherits the parent's conversation (`subagent_type` "fork" or left out). */
    fork: forkSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.fork && body.subagent_type !== 'fork')
      ctx.addIssue({ code: 'custom', path: ['subagent_type'], message: 'must be "fork" (or left out) with fork' });
    if (!body.fork && body.subagent_type === 'fork' && !body.task_id) {
      ctx.addIssue({ code: 'custom', path: ['subagent_type'], message: 'required (a type of GET /agents), unless fork is given' });
    }
    if (body.subagent_type === 'shell') {
      if (body.task_id) ctx.addIssue({ code: 'custom', path: ['task_id'], message: 'a shell task has no conversation to continue' });
      if (!body.command) ctx.addIssue({ code: 'custom', path: ['command'], message: 'required when subagent_type is "shell"' });
    } else if (!body.prompt) {
      ctx.addIssue({ code: 'custom', path: ['prompt'], message: 'required (non-empty)' });
    }
  });
export type CreateTaskBody = z.infer<typeof createTaskBodySchema>;

export const taskStatusSchema = z.enum(['queued', 'running', 'paused', 'completed', 'aborted', 'error']);
const ENDED_STATUSES: ReadonlySet<string> = new Set(['completed', 'aborted', 'error']);
/** A task in one of these has ended for good (a follow-up is a new run). */
export const isEndedStatus = (status: z.output<typeof taskStatusSchema>) => ENDED_STATUSES.has(status);
export type TaskStatus = z.infer<typeof taskStatusSchema>;

export const taskErrorSchema = z.object({ code: z.string(), message: z.string() });
export type TaskError = z.infer<typeof taskErrorSchema>;

/** What a task that has not ended is doing now (busy or stuck?). */
export const progressSchema = z.object({
  phase: z.enum(['queued', 'model', 'tool', 'paused']),
  step: z.number().int().describe('the step under way (the last finished one while queued or paused)'),
  tool: z.string().optional().describe('the tool running, in phase tool'),
  reason: z
    .enum(['budget', 'approval', 'tool'])
    .optional()
    .describe("in phase paused: the pause's reason; also while an ACP agent waits for the answer to its permission request"),
  pending: z
    .array(approvalRequestSchema.extend({ kind: z.enum(['approval', 'tool']) }))
    .optional()
    .describe('while the task waits on the caller: the requests still unanswered'),
  phaseSince: z.string(),
  lastActivityAt: z.string().describe("the last byte of the model's answer or the last output of the running tool"),
  usage: usageSchema,
});
export type Progress = z.infer<typeof progressSchema>;

/** What a worktree task changed in its copy of the workspace (paths relative to the workspace, sorted). */
export const changesSchema = z
  .object({
    added: z.array(z.string()),
    modified: z.array(z.string()),
    deleted: z.array(z.string()),
    patchUrl: z.string().describe('a unified diff of the changes against the shared workspace as it is now (GET)'),
    appliedAt: z.string().nullable().describe('when POST /tasks/:id/apply wrote them into the shared workspace'),
  })
  .describe('regular files only: links, FIFOs and the like are not carried');
export type Changes = z.infer<typeof changesSchema>;

/** A worktree task's changes as stored (epoch ms). */
export interface WorktreeState {
  added: string[];
  modified: string[];
  deleted: string[];
  appliedAt: number | null;
  /** When the copy was removed (applied, or past WORKTREE_TTL_MS). */
  removedAt: number | null;
}

export const taskOutputSchema = z.object({
  id: z.string(),
  status: taskStatusSchema,
  subagent_type: z.string(),
  description: z.string(),
  model: z.string().nullable(),
  context: taskContextSchema,
  summary: z.string().nullable(),
  artifacts: z.array(artifactSchema),
  skipped: z.array(skippedPathSchema),
  output: z.unknown(),
  steps: z.number().int(),
  stopReason: stopReasonSchema.nullable(),
  usage: usageSchema.extend({ compactions: z.number().int().describe('times the conversation was compacted (their tokens are counted above)') }),
  pause: pauseSchema.nullable().describe('set while the task is paused'),
  progress: progressSchema.nullable().describe('set while the task has not ended'),
  sessionId: z.string().describe('the first task of its follow-up chain; its own id for a fresh task'),
  previousTaskId: z.string().nullable().describe('the task it continues (task_id); null for a fresh task'),
  depth: z.number().int().describe('0 for a task the caller started; a task started by another one is one deeper'),
  parentTask: z.string().nullable().describe("the task whose `task` tool started it; null for the caller's own"),
  background: z
    .boolean()
    .describe('started by its parent task with run_in_background: the parent went on meanwhile, and its end cancels the child (parent_ended)'),
  changes: changesSchema.nullable().describe('a worktree task (options.isolation "worktree") once finished: what it changed; null otherwise'),
  outcome: outcomeResultSchema.nullable().describe("a task with an outcome (its own or its definition's): its checks' result; null otherwise"),
  candidates: z.array(candidateSchema).nullable().describe('a task with options.candidates: its attempts, the selected one marked; null otherwise'),
  error: taskErrorSchema.nullable(),
  replayOf: z.string().nullable().describe('a replay (POST /tasks/{id}/replay): the task it replays; null otherwise'),
  replay: replayStateSchema.nullable(),
  purged: z
    .boolean()
    .describe(
      'its content was purged (DELETE /tasks/:id, RETENTION_DAYS, an erased user): prompt, conversation, events, summary and output are gone; usage stays',
    ),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
});
export type TaskOutput = z.infer<typeof taskOutputSchema>;

export const taskAcceptedSchema = z.object({
  id: z.string(),
  status: taskStatusSchema,
  streamUrl: z.string(),
});

/** A task route's id: any other string names no task, so it is a 404 like an unknown id (not a 400). */
export const taskIdParamsSchema = z.object({ id: z.string().min(1).max(256).describe('a task id (tsk_<ulid>)') });

export const createTaskQuerySchema = z.object({
  wait: z.enum(['true', 'false']).optional(),
});

export const listTasksQuerySchema = z.object({
  parentTaskId: contextIdSchema.optional(),
  userId: contextIdSchema.optional(),
  status: taskStatusSchema.optional(),
  sessionId: taskIdSchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(64).optional(),
});

export const taskListSchema = z.object({
  tasks: z.array(taskOutputSchema),
  nextCursor: z.string().nullable(),
});

/** `POST /tasks/:id/messages`: a steering message for a queued or running task. */
export const steeringBodySchema = z.object({
  prompt: z
    .string()
    .min(1)
    .max(64 * 1024),
});

export const taskMessagesSchema = z.object({ messages: z.array(modelMessageSchema) });

/** `POST /tasks/:id/approvals/:requestId`: the caller's answer to a call waiting for approval. */
export const approvalBodySchema = z.object({
  decision: z.enum(['allow', 'deny']),
  message: z.string().max(10_000).optional().describe('deny: what the model reads as the tool error'),
  input: z.record(z.string(), z.unknown()).optional().describe("allow: the call's input replaced (checked against the tool's schema)"),
});

/** `POST /tasks/:id/tool-results/:requestId`: the result of a caller-run tool's call, or the error the model reads. */
export const toolResultBodySchema = z.union([
  z.strictObject({ output: z.unknown().refine((v) => v !== undefined, 'required') }),
  z.strictObject({
    error: z
      .string()
      .min(1)
      .max(64 * 1024),
  }),
]);
export type ToolResultBody = z.infer<typeof toolResultBodySchema>;

/** `POST /tasks/:id/resume`: optionally the task's new budget (replacing its own). */
export const resumeBodySchema = z.object({ budget: taskBudgetSchema.optional() });
