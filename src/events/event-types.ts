import { z } from 'zod';
import { taskMemorySchema } from '../shapes/memory.ts';
import { approvalRequestSchema, criterionSchema, outcomeResultSchema, pauseSchema, progressSchema, taskOutputSchema, usageSchema } from '../shapes/task.ts';

const step = z.number().int().min(1);

/** What each event carries in `data`: one schema per event name, the only source of its type. */
export const eventDataSchemas = {
  'task.started': z.object({
    subagent_type: z.string(),
    model: z.string().nullable(),
    workspace: z.string(),
    skills: z.array(z.string()).optional().describe("the skills preloaded (its definition's, narrowed by options.skills), seen at .skills/<name>/"),
    memory: taskMemorySchema.optional().describe("the memory folder it works with (its definition's `memory`), seen at .memory/"),
  }),
  'step.started': z.object({ step }),
  'text.delta': z.object({ step, text: z.string() }),
  'tool.call': z.object({ step, toolCallId: z.string(), toolName: z.string(), input: z.unknown() }),
  'tool.result': z.object({
    step,
    toolCallId: z.string(),
    toolName: z.string(),
    output: z.unknown().describe('the tool output; a long one is cut and says so'),
    isError: z.boolean(),
  }),
  'step.finished': z.object({ step, finishReason: z.string(), usage: usageSchema }),
  'tool.replayed': z
    .object({ step, toolCallId: z.string(), toolName: z.string() })
    .describe("a replay's call equal to the recorded one at its position: answered from the record (its tool.result follows), not run"),
  'replay.diverged': z
    .object({
      step,
      expected: z.object({ toolName: z.string(), input: z.unknown() }).nullable().describe('the recorded call at that position; null past the last one'),
      got: z.object({ toolName: z.string(), input: z.unknown() }),
    })
    .describe("a replay's first call that differs from the record: from here every call runs, in the replay's worktree copy"),
  plan: z
    .object({
      step,
      entries: z.array(z.object({ content: z.string(), priority: z.string(), status: z.string() })),
    })
    .describe("an external (ACP) agent's plan, whole each time it changes"),
  'message.received': z.object({ text: z.string() }).describe('a steering message, as it goes to the model before a step'),
  'context.compacted': z.object({
    beforeTokens: z.number().int().describe("the input tokens of the step that reached the definition's compactAtTokens"),
    afterTokens: z.number().int().describe('an estimate (4 characters a token) of the compacted conversation'),
    model: z.string(),
  }),
  'task.resumed': z.object({
    fromStep: z.number().int().min(1).describe('the step it continues with'),
    attempt: z.number().int().min(0).describe('resumes after a restart so far (0 for a budget resume before any restart)'),
    reason: z.enum(['restart', 'budget', 'approval']).describe('approval: every approval or caller-run tool request of the pause was answered'),
  }),
  'task.paused': pauseSchema.describe(
    'a budget was reached before a model call (the task holds no slot until POST /tasks/{id}/resume), or a call waits for approval (until POST /tasks/{id}/approvals/{requestId}) or for the result of a caller-run tool (POST /tasks/{id}/tool-results/{requestId})',
  ),
  'model.fallback': z
    .object({ step, from: z.string(), to: z.string(), reason: z.string().describe('the error that outlived its retries') })
    .describe('the step failed on `from` after its retries and runs again on `to`'),
  'approval.requested': approvalRequestSchema.describe('a tool call whose permission rule is ask waits for POST /tasks/{id}/approvals/{requestId}'),
  'approval.answered': z.object({ requestId: z.string(), decision: z.enum(['allow', 'deny']), by: z.enum(['caller', 'timeout']) }),
  'tool.requested': approvalRequestSchema.describe('a call of a caller-run tool (options.clientTools) waits for POST /tasks/{id}/tool-results/{requestId}'),
  'tool.answered': z.object({
    requestId: z.string(),
    by: z.enum(['caller', 'timeout']),
    isError: z.boolean().describe('the caller posted an error, or no result came in time'),
  }),
  'network.request': z
    .object({
      host: z.string(),
      port: z.number().int(),
      allowed: z.boolean(),
      bytesIn: z.number().int(),
      bytesOut: z.number().int(),
      reason: z.string().optional().describe('why it was refused or cut'),
    })
    .describe("a command's connection through the task's egress proxy (network: { allow }), once it ended or was refused"),
  'hook.ran': z
    .object({
      step,
      event: z.enum(['PreToolUse', 'PostToolUse', 'Stop']),
      matcher: z.string().describe("the hook's matcher (`*` when it has none)"),
      toolCallId: z.string(),
      toolName: z.string().describe('the call it was told of (`complete` for Stop)'),
      decision: z
        .enum(['none', 'allow', 'deny', 'ask', 'block', 'failed', 'timeout'])
        .describe('none: it said nothing that counts; failed and timeout are logged and block nothing'),
      reason: z.string().optional().describe('why it blocked, denied or asked (what the model reads), or why it failed'),
      updatedInput: z.unknown().optional().describe('PreToolUse: the input it gave the call instead'),
      durationMs: z.number().int().min(0),
    })
    .describe("a hook of the task's definition ran (before a tool call, after it, or at `complete`)"),
  'outcome.evaluated': z
    .object({
      iteration: z.number().int().min(1),
      satisfied: z.boolean(),
      criteria: z.array(criterionSchema),
      by: z
        .enum(['verify', 'grader'])
        .describe('what decided: the verify command when it failed (the grader is then not asked), else the grader when there is a rubric'),
    })
    .describe('the task called complete and its outcome was checked; not satisfied with iterations left, the worker reads the feedback and goes on'),
  'candidate.started': z
    .object({ taskId: z.string(), model: z.string().nullable(), index: z.number().int().min(0) })
    .describe('a task with options.candidates started one of its attempts (a child task on its own copy of the snapshot)'),
  'candidate.finished': z
    .object({
      taskId: z.string(),
      status: z.enum(['completed', 'aborted', 'error']),
      outcome: outcomeResultSchema.nullable(),
      costMicroUsd: z.number().int(),
    })
    .describe('an attempt ended; its outcome is what the selection compares'),
  'candidate.selected': z
    .object({ taskId: z.string(), reason: z.string().describe('why this attempt was kept (first satisfied; most criteria passed, the cheapest)') })
    .describe("the attempt kept: the task's summary, output, artifacts and changes are its"),
  'task.finished': taskOutputSchema,
} as const;

export type EventType = keyof typeof eventDataSchemas;
export type EventData = { [T in EventType]: z.infer<(typeof eventDataSchemas)[T]> };
export const eventTypes = Object.keys(eventDataSchemas) as EventType[];

const envelope = <T extends EventType>(type: T) =>
  z.object({
    seq: z.number().int().min(1).describe("the event's place in its task, from 1 with no gap"),
    type: z.literal(type),
    taskId: z.string(),
    parentSeq: z.number().int().min(1).optional().describe("the event's place among all events of the task's parent (the parent stream's cursor)"),
    at: z.string().describe('ISO 8601 time'),
    data: eventDataSchemas[type],
  });

/** Sent on a quiet stream every HEARTBEAT_MS; it has no seq of its own. */
export const heartbeatSchema = z.object({
  type: z.literal('heartbeat'),
  taskId: z.string().optional().describe('set on a task stream'),
  at: z.string(),
  data: progressSchema
    .partial()
    .extend({
      lastSeq: z.number().int().min(0).describe('the last seq sent on this socket (0 before any)'),
      intervalMs: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe(
          "the service's HEARTBEAT_MS: the longest this stream stays quiet, so a reader can take a few of them without a message for a dead connection",
        ),
    })
    .describe(
      'lastSeq and intervalMs; on a task stream, while the task has not ended, also its progress fields (phase, step, tool, reason and pending while paused, phaseSince, lastActivityAt, usage)',
    ),
});

/** One message of a progress stream (`/tasks/:id/stream`, `/stream`), as the wire carries it. */
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** Every event's envelope, one per entry of eventDataSchemas (the one list of event types). */
type Envelope = { [T in EventType]: ReturnType<typeof envelope<T>> }[EventType];
type Message = Envelope | typeof heartbeatSchema;
const messages = [...eventTypes.map((type) => envelope(type)), heartbeatSchema] as unknown as [Message, ...Message[]];

export const streamMessageSchema = z.discriminatedUnion('type', messages);
export type StreamMessage = z.infer<typeof streamMessageSchema>;

/** A stored event together with its wire form, serialised once for every reader. */
export interface StoredEvent {
  taskId: string;
  seq: number;
  /** Place among all events of the task's parent (the parent stream's `after` cursor). */
  parentSeq?: number;
  type: EventType;
  json: string;
}

export const TERMINAL_EVENT: EventType = 'task.finished';
