import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import type { TaskRow } from '../../store/schema.ts';
import { createApprovalSystem } from '../systems/approval-system.ts';
import { createLiveApprovals } from './live-approval.ts';
import { createRunContext, type RunnerDeps } from './run-context.ts';

const HOUR = 3_600_000;
const call = { toolCallId: 'c1', toolName: 'session/request_permission', input: { title: 'write a.txt' } };

/** A running task, the approval system answering its requests, and its runner's live approvals (polling every `pollMs`). */
async function setup(pollMs: number) {
  const sys = taskSystems();
  const row = await sys.task('t-live', 'general', 'running');
  const ctx = createRunContext({ store: sys.store, events: sys.events, now: sys.deps.now, approvalTimeoutMs: 60_000 } as unknown as RunnerDeps);
  const run = new AbortController();
  const live = createLiveApprovals(ctx, row, run.signal, pollMs);
  const approvals = createApprovalSystem(sys.res, { onResumable: () => undefined });
  /** The request once it is stored, and the row holding it. */
  const asked = async () => {
    for (;;) {
      const now = (await sys.store.getById(row.id))!;
      const waiting = now.waitingCalls?.calls[0];
      if (waiting) return { row: now, requestId: waiting.requestId };
      await new Promise((r) => setImmediate(r));
    }
  };
  return { sys, row, live, approvals, asked, run };
}

describe('a live approval', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it("is woken by the answer's event, not by its poll (which here would take an hour)", async () => {
    const { sys, live, approvals, asked } = await setup(HOUR);
    close = sys.close;
    const answer = live.ask(1, call);
    const { row, requestId } = await asked();
    expect(row.waitingCalls).toMatchObject({ live: true, calls: [{ requestId, toolName: call.toolName, answer: null }] });
    await approvals.answer(row, requestId, { decision: 'allow' });
    expect(await answer).toBe('allow');
    const types = (await sys.events.read('t-live')).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['approval.requested', 'approval.answered']);
  });

  it('is denied by the timeout, which the same event announces', async () => {
    const { sys, live, approvals, asked } = await setup(HOUR);
    close = sys.close;
    const answer = live.ask(1, call);
    await asked();
    sys.clock.now += 61_000;
    await approvals.expire();
    expect(await answer).toBe('deny');
  });

  it('reads an answer whose event never came at its next safety poll', async () => {
    const { sys, live, asked } = await setup(10);
    close = sys.close;
    const answer = live.ask(1, call);
    const { row } = await asked();
    // Stored as another instance would, with its announcement lost: no event here.
    const before = row.waitingCalls!;
    const after = { ...before, calls: before.calls.map((c) => ({ ...c, answer: { decision: 'deny' as const, by: 'caller' as const } })) };
    expect(await sys.store.answerApprovals(row.id, before, after, null, true, sys.clock.now)).toBe(true);
    expect(await answer).toBe('deny');
  });

  it('is denied when the task is cancelled, and taken back when withdrawn', async () => {
    const { sys, live, asked, run, row } = await setup(HOUR);
    close = sys.close;
    const withdrawn = new AbortController();
    const first = live.ask(1, call, withdrawn.signal);
    await asked();
    withdrawn.abort();
    expect(await first).toBe('deny');
    // The request went with it: the row holds what it held before.
    expect(((await sys.store.getById(row.id)) as TaskRow).waitingCalls).toBeNull();
    const second = live.ask(1, call);
    await asked();
    run.abort();
    expect(await second).toBe('deny');
  });
});
