import { setTimeout as sleep } from 'node:timers/promises';
import { ulid } from '../../util/ids.ts';
import { capPayload } from '../../events/cap-payload.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import type { RunContext } from './run-context.ts';

/** How often a runner looks for the answer to a live request (another instance may store it). */
const ANSWER_POLL_MS = 250;

/** A request the caller answers while the task runs on: an ACP agent's permission, a command's unknown host. */
export interface LiveRequest {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/**
 * Approval requests of a running task that waits in its own process (an ACP agent's permission
 * request, a command's connection to a host off its allow-list): each is stored with the task
 * (`waiting_calls`, `live`) with `approval.requested`, answered through `POST
 * /tasks/:id/approvals/:requestId` on any instance or denied by the approval timeout
 * (approval-system.ts), and read back here while the process waits. One at a time (the row holds
 * the calls of one wait). A cancelled task denies.
 */
export function createLiveApprovals(ctx: RunContext, row: TaskRow, signal: AbortSignal) {
  const { deps } = ctx;
  let queue: Promise<unknown> = Promise.resolve();

  async function ask(step: number, call: LiveRequest, withdrawn?: AbortSignal): Promise<'allow' | 'deny'> {
    if (withdrawn?.aborted) return 'deny';
    const now = deps.now();
    const requestId = `apr_${ulid(now)}`;
    const request = { requestId, toolCallId: call.toolCallId, toolName: call.toolName.slice(0, 200), input: capPayload(call.input) };
    const timeoutMs = row.request.options?.approvalTimeoutMs ?? deps.approvalTimeoutMs;
    const before = (await deps.store.getById(row.id))?.waitingCalls ?? null;
    // Asked while a step's approved calls run: their record stays inside this one, so that a run
    // cut during the wait still knows they started (and does not run them again).
    const behind = before && !before.live && !before.ran ? before : undefined;
    const waiting: WaitingCalls = {
      step,
      live: true,
      ran: false,
      calls: [{ ...request, decision: 'ask', rule: null, answer: null }],
      ...(behind && { behind }),
    };
    await ctx.writes.owned(row, async (s, append) => {
      await s.awaitLive(row.id, waiting, now + timeoutMs);
      append(row, 'approval.requested', request);
    });
    const stop = withdrawn ? AbortSignal.any([signal, withdrawn]) : signal;
    let answered = false;
    try {
      while (!stop.aborted) {
        const answer = (await deps.store.getById(row.id))?.waitingCalls?.calls.find((c) => c.requestId === requestId)?.answer;
        if (answer && 'decision' in answer) {
          answered = true;
          return answer.decision;
        }
        await sleep(ANSWER_POLL_MS, undefined, { signal: stop }).catch(() => {});
      }
      return 'deny';
    } finally {
      // Taken back unanswered (its command went away, its run ended): the request goes, and what
      // the row held before comes back. Answered while a step's approved calls run (a command of
      // one asked about a host): their record is put back, for a resume to know them. Else the
      // answered request stays, so the same answer again is 200 and another 409.
      const putBack = answered ? behind !== undefined : true;
      if (!signal.aborted && putBack) await ctx.writes.owned(row, (s) => s.endLive(row.id, before)).catch(() => {});
    }
  }

  return {
    /** Asks the caller; `withdrawn` takes the question back (answered `deny` to the asker). */
    ask(step: number, call: LiveRequest, withdrawn?: AbortSignal): Promise<'allow' | 'deny'> {
      const asked = queue.then(() => ask(step, call, withdrawn));
      queue = asked.catch(() => {});
      return asked;
    },
  };
}
