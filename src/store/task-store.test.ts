import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../test/support/task-systems.ts';
import { TaskTakenOver } from './task-store.ts';

describe('the task store', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('starts a task once: a runner holding an old copy of a task started since gets TaskTakenOver, and no second record', async () => {
    const sys = taskSystems();
    close = sys.close;
    const queued = await sys.task('t-once', 'general', 'queued');
    await sys.store.markStarted(queued, 'm', sys.clock.now);
    // The same (stale) row again: another process started it meanwhile, say.
    await expect(sys.store.markStarted(queued, 'm', sys.clock.now + 1)).rejects.toBeInstanceOf(TaskTakenOver);
    const records = await sys.db.sql.all<{ n: number }>('SELECT count(*) AS n FROM subagent_records WHERE task_id = ?', ['t-once']);
    expect(Number(records[0].n)).toBe(1);
    const rollup = await sys.db.sql.get<{ tasks: number }>("SELECT tasks FROM usage_rollups WHERE dim = 'type' AND day = '*'", []);
    expect(Number(rollup?.tasks)).toBe(1);
    expect((await sys.store.getById('t-once'))?.startedAt).toBe(sys.clock.now);
  });

  it('written again after a lost COMMIT answer (the same start), finds its own start and adds nothing', async () => {
    const sys = taskSystems();
    close = sys.close;
    const queued = await sys.task('t-again', 'general', 'queued');
    await sys.store.markStarted(queued, 'm', sys.clock.now);
    await sys.store.markStarted(queued, 'm', sys.clock.now);
    const records = await sys.db.sql.all<{ n: number }>('SELECT count(*) AS n FROM subagent_records WHERE task_id = ?', ['t-again']);
    expect(Number(records[0].n)).toBe(1);
    const rollup = await sys.db.sql.get<{ tasks: number }>("SELECT tasks FROM usage_rollups WHERE dim = 'type' AND day = '*'", []);
    expect(Number(rollup?.tasks)).toBe(1);
  });

  it('never starts a task that ended while it waited (a cancel of a queued task)', async () => {
    const sys = taskSystems();
    close = sys.close;
    const queued = await sys.task('t-cancelled', 'general', 'queued');
    await sys.store.finish('t-cancelled', {
      status: 'aborted',
      summary: null,
      artifacts: [],
      skipped: [],
      output: null,
      stopReason: null,
      errorCode: 'cancelled',
      errorMessage: 'cancelled',
      completedAt: sys.clock.now,
    });
    await expect(sys.store.markStarted(queued, 'm', sys.clock.now)).rejects.toBeInstanceOf(TaskTakenOver);
    expect((await sys.store.getById('t-cancelled'))?.status).toBe('aborted');
  });
});
