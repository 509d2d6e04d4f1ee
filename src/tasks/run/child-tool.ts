/** Nesting: the `task` tool a definition with `maxDepth` gives its model, starting child tasks through the service. */
import { z } from 'zod';
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import { taskToolInputSchema, type BackgroundStarted, type ChildOutput } from '../../shapes/lead-tools.ts';
import type { TaskRow } from '../../store/schema.ts';
import { defineTool, type ToolCall, type WorkspaceTool } from '../../tools/tool-types.ts';
import type { ChildStart, ChildTasks } from './run-context.ts';
import { abortCode } from './task-abort.ts';
import { compactOutput } from '../writes/task-output.ts';

/** What the tool answers past the limit (Codex's wording). */
export const DEPTH_LIMIT_MESSAGE = 'Agent depth limit reached. Solve the task yourself.';

/**
 * The keys of the child a call of `lead` starts: its place in its step, and its id (see
 * ChildStart). A call made outside a step (none is today) has its id alone.
 */
export function childKeys(lead: TaskRow, call: ToolCall | undefined): Pick<ChildStart, 'key' | 'callKey'> {
  const callKey = `child:${lead.id}:${call?.toolCallId ?? 'call'}`;
  const placed = call?.step !== undefined && call.index !== undefined;
  return { key: placed ? `child:${lead.id}:${call.step}.${call.index}` : callKey, callKey };
}

/** `work`'s value, or null once `signal` aborts first. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
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

/** Its lead was stopped by someone (not by a shutdown or a lost lease, after which it is resumed and finds its children). */
export const stoppedForGood = (signal: AbortSignal) => ['cancelled', 'parent_ended', 'timeout'].includes(abortCode(signal).code);

/**
 * The `task` tool of `row`: starts a child of any type (in the same workspace, with the same
 * context, one level deeper, found again when its step runs again after a resume), and answers
 * the child's compact output once it ended, its slot serving others meanwhile; or, in the
 * background (`run_in_background`, offered with `background` set: its default), `{ task_id,
 * status }` at once. Past the root's `maxDepth` it starts nothing and answers the depth message.
 * A parent stopped for good (cancelled, timed out) cancels the child it waits for. While the
 * database cannot store the child (PostgreSQL restarting or failing over) the call waits for it
 * (`waitForStorage`) rather than answer the model an error it would have to retry.
 */
export function childTaskTool(
  row: TaskRow,
  types: AgentDefinition[],
  children: ChildTasks,
  opts: {
    background: boolean | null;
    /** `start()`, tried again while it fails for lack of storage; null once `signal` aborts first (storage-wait.ts). */
    waitForStorage: <T>(signal: AbortSignal, start: () => Promise<T>) => Promise<T | null>;
  },
): WorkspaceTool {
  const offered = types.filter((t) => t.type !== 'fork');
  const names = offered.map((t) => t.type) as [string, ...string[]];
  const list = offered.map((t) => `- ${t.type}: ${t.description}`).join('\n');
  const input = taskToolInputSchema.extend({
    subagent_type: z.enum(names).describe('The type of subagent'),
    run_in_background: taskToolInputSchema.shape.run_in_background.describe(
      `Answer at once with the subagent's task_id while it works (default ${opts.background ?? false}); collect its result with wait, ` +
        'steer it with send_input, stop it with close_agent',
    ),
  });
  return defineTool({
    name: 'task',
    readOnly: false,
    description:
      'Launch a subagent for a self-contained part of your task, in the same workspace. It starts with no memory of this ' +
      'conversation (the prompt is all it sees) and ends with a summary and the paths of the files it wrote; read them ' +
      `when you need their content.${opts.background === null ? '' : ' Several subagents run at once when started in the background.'} ` +
      `Available types:\n${list}`,
    // Without `wait` there is no way to a background child's result: the parameter is not offered.
    inputSchema: opts.background === null ? input.omit({ run_in_background: true }) : input,
    async execute(args: z.infer<typeof input>, ctx, call): Promise<ChildOutput | BackgroundStarted | string> {
      if (row.depth + 1 > row.maxDepth) return DEPTH_LIMIT_MESSAGE;
      const { subagent_type, description, prompt } = args;
      const background = opts.background !== null && (args.run_in_background ?? opts.background);
      const shell = offered.find((t) => t.type === subagent_type)?.kind === 'shell';
      const body = {
        subagent_type,
        description,
        ...(shell ? { command: prompt } : { prompt }),
        context: { ...row.request.context, toolCallId: call?.toolCallId ?? 'call' },
        // Its parent's folder; the rest of the parent's limits it reads up its chain (task-limits.ts).
        ...(row.request.options?.cwd && { options: { cwd: row.request.options.cwd } }),
      };
      const how: ChildStart = { ...childKeys(row, call), matches: (c) => c.subagentType === subagent_type, background };
      /** The child, once stored; a stop does not wait for a statement under way (a database away takes seconds to answer). */
      const start = async (): Promise<TaskRow> => {
        const starting = opts.waitForStorage(ctx.signal, () => children.start(row, body, how));
        const child = await untilAborted(starting, ctx.signal);
        if (child) return child;
        // Stopped for good meanwhile: the child under way is stopped once stored. At a shutdown or
        // a lost lease it is left: the lead's resume finds it again by the call's place.
        if (stoppedForGood(ctx.signal)) {
          const why = { code: 'parent_ended' as const, message: `its lead ${row.id} was stopped` };
          void starting.then((c) => c && children.cancel(row.tenant, c.id, why)).catch(() => undefined);
        }
        throw new Error('stopped while starting the subagent');
      };
      if (background) {
        const child = await start();
        // Stopped for good while the child was being stored: its end's cancel may have missed it.
        if (ctx.signal.aborted && stoppedForGood(ctx.signal)) {
          await children.cancel(row.tenant, child.id, { code: 'parent_ended', message: `its lead ${row.id} was stopped` }).catch(() => undefined);
        }
        return { task_id: child.id, status: child.status };
      }
      children.waiting(row.id, true);
      try {
        const child = await start();
        const ended = await untilAborted(children.ended(child.id), ctx.signal);
        if (!ended) {
          // Stopped by its caller or its timeout: its child goes too. At a shutdown or a lost lease
          // the child runs on, and the parent's resume finds it again by the call's place.
          if (stoppedForGood(ctx.signal)) await children.cancel(row.tenant, child.id).catch(() => undefined);
          throw new Error('stopped while waiting for the subagent');
        }
        return compactOutput(ended);
      } finally {
        children.waiting(row.id, false);
      }
    },
  });
}
