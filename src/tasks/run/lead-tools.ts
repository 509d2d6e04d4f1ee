/**
 * Nesting, a lead's reach over the children it started in the background (Codex's multi-agent
 * tools): `wait` for their results, `send_input` to steer or continue one, `close_agent` to stop
 * one. Each reaches only the task's own children (its tenant's, by construction).
 */
import { AppError } from '../../errors/app-error.ts';
import {
  closeAgentInputSchema,
  sendInputInputSchema,
  waitInputSchema,
  WAIT_DEFAULT_MS,
  WAIT_MAX_MS,
  WAIT_MIN_MS,
  type ChildOutput,
  type SendInputResult,
  type WaitResult,
} from '../../shapes/lead-tools.ts';
import { isEndedStatus } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { TaskStore } from '../../store/task-store.ts';
import { defineTool, type WorkspaceTool } from '../../tools/tool-types.ts';
import { compactOutput } from '../writes/task-output.ts';
import type { ChildTasks } from './run-context.ts';
import { childKeys, untilAborted } from './child-tool.ts';

/** A paused child ends no wait by itself (it waits on its caller); it is looked at again this often. */
const PAUSED_POLL_MS = 1_000;

/** What a lead reads of a child that has not ended. */
const stillRunning = (r: TaskRow) => ({ task_id: r.id, status: r.status, description: r.description });

/** The lead tools' shared reach: the task, its children's store, the service's side. */
interface LeadReach {
  row: TaskRow;
  store: Pick<TaskStore, 'childrenOf'>;
  children: ChildTasks;
  now: () => number;
}

/** `id` if it is a child of the lead; else an error the model reads. */
async function ownChild(reach: LeadReach, id: string): Promise<TaskRow> {
  const [child] = await reach.store.childrenOf(reach.row.id, { ids: [id] });
  if (!child) throw new Error(`${id} is not a subagent this task started`);
  return child;
}

/** The three tools, each built when the task's limits offer it (tool-set.ts). */
export function leadTools(reach: LeadReach): Record<'wait' | 'send_input' | 'close_agent', () => WorkspaceTool> {
  return { wait: () => waitTool(reach), send_input: () => sendInputTool(reach), close_agent: () => closeAgentTool(reach) };
}

/**
 * `wait`: until one of the children waited for has ended, or the timeout. Without `task_ids` it
 * waits for the background children whose end this run has not yet reported (after a resume, each
 * ended one is reported once more: an end is never lost). Answers the ended ones' compact output
 * and which still run (a paused child is among them: it waits on its caller). The task's slot
 * serves others meanwhile.
 */
function waitTool(reach: LeadReach): WorkspaceTool {
  const { row, store, children } = reach;
  /** Children whose end this run reported. */
  const reported = new Set<string>();
  return defineTool({
    name: 'wait',
    readOnly: true,
    description:
      'Wait until a subagent you started in the background ends (or the timeout passes): answers each ended one with its summary, ' +
      'output and files, and which are still running.',
    inputSchema: waitInputSchema,
    async execute({ task_ids, timeoutMs }, ctx): Promise<WaitResult> {
      const deadline = reach.now() + Math.min(WAIT_MAX_MS, Math.max(WAIT_MIN_MS, timeoutMs ?? WAIT_DEFAULT_MS));
      const read = () => (task_ids ? store.childrenOf(row.id, { ids: [...new Set(task_ids)] }) : store.childrenOf(row.id, { background: true }));
      let rows = await read();
      if (task_ids) {
        const unknown = task_ids.filter((id) => !rows.some((r) => r.id === id));
        if (unknown.length > 0) throw new Error(`not subagents this task started: ${unknown.join(', ')}`);
      }
      children.waiting(row.id, true);
      try {
        for (;;) {
          const ended = rows.filter((r) => isEndedStatus(r.status) && (task_ids !== undefined || !reported.has(r.id)));
          const open = rows.filter((r) => !isEndedStatus(r.status));
          const left = deadline - reach.now();
          if (ended.length > 0 || open.length === 0 || left <= 0) {
            for (const r of ended) reported.add(r.id);
            return { finished: ended.map(compactOutput), running: open.map(stillRunning), timedOut: ended.length === 0 && open.length > 0 };
          }
          // Woken by the first end (or pause) among them, the timeout, or a look again at paused ones.
          const paused = open.some((r) => r.status === 'paused');
          const wake = new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, paused ? Math.min(left, PAUSED_POLL_MS) : left);
            // A failed read wakes it too: the children are read again below.
            void Promise.race(open.filter((r) => r.status !== 'paused').map((r) => children.ended(r.id)))
              .catch(() => undefined)
              .finally(() => {
                clearTimeout(timer);
                resolve();
              });
          });
          if (
            (await untilAborted(
              wake.then(() => true),
              ctx.signal,
            )) === null
          )
            throw new Error('stopped while waiting for the subagents');
          rows = await read();
        }
      } finally {
        children.waiting(row.id, false);
      }
    },
  });
}

/**
 * `send_input`: a child that has not ended gets the message before its next step (steering);
 * one that has ended is continued by a follow-up task with the message (it runs in the
 * background: its own `task_id`, for `wait`). Found again when its step runs again after a resume.
 */
function sendInputTool(reach: LeadReach): WorkspaceTool {
  const { row, children } = reach;
  return defineTool({
    name: 'send_input',
    readOnly: false,
    description:
      'Send a message to a subagent you started: one still running reads it before its next step; one that has ended continues ' +
      'its conversation with it as a new subagent (answered with its task_id, to wait for).',
    inputSchema: sendInputInputSchema,
    async execute({ task_id, message }, _ctx, call): Promise<SendInputResult> {
      const child = await ownChild(reach, task_id);
      if (!isEndedStatus(child.status)) {
        try {
          await children.steer(row.tenant, child.id, message);
          return { task_id: child.id, status: child.status, delivered: 'before its next step' };
        } catch (err) {
          // It ended meanwhile: continued below.
          if (!(err instanceof AppError && err.code === 'task_finished')) throw err;
        }
      }
      if (child.subagentType === 'shell') throw new Error(`${child.id} ran a command, with no conversation to continue`);
      const next = await children.start(
        row,
        {
          subagent_type: child.subagentType,
          description: child.description,
          prompt: message,
          task_id: child.id,
          context: { ...row.request.context, toolCallId: call?.toolCallId ?? 'call' },
          ...(row.request.options?.cwd && { options: { cwd: row.request.options.cwd } }),
        },
        { ...childKeys(row, call), matches: (c) => c.previousTaskId === child.id, background: true },
      );
      return { task_id: next.id, status: next.status, continues: child.id };
    },
  });
}

/** `close_agent`: stops a child (it ends `aborted` / `cancelled`) and answers how it ended; one that has ended, as it is. */
function closeAgentTool(reach: LeadReach): WorkspaceTool {
  const { row, children } = reach;
  return defineTool({
    name: 'close_agent',
    readOnly: false,
    description: 'Stop a subagent you started that is no longer needed; answers how it ended.',
    inputSchema: closeAgentInputSchema,
    async execute({ task_id }, ctx): Promise<ChildOutput> {
      const child = await ownChild(reach, task_id);
      if (isEndedStatus(child.status)) return compactOutput(child);
      await children.cancel(row.tenant, child.id, { code: 'cancelled', message: `closed by its lead ${row.id} (close_agent)` });
      // Its end follows the cancel at once (a running child stops at its next await; a paused or
      // queued one is ended by the cancel itself).
      for (;;) {
        const now = await untilAborted(children.ended(child.id), ctx.signal);
        if (!now) throw new Error('stopped while closing the subagent');
        if (isEndedStatus(now.status)) return compactOutput(now);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  });
}
