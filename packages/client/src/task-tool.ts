import { asSchema, tool, type JSONValue, type Tool } from 'ai';
import { z } from 'zod';
import type { SubagentClient } from './client.ts';
import type { AgentSummary, ApprovalDecision, CandidatesSpec, ClientToolSpec, OutcomeSpec, StreamMessage, TaskOutput, ToolResult } from './types.ts';

/** What the parent's task tool inherits from the parent task (the tool call id comes per call). */
export interface TaskToolContext {
  parentTaskId: string;
  userId: string;
  timezone?: string;
}

export interface TaskToolOptions {
  client: SubagentClient;
  context: TaskToolContext;
  /** The definitions to offer; default: `GET /agents`. */
  agents?: AgentSummary[];
  /** Only these subagent types (default: all). */
  only?: string[];
  /**
   * Permission rules for every subagent this tool starts (`options.permissions`: `allow | ask |
   * deny` per tool or `bash(<glob>)`); they only narrow each definition's own.
   */
  permissions?: Record<string, 'allow' | 'ask' | 'deny'>;
  /**
   * Answers the approval requests of the subagents this tool starts, while they run (a tool call
   * whose permission rule is `ask`): route it to the orchestrator's user, or decide by a rule of
   * your own. Without it, a subagent that waits for approval ends the tool call with the paused
   * task, for the parent to decide.
   */
  onApproval?: (request: ApprovalRequestInfo, options: { abortSignal?: AbortSignal }) => Promise<ApprovalDecision | ApprovalDecision['decision']>;
  /**
   * The orchestrator's own tools, offered to every subagent this tool starts (`options.clientTools`):
   * ai SDK tools with an `execute`, run here, in the orchestrator's process, when a subagent calls
   * them; what they return (or the error they throw) goes back to the subagent as the tool's result.
   */
  clientTools?: Record<string, Tool>;
  /**
   * How every subagent this tool starts has its `complete` checked (`options.outcome`: a verify
   * command, a rubric graded by another model): the parent model reads whether it was met.
   */
  outcome?: OutcomeSpec;
  /**
   * Run each subagent as `n` attempts at once and keep the best (`options.candidates`; needs
   * `outcome`): its subagents then work in worktrees, their changes applied by whoever decides.
   */
  candidates?: CandidatesSpec;
}

/** An approval request of a subagent, as `onApproval` is asked it. */
export interface ApprovalRequestInfo {
  taskId: string;
  requestId: string;
  subagentType: string;
  /** The call waiting: the subagent's tool and the input its model gave. */
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** A preliminary result: what the subagent is doing now (for UIs; the model never sees it). */
export interface TaskProgress {
  type: 'progress';
  taskId: string;
  /** The event that moved it on (`tool.call`, `step.finished`, ...; `heartbeat` while quiet). */
  event: StreamMessage['type'];
  step: number | null;
  /** The tool it called or that answered, for `tool.call` / `tool.result`. */
  toolName: string | null;
}

export type TaskToolOutput = TaskProgress | TaskOutput;

/** What the parent model keeps of a finished task: seed 000's `compact()` plus `output`. */
export function compactTaskOutput(t: TaskOutput) {
  return {
    task_id: t.id,
    status: t.status,
    summary: t.summary,
    output: t.output,
    // Named relative to the workspace: no path of the service's host reaches the parent model.
    artifacts: t.artifacts.map((a) => ({ relativePath: a.relativePath, size: a.size, fsType: a.fsType })),
    // A worktree task's changes, to be applied (tasks.apply) by whoever decides.
    ...(t.changes ? { changes: { added: t.changes.added, modified: t.changes.modified, deleted: t.changes.deleted } } : {}),
    // Whether its outcome (a verify command, a rubric) was met: a summary is not taken on its word.
    ...(t.outcome ? { outcome: { status: t.outcome.status, iterations: t.outcome.iterations } } : {}),
    // A task with candidates: how many attempts ran, and the one kept.
    ...(t.candidates ? { candidates: { attempts: t.candidates.length, selected: t.candidates.find((c) => c.selected)?.taskId ?? null } } : {}),
    ...(t.error ? { error: t.error } : {}),
  };
}

const INSTRUCTIONS =
  'Launch a subagent to handle a self-contained task in the shared workspace. It starts with no memory of this ' +
  'conversation: the prompt is all it sees. It ends with a summary and the paths of the files it delivered; read ' +
  'those files when you need their content. Several calls in one step run in parallel.';

/**
 * The orchestrator's `task` tool as an ai SDK v6 `tool()`: its input schema is built from the
 * service's definitions (`subagent_type` an enum with each type's description), `execute` starts
 * the subagent with the parent's context and this call's id (so a repeated call never runs it
 * twice), yields progress as preliminary results, and ends with the TaskOutput. When the parent's
 * abort signal fires the task is cancelled. The model sees only `compactTaskOutput`.
 */
export async function createTaskTool({ client, context, agents, only, permissions, onApproval, clientTools = {}, outcome, candidates }: TaskToolOptions) {
  if (candidates && !outcome) throw new Error('createTaskTool: candidates are compared by their outcome: give outcome too');
  const all = agents ?? (await client.agents.list());
  const offered = all.filter((a) => !only || only.includes(a.type));
  if (offered.length === 0) throw new Error('createTaskTool: the service offers no subagent type to choose from');
  const types = offered.map((a) => a.type) as [string, ...string[]];
  const descriptions = offered
    .map((a) => `- ${a.type}: ${a.description}${a.kind === 'shell' ? ' (prompt = the bash command itself; no model)' : ''}`)
    .join('\n');

  const inputSchema = z.object({
    subagent_type: z.enum(types).describe(`The type of subagent to spawn. Available types:\n${descriptions}`),
    description: z.string().max(80).describe('Short label (3-7 words) for UI display and logs. Not the task itself.'),
    prompt: z
      .string()
      .describe(
        'Self-contained task delegation. Must include goal, all required context (subagent has no conversation history), ' +
          'expected output / file deliverables, and scope boundaries.',
      ),
    task_id: z.string().optional().describe('Continue an earlier finished task of the same type (its task_id from that result): it keeps its conversation.'),
    output_schema: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('A JSON Schema the subagent must answer with; the validated value comes back as `output`.'),
    tools: z
      .array(z.string())
      .optional()
      .describe('Only these of the subagent type\'s tools (e.g. ["read_file", "grep"] for a read-only look); default: all of them.'),
    cwd: z.string().optional().describe('A folder of the shared workspace to work in (relative to its root, created if missing); default: the root.'),
    isolation: z
      .enum(['shared', 'worktree'])
      .optional()
      .describe(
        'worktree: the subagent works on its own copy of the workspace and its result lists the files it changed, written into the ' +
          'shared workspace only when applied; use it to run several subagents on the same files at once. Default: shared.',
      ),
  });

  const specs: ClientToolSpec[] = await Promise.all(
    Object.entries(clientTools).map(async ([name, t]) => ({
      name,
      description: t.description ?? name,
      inputSchema: (await asSchema(t.inputSchema).jsonSchema) as Record<string, unknown>,
    })),
  );

  return tool({
    description: INSTRUCTIONS,
    inputSchema,
    async *execute(input, { toolCallId, abortSignal }): AsyncGenerator<TaskToolOutput> {
      const shell = offered.find((a) => a.type === input.subagent_type)?.kind === 'shell';
      const { id } = await client.tasks.create(
        {
          subagent_type: input.subagent_type,
          description: input.description,
          ...(shell ? { command: input.prompt } : { prompt: input.prompt }),
          ...(input.task_id ? { task_id: input.task_id } : {}),
          context: { ...context, toolCallId },
          options: {
            ...(input.output_schema && { outputSchema: input.output_schema }),
            ...(input.tools && !shell && { tools: input.tools }),
            ...(input.cwd && { cwd: input.cwd }),
            ...(input.isolation && { isolation: input.isolation }),
            ...(specs.length > 0 && !shell && { clientTools: specs }),
            ...(permissions && { permissions }),
            ...(outcome && !shell && { outcome }),
            ...(candidates && !shell && !input.task_id && { candidates, isolation: 'worktree' as const }),
          },
        },
        { signal: abortSignal },
      );
      const cancel = () => void client.tasks.cancel(id).catch(() => {});
      abortSignal?.addEventListener('abort', cancel, { once: true });
      const answering = callerAnswers(client, id, input.subagent_type, { onApproval, clientTools, abortSignal });
      try {
        for await (const m of client.tasks.stream(id, { signal: abortSignal })) {
          answering.rethrow();
          if (m.type === 'task.finished') {
            yield m.data;
            return;
          }
          if (m.type === 'approval.requested' || m.type === 'tool.requested') answering.start(m.type, m.data);
          if (m.type === 'task.paused') {
            // A budget stopped it, or it waits for an answer nobody here gives: the parent learns
            // now (status paused) instead of waiting blind.
            const now = await client.tasks.get(id);
            if (now.status === 'paused' && !answering.answersAll(now)) {
              yield now;
              return;
            }
          }
          yield {
            type: 'progress',
            taskId: id,
            event: m.type,
            step: 'step' in m.data && typeof m.data.step === 'number' ? m.data.step : null,
            toolName: 'toolName' in m.data ? m.data.toolName : m.type === 'heartbeat' ? (m.data.tool ?? null) : null,
          };
        }
        abortSignal?.throwIfAborted();
        yield await client.tasks.get(id);
      } finally {
        abortSignal?.removeEventListener('abort', cancel);
      }
    },
    // The TaskOutput's `output` is JSON from the service (validated against the caller's schema).
    toModelOutput: ({ output }) => ({ type: 'json', value: ('id' in output ? compactTaskOutput(output) : output) as JSONValue }),
  });
}

type Request = { requestId: string; toolCallId: string; toolName: string; input: unknown };

/**
 * The answers this process gives while a subagent runs: approvals (`onApproval`) and the
 * orchestrator's own tools (`clientTools`), each request answered once and at most once per stream
 * replay (a request already answered is skipped). Answers run concurrently with the stream; a
 * handler that throws answers for itself (an approval is denied, a tool call returns the error),
 * and a failure to send an answer is thrown from the stream's next message.
 */
function callerAnswers(
  client: SubagentClient,
  taskId: string,
  subagentType: string,
  o: { onApproval?: TaskToolOptions['onApproval']; clientTools: Record<string, Tool>; abortSignal?: AbortSignal },
) {
  let failure: unknown = null;
  const signal = o.abortSignal;
  const handles = (kind: 'approval' | 'tool', toolName: string) => (kind === 'approval' ? o.onApproval !== undefined : o.clientTools[toolName] !== undefined);

  async function decide(request: Request): Promise<ApprovalDecision> {
    try {
      const answer = await o.onApproval!({ taskId, subagentType, ...request }, { abortSignal: signal });
      return typeof answer === 'string' ? { decision: answer } : answer;
    } catch (err) {
      return { decision: 'deny', message: `the orchestrator could not decide: ${messageOf(err)}` };
    }
  }

  async function run(request: Request): Promise<ToolResult> {
    try {
      const t = o.clientTools[request.toolName];
      if (!t.execute) throw new Error(`the tool ${request.toolName} has no execute here`);
      const ran: unknown = await t.execute(request.input, { toolCallId: request.toolCallId, messages: [], abortSignal: signal });
      return { output: (await lastOf(ran)) ?? null };
    } catch (err) {
      return { error: messageOf(err) };
    }
  }

  async function answer(kind: 'approval' | 'tool', request: Request): Promise<void> {
    // A replayed request the task no longer waits for was answered already.
    const now = await client.tasks.get(taskId, { signal });
    if (!now.progress?.pending?.some((p) => p.requestId === request.requestId)) return;
    if (kind === 'approval') await client.tasks.approve(taskId, request.requestId, await decide(request), { signal });
    else await client.tasks.submitToolResult(taskId, request.requestId, await run(request), { signal });
  }

  return {
    /** Every unanswered request of a paused task has a handler here (a budget pause never has). */
    answersAll(task: TaskOutput): boolean {
      const pending = task.progress?.pending;
      return pending !== undefined && pending.length > 0 && pending.every((p) => handles(p.kind, p.toolName));
    },
    /** Answers a request in the background, if a handler here takes it. */
    start(type: 'approval.requested' | 'tool.requested', request: Request): void {
      const kind = type === 'approval.requested' ? 'approval' : 'tool';
      if (handles(kind, request.toolName)) void answer(kind, request).catch((err: unknown) => (failure ??= err));
    },
    rethrow(): void {
      if (failure) throw failure instanceof Error ? failure : new Error(messageOf(failure));
    },
  };
}

/** A tool's result: its value, or the last value a streaming tool (an async iterable) yielded. */
async function lastOf(value: unknown): Promise<unknown> {
  if (value === null || typeof value !== 'object' || !(Symbol.asyncIterator in value)) return value;
  let last: unknown;
  for await (const v of value as AsyncIterable<unknown>) last = v;
  return last;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
