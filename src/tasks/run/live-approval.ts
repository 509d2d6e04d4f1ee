import { ulid } from '../../util/ids.ts';
import { createWakeUp } from '../../util/wake-up.ts';
import { capPayload } from '../../events/cap-payload.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import type { RunContext } from './run-context.ts';

/**
 * How often a runner reads its live request's row even when nothing said it was answered: the
 * answer's `approval.answered` event wakes it (published here, or announced by the instance that
 * stored it); this covers an announcement lost on its way.
 */
export const ANSWER_SAFETY_POLL_MS = 2_000;

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
 * (approval-system.ts), and read back here while the process waits, each time the task's
 * `approval.answered` event says it may be there. One at a time (the row holds the calls of one
 * wait). A cancelled task denies. `safetyPollMs`: see ANSWER_SAFETY_POLL_MS.
 */
export function createLiveApprovals(ctx: RunContext, row: TaskRow, signal: AbortSignal, safetyPollMs = ANSWER_SAFETY_POLL_MS) {
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
    // Listening first, then reading: an answer stored between the two is not missed.
    const answers = createWakeUp();
    const unsubscribe = deps.events.subscribe(row.id, (e) => {
      if (e.type === 'approval.answered') answers.wake();
    });
    let answered = false;
    try {
      while (!stop.aborted) {
        const answer = (await deps.store.getById(row.id))?.waitingCalls?.calls.find((c) => c.requestId === requestId)?.answer;
        if (answer && 'decision' in answer) {
          answered = true;
          return answer.decision;
        }
        await answers.wait(safetyPollMs, stop);
      }
      return 'deny';
    } finally {
      unsubscribe();
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
