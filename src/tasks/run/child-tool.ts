/** Nesting: the `task` tool a definition with `maxDepth` gives its model, starting child tasks through the service. */
import { z } from 'zod';
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import type { TaskRow } from '../../store/schema.ts';
import { defineTool, type WorkspaceTool } from '../../tools/tool-types.ts';
import type { ChildTasks } from './run-context.ts';
import { abortCode } from './task-abort.ts';
import { compactOutput } from '../writes/task-output.ts';

/** What the tool answers past the limit (Codex's wording). */
export const DEPTH_LIMIT_MESSAGE = 'Agent depth limit reached. Solve the task yourself.';

/**
 * The `task` tool of `row`: starts a child of any type (in the same workspace, with the same
 * context, one level deeper, idempotent by the call's id so a resumed parent finds its child),
 * waits for its end while the parent's slot serves others, and answers the child's compact
 * output. Past the root's `maxDepth` it starts nothing and answers the depth message. A parent
 * cancelled or timed out cancels the child it waits for.
 */
export function childTaskTool(row: TaskRow, types: AgentDefinition[], children: ChildTasks): WorkspaceTool {
  const offered = types.filter((t) => t.type !== 'fork');
  const names = offered.map((t) => t.type) as [string, ...string[]];
  const list = offered.map((t) => `- ${t.type}: ${t.description}`).join('\n');
  return defineTool({
    name: 'task',
    readOnly: false,
    description:
      'Launch a subagent for a self-contained part of your task, in the same workspace. It starts with no memory of this ' +
      'conversation (the prompt is all it sees) and ends with a summary and the paths of the files it wrote; read them ' +
      `when you need their content. Available types:\n${list}`,
    inputSchema: z.object({
      subagent_type: z.enum(names).describe('The type of subagent'),
      description: z.string().min(1).max(80).describe('Short label (3-7 words)'),
      prompt: z.string().min(1).max(100_000).describe('Self-contained task: goal, context, expected files, scope (for shell: the command)'),
    }),
    async execute({ subagent_type, description, prompt }, ctx, call) {
      if (row.depth + 1 > row.maxDepth) return DEPTH_LIMIT_MESSAGE;
      const shell = offered.find((t) => t.type === subagent_type)?.kind === 'shell';
      const toolCallId = call?.toolCallId ?? 'call';
      children.waiting(row.id, true);
      try {
        const child = await children.start(
          row,
          {
            subagent_type,
            description,
            ...(shell ? { command: prompt } : { prompt }),
            context: { ...row.request.context, toolCallId },
            // Its parent's folder; the rest of the parent's limits it reads up its chain (task-limits.ts).
            ...(row.request.options?.cwd && { options: { cwd: row.request.options.cwd } }),
          },
          `child:${row.id}:${toolCallId}`,
        );
        const ended = await untilAborted(children.ended(child.id), ctx.signal);
        if (!ended) {
          // Stopped by its caller or its timeout: its child goes too. At a shutdown or a lost lease
          // the child runs on, and the parent's resume finds it again by the call's id.
          const code = abortCode(ctx.signal).code;
          if (code === 'cancelled' || code === 'timeout') await children.cancel(row.tenant, child.id).catch(() => undefined);
          throw new Error('stopped while waiting for the subagent');
        }
        return compactOutput(ended);
      } finally {
        children.waiting(row.id, false);
      }
    },
  });
}

/** `work`'s value, or null once `signal` aborts first. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(null);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
