import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import type { ApprovalPause } from '../../shapes/task.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import { failed } from '../writes/finish-task.ts';
import { createApprovalSystem } from './approval-system.ts';

/** A task paused at step 1 on an approval of write_file (`apr_1`) and a caller-run tool's call (`tool_1`), unanswered until `until`. */
async function pausedOnApproval(sys: ReturnType<typeof taskSystems>, until: number): Promise<TaskRow> {
  const row = await sys.task('t-ask', 'general', 'running');
  const ask = { toolCallId: 'c1', toolName: 'write_file', input: { path: 'a.txt', content: 'x' } };
  const client = { toolCallId: 'c2', toolName: 'lookup', input: { q: 'x' } };
  const waiting: WaitingCalls = {
    step: 1,
    ran: false,
    calls: [
      { ...ask, requestId: 'apr_1', decision: 'ask', rule: 'write_file', answer: null },
      { ...client, requestId: 'tool_1', decision: 'client', rule: null, answer: null },
    ],
  };
  const since = new Date(sys.clock.now).toISOString();
  const pause: ApprovalPause = {
    reason: 'approval',
    ...ask,
    requestId: 'apr_1',
    since,
    expiresAt: new Date(until).toISOString(),
    pending: [
      { ...ask, requestId: 'apr_1', kind: 'approval', answer: null },
      { ...client, requestId: 'tool_1', kind: 'tool', answer: null },
    ],
  };
  await sys.store.pauseForApproval(row.id, pause, waiting, sys.clock.now, until);
  return (await sys.store.getById(row.id))!;
}

describe('the approval system', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  function setup() {
    const sys = taskSystems();
    close = sys.close;
    const resumable: string[] = [];
    const approvals = createApprovalSystem(sys.res, { onResumable: (row) => resumable.push(row.id) });
    return { sys, approvals, resumable };
  }

  it('resumes the task once every request of the step is answered, with an event per answer', async () => {
    const { sys, approvals, resumable } = setup();
    let row = await pausedOnApproval(sys, sys.clock.now + 60_000);
    row = await approvals.answer(row, 'apr_1', { decision: 'allow', message: 'fine' });
    // One answered, one to go: still paused, the pause showing the answer.
    expect(row.status).toBe('paused');
    expect((row.pause as ApprovalPause).pending.map((p) => p.answer)).toEqual([{ decision: 'allow', by: 'caller', message: 'fine' }, null]);
    expect(resumable).toEqual([]);
    row = await approvals.submitToolResult(row, 'tool_1', { output: { hits: 3 } });
    expect(row).toMatchObject({ status: 'running', pause: null });
    expect(row.waitingCalls!.calls.map((c) => c.answer)).toEqual([
      { decision: 'allow', by: 'caller', message: 'fine' },
      { output: { hits: 3 }, by: 'caller' },
    ]);
    expect(resumable).toEqual(['t-ask']);
    const events = (await sys.events.read('t-ask')).map((e) => e.type);
    expect(events).toEqual(['approval.answered', 'tool.answered']);
  });

  it('answers the same answer again with the task as it is, and a different one with 409', async () => {
    const { sys, approvals } = setup();
    let row = await pausedOnApproval(sys, sys.clock.now + 60_000);
    row = await approvals.answer(row, 'apr_1', { decision: 'deny' });
    expect((await approvals.answer(row, 'apr_1', { decision: 'deny' })).id).toBe('t-ask');
    await expect(approvals.answer(row, 'apr_1', { decision: 'allow' })).rejects.toMatchObject({ statusCode: 409, code: 'approval_answered' });
    row = await approvals.submitToolResult(row, 'tool_1', { error: 'no such thing' });
    expect((await approvals.submitToolResult(row, 'tool_1', { error: 'no such thing' })).id).toBe('t-ask');
    await expect(approvals.submitToolResult(row, 'tool_1', { output: 1 })).rejects.toMatchObject({ statusCode: 409, code: 'tool_result_submitted' });
    // One event per answer stored, none for the repeats.
    expect((await sys.events.read('t-ask')).map((e) => e.type)).toEqual(['approval.answered', 'tool.answered']);
  });

  it('refuses an unknown request (404), a request of the other kind (404), and an allowed input that does not fit its tool (400)', async () => {
    const { sys, approvals } = setup();
    const row = await pausedOnApproval(sys, sys.clock.now + 60_000);
    await expect(approvals.answer(row, 'apr_404', { decision: 'allow' })).rejects.toMatchObject({ statusCode: 404 });
    await expect(approvals.answer(row, 'tool_1', { decision: 'allow' })).rejects.toMatchObject({ statusCode: 404 });
    await expect(approvals.submitToolResult(row, 'apr_1', { output: 1 })).rejects.toMatchObject({ statusCode: 404 });
    await expect(approvals.answer(row, 'apr_1', { decision: 'allow', input: { path: 7 } })).rejects.toMatchObject({
      statusCode: 400,
      code: 'invalid_request',
    });
    // A new input that fits is taken.
    const answered = await approvals.answer(row, 'apr_1', { decision: 'allow', input: { path: 'b.txt', content: 'y' } });
    expect(answered.waitingCalls!.calls[0].answer).toEqual({ decision: 'allow', by: 'caller', input: { path: 'b.txt', content: 'y' } });
  });

  it('refuses an answer once the task has ended (409 task_finished)', async () => {
    const { sys, approvals } = setup();
    const row = await pausedOnApproval(sys, sys.clock.now + 60_000);
    await sys.res.finish(row, failed('cancelled', 'cancelled by the caller'), sys.clock.now);
    const ended = (await sys.store.getById(row.id))!;
    await expect(approvals.answer(ended, 'apr_1', { decision: 'allow' })).rejects.toMatchObject({ statusCode: 409, code: 'task_finished' });
  });

  it('denies the approvals and fails the tool calls left unanswered past their time, and the task goes on', async () => {
    const { sys, approvals, resumable } = setup();
    await pausedOnApproval(sys, sys.clock.now + 60_000);
    await approvals.expire();
    expect((await sys.store.getById('t-ask'))!.status).toBe('paused');
    sys.clock.now += 60_001;
    await approvals.expire();
    const row = (await sys.store.getById('t-ask'))!;
    expect(row.status).toBe('running');
    expect(row.waitingCalls!.calls.map((c) => c.answer)).toEqual([{ decision: 'deny', by: 'timeout' }, { by: 'timeout' }]);
    expect(resumable).toEqual(['t-ask']);
    // A result after the timeout is refused, saying so.
    await expect(approvals.submitToolResult(row, 'tool_1', { output: 1 })).rejects.toMatchObject({
      statusCode: 409,
      message: expect.stringMatching(/timed out/),
    });
  });
});
