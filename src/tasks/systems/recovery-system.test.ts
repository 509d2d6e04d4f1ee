import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import { createPauseSystem } from './pause-system.ts';
import { createRecoverySystem } from './recovery-system.ts';
import { localScheduler } from './scheduler.ts';

describe('the recovery system', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('decides: a model task is resumed while it has resumes left and RECOVERY_MODE=resume; a shell task never', async () => {
    const resume = taskSystems({ recovery: { mode: 'resume', maxResumes: 2 } });
    const interrupt = taskSystems({ recovery: { mode: 'interrupt', maxResumes: 2 } });
    close = async () => {
      await resume.close();
      await interrupt.close();
    };
    const decide = createRecoverySystem(resume.res).resumable;
    expect(decide(await resume.task('fresh', 'general', 'running'))).toBe(true);
    expect(decide(await resume.task('once', 'explore', 'running', 1))).toBe(true);
    expect(decide(await resume.task('worn', 'general', 'running', 2))).toBe(false);
    expect(decide(await resume.task('shell', 'shell', 'running'))).toBe(false);
    expect(createRecoverySystem(interrupt.res).resumable(await interrupt.task('fresh', 'general', 'running'))).toBe(false);
  });

  it('after a restart: queues the queued again, resumes what may be resumed (one resume counted), ends the rest interrupted at its last event', async () => {
    const sys = taskSystems({ pausedTtlMs: 10_000 });
    close = sys.close;
    await sys.task('t1-queued', 'general', 'queued');
    await sys.task('t2-model', 'general', 'running');
    const shell = await sys.task('t3-shell', 'shell', 'running');
    sys.events.append(shell, 'step.started', { step: 1 });
    await sys.events.flush();
    const lastEventAt = sys.clock.now;
    await sys.task('t4-paused', 'general', 'paused');
    sys.clock.now += 60_000;
    const scheduler = localScheduler(4);
    let pumped = 0;
    const recovered = await createRecoverySystem(sys.res).recover({
      scheduler,
      pauses: createPauseSystem(sys.res),
      leases: null,
      pump: async () => void pumped++,
    });
    expect(recovered).toEqual({ interrupted: 1, requeued: 1, resumed: 1 });
    expect(pumped).toBe(1);
    const offered = [await scheduler.next(), await scheduler.next(), await scheduler.next()];
    expect(offered.map((o) => o && [o.row.id, o.row.resumes])).toEqual([['t1-queued', 0], ['t2-model', 1], undefined]);
    expect(await sys.store.getById('t3-shell')).toMatchObject({ status: 'error', errorCode: 'interrupted', completedAt: lastEventAt });
    // Paused past PAUSED_TTL_MS meanwhile: ended as the pause system ends it.
    expect(await sys.store.getById('t4-paused')).toMatchObject({ status: 'aborted', errorCode: 'budget_exceeded' });
  });
});
