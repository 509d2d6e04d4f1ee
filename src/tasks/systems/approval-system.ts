import { AppError, notFound } from '../../errors/app-error.ts';
import { checkInput } from '../../definitions/tool-set.ts';
import { isDeepStrictEqual } from 'node:util';
import type { ApprovalAnswer, ApprovalPause, ToolAnswer, ToolResultBody } from '../../shapes/task.ts';
import type { TaskRow, WaitingCall, WaitingCalls } from '../../store/schema.ts';
import { createTicker } from '../../util/ticker.ts';
import type { TaskResources } from './task-resources.ts';

/** What a caller sends to answer an approval request. */
export interface ApprovalReply {
  decision: 'allow' | 'deny';
  message?: string;
  input?: Record<string, unknown>;
}

type Answer = ApprovalAnswer | ToolAnswer;

/** Times an answer is tried again when another answer to the same task was stored meanwhile. */
const MAX_ANSWER_ATTEMPTS = 5;

/**
 * Approvals and caller-run tools: tool calls whose permission rule is `ask`, and calls of the
 * caller's own tools, wait in the task's row (`waiting_calls`) while it is paused, for the caller's
 * answer (`answer`, `submitToolResult`) or the timeout's (`expire`). Once every call of the step is
 * answered the task goes on, on whichever instance claims it; the run acts on the answers before
 * its next model call (run-model.ts).
 */
export function createApprovalSystem(res: TaskResources, opts: { onResumable: (row: TaskRow) => void }) {
  const { deps } = res;
  const { store } = deps;
  // Looks for approvals past their time every second (a timeout fires within a second of it).
  const ticker = createTicker({
    everyMs: 1000,
    tick: () => void expire().catch((err) => deps.logger.error({ err }, 'could not deny the expired approvals; retrying')),
  });

  /** Stores `answers` (request id → answer) if nobody answered meanwhile; the row as it is after, and whether the task goes on. */
  async function record(row: TaskRow, answers: Map<string, Answer>): Promise<{ row: TaskRow; stored: boolean; resumed: boolean }> {
    const before = row.waitingCalls!;
    const after: WaitingCalls = {
      ...before,
      calls: before.calls.map((c) => (answers.has(c.requestId) ? ({ ...c, answer: answers.get(c.requestId)! } as WaitingCall) : c)),
    };
    // Live calls (an ACP agent's) have no pause to update: the task runs on.
    const pause = before.live ? null : (row.pause as ApprovalPause);
    const nextPause: ApprovalPause | null = pause && {
      ...pause,
      pending: pause.pending.map((p) => {
        const a = answers.get(p.requestId);
        if (!a) return p;
        return { ...p, answer: 'decision' in a ? a : { by: a.by, isError: a.by === 'timeout' || a.error !== undefined } };
      }),
    };
    const resume = after.calls.every((c) => (c.decision !== 'ask' && c.decision !== 'client') || c.answer !== null);
    const now = deps.now();
    const stored = await res.writes.answerApprovals(row, { before, after, pause: nextPause, resume, at: now }, answers);
    const current = (await store.getById(row.id))!;
    if (stored && resume && !before.live) opts.onResumable(current);
    return { row: current, stored, resumed: stored && resume };
  }

  /**
   * Ends the wait of tasks whose time to answer ran out: every unanswered approval is denied, every
   * unanswered caller-run tool's call fails (`by: timeout`).
   */
  async function expire(): Promise<void> {
    if (deps.storage.fault) return;
    for (const id of await store.approvalsExpired(deps.now())) {
      const row = await store.getById(id);
      if (!row?.waitingCalls || row.status !== (row.waitingCalls.live ? 'running' : 'paused')) continue;
      const answers = new Map<string, Answer>();
      for (const c of row.waitingCalls.calls) {
        if (c.answer) continue;
        if (c.decision === 'ask') answers.set(c.requestId, { decision: 'deny', by: 'timeout' });
        if (c.decision === 'client') answers.set(c.requestId, { by: 'timeout' });
      }
      // Answered by a caller (or another instance's timer) meanwhile: its next pass sees it.
      if (answers.size > 0) await record(row, answers);
    }
  }

  /**
   * Stores a caller's answer to the request `requestId` of kind `decision` (`ask`: an approval,
   * `client`: a caller-run tool's call), trying again over what is stored when another answer to
   * the same task came first. `same` says whether an earlier answer is the same as this one (then
   * the task is answered as it is), `conflict` the error for a different one.
   */
  async function answerRequest<A extends Answer>(
    row: TaskRow,
    requestId: string,
    kind: 'ask' | 'client',
    answer: A,
    same: (earlier: A) => boolean,
    conflict: (earlier: A) => AppError,
  ): Promise<TaskRow> {
    for (let attempt = 1; ; attempt++) {
      const call = row.waitingCalls?.calls.find((c) => c.requestId === requestId && c.decision === kind);
      if (!call) throw notFound(`${kind === 'ask' ? 'approval' : 'tool'} request ${requestId} of task ${row.id}`);
      if (call.answer) {
        if (same(call.answer as A)) return row;
        throw conflict(call.answer as A);
      }
      // Waiting calls of a live process (an ACP agent's) belong to a running task; the others to a paused one.
      if (row.status !== (row.waitingCalls!.live ? 'running' : 'paused'))
        throw new AppError(409, 'task_finished', `task ${row.id} is ${row.status}; its requests can no longer be answered`);
      const done = await record(row, new Map([[requestId, answer]]));
      if (done.stored || attempt >= MAX_ANSWER_ATTEMPTS) return done.row;
      // Another answer to this task was stored first: once more, over what is stored now.
      row = done.row;
    }
  }

  return {
    /**
     * A caller's answer to request `requestId` of `row`: 404 for an unknown request, the task as it
     * is for the same answer again, 409 `approval_answered` for a different one, 409 `task_finished`
     * when the task ended before it was answered, 400 when an allowed call's new `input` does not
     * fit its tool.
     */
    async answer(row: TaskRow, requestId: string, reply: ApprovalReply): Promise<TaskRow> {
      const call = row.waitingCalls?.calls.find((c) => c.requestId === requestId && c.decision === 'ask');
      if (call && !call.answer && reply.decision === 'allow' && reply.input) checkInput(call.toolName, reply.input);
      const answer: ApprovalAnswer = {
        decision: reply.decision,
        by: 'caller',
        ...(reply.message !== undefined && { message: reply.message }),
        ...(reply.decision === 'allow' && reply.input && { input: reply.input }),
      };
      return answerRequest(
        row,
        requestId,
        'ask',
        answer,
        (earlier) => earlier.decision === reply.decision,
        (earlier) => new AppError(409, 'approval_answered', `approval request ${requestId} was already answered: ${earlier.decision} (by the ${earlier.by})`),
      );
    },

    /**
     * The caller's result of a caller-run tool's call: 404 for an unknown request, the task as it
     * is for the same result again, 409 `tool_result_submitted` for a different one (or after the
     * timeout failed the call), 409 `task_finished` when the task ended first.
     */
    submitToolResult(row: TaskRow, requestId: string, result: ToolResultBody): Promise<TaskRow> {
      const answer: ToolAnswer = { ...result, by: 'caller' };
      return answerRequest(
        row,
        requestId,
        'client',
        answer,
        (earlier) => earlier.by === 'caller' && isDeepStrictEqual({ ...earlier }, answer),
        (earlier) =>
          new AppError(
            409,
            'tool_result_submitted',
            earlier.by === 'timeout'
              ? `tool request ${requestId} timed out before its result came; the model was told it failed`
              : `tool request ${requestId} already has a different result`,
          ),
      );
    },

    expire,

    start: ticker.start,
    stop: ticker.stop,
  };
}

export type ApprovalSystem = ReturnType<typeof createApprovalSystem>;
