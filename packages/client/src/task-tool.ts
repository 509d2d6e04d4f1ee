import { tool, type JSONValue } from 'ai';
import { z } from 'zod';
import type { SubagentClient } from './client.ts';
import type { AgentSummary, StreamMessage, TaskOutput } from './types.ts';

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
export async function createTaskTool({ client, context, agents, only }: TaskToolOptions) {
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
  });

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
          ...(input.output_schema ? { options: { outputSchema: input.output_schema } } : {}),
        },
        { signal: abortSignal },
      );
      const cancel = () => void client.tasks.cancel(id).catch(() => {});
      abortSignal?.addEventListener('abort', cancel, { once: true });
      try {
        for await (const m of client.tasks.stream(id, { signal: abortSignal })) {
          if (m.type === 'task.finished') {
            yield m.data;
            return;
          }
          if (m.type === 'task.paused') {
            // A budget stopped it: the parent learns now (status paused) instead of waiting blind.
            const now = await client.tasks.get(id);
            if (now.status === 'paused') {
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
