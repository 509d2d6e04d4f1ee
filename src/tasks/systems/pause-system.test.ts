import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import { createPauseSystem } from './pause-system.ts';

describe('the pause system', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('ends a task paused longer than PAUSED_TTL_MS as aborted / budget_exceeded, with its end event', async () => {
    const sys = taskSystems({ pausedTtlMs: 10_000 });
    close = sys.close;
    const pauses = createPauseSystem(sys.res);
    await sys.task('t-old', 'general', 'paused');
    sys.clock.now += 6_000;
    await sys.task('t-young', 'general', 'paused');
    sys.clock.now += 5_000; // t-old paused 11 s ago, t-young 5 s ago
    await pauses.expire();
    expect(await sys.store.getById('t-old')).toMatchObject({ id: 't-old', status: 'aborted', errorCode: 'budget_exceeded' });
    expect((await sys.store.getById('t-old'))!.errorMessage).toContain('longer than PAUSED_TTL_MS (10000 ms)');
    expect((await sys.store.getById('t-young'))!.status).toBe('paused');
    const types = (await sys.events.read('t-old')).map((e) => e.type);
    expect(types.at(-1)).toBe('task.finished');
  });

  it('unpauses only a paused task whose budgets allow its next call, with the raised budget kept', async () => {
    const sys = taskSystems();
    close = sys.close;
    const pauses = createPauseSystem(sys.res);
    const running = await sys.task('t-running', 'general', 'running');
    await expect(pauses.unpause(running, undefined)).rejects.toMatchObject({ statusCode: 409, code: 'task_not_paused' });
    const paused = await sys.task('t-paused', 'general', 'paused');
    // It ran 5 s before it paused (the pause itself does not count): a 1 s budget is still reached.
    await sys.store.unpause('t-paused', null, sys.clock.now);
    sys.clock.now += 5_000;
    await sys.store.pause('t-paused', paused.pause!, sys.clock.now);
    sys.clock.now += 60_000;
    const again = (await sys.store.getById('t-paused'))!;
    await expect(pauses.unpause(again, { maxDurationMs: 1_000 })).rejects.toMatchObject({ statusCode: 409, code: 'budget_exceeded' });
    const resumed = await pauses.unpause(again, { maxDurationMs: 6_000 });
    expect(resumed).toMatchObject({ id: 't-paused', status: 'running', budget: { maxDurationMs: 6_000 }, pause: null });
    // Taken out already: nothing to offer the scheduler.
    expect(await pauses.unpause(again, undefined)).toBeNull();
  });
});
