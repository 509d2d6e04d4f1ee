import { afterEach, describe, expect, it } from 'vitest';
import { fakeCluster, taskSystems } from '../../../test/support/task-systems.ts';
import { createLeaseSystem } from './lease-system.ts';
import { createRecoverySystem } from './recovery-system.ts';
import { abortCode } from '../run/task-abort.ts';
import type { TaskRow } from '../../store/schema.ts';

describe('the lease system', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  function setup(leaseMs = 3000) {
    const sys = taskSystems({ cluster: { store: fakeCluster() as never, leaseMs } });
    close = sys.close;
    const cluster = fakeCluster();
    const monotonic = { now: 0 };
    let pumps = 0;
    const leases = createLeaseSystem(sys.res, cluster, {
      recovery: createRecoverySystem(sys.res),
      pump: () => pumps++,
      clock: () => monotonic.now,
    });
    /** A task running here, as the dispatcher registers it. */
    const run = (id: string) => {
      const controller = new AbortController();
      // The lease system reads nothing of the row itself.
      sys.res.active.set(id, { row: { id } as TaskRow, controller, timer: setTimeout(() => undefined, 0), resumable: true });
      leases.track(id);
      return controller;
    };
    return { ...sys, cluster, monotonic, leases, run, pumps: () => pumps };
  }

  it('lets a task act without asking the database until a margin before its lease ends, then asks', async () => {
    const { cluster, monotonic, leases, run } = setup(3000);
    const controller = run('t1');
    monotonic.now = 2_000 - 1; // the deadline: 3000 ms less a margin of 300 (a tenth, at most 1 s)
    await leases.confirm('t1', controller);
    expect(cluster.calls).toEqual([]);
    monotonic.now = 2_700;
    cluster.held.add('t1');
    await leases.confirm('t1', controller);
    expect(cluster.calls).toEqual(['renewOne t1']);
    // Renewed: the next deadline counts from the renewal.
    monotonic.now = 2_700 + 2_699;
    await leases.confirm('t1', controller);
    expect(cluster.calls).toEqual(['renewOne t1']);
    expect(controller.signal.aborted).toBe(false);
  });

  it('stops a task whose lease another instance took while this one was paused: nothing more is started', async () => {
    const { monotonic, leases, run } = setup(3000);
    const controller = run('t1');
    monotonic.now = 60_000; // woken from a pause long past the lease; the database says it is another's
    await expect(leases.confirm('t1', controller)).rejects.toMatchObject({ code: 'taken_over' });
    expect(abortCode(controller.signal).code).toBe('taken_over');
  });

  it('stops the tasks whose lease ran out while a renewal waits for the database', async () => {
    const { cluster, monotonic, leases, run } = setup(3000);
    const controller = run('t1');
    let answer!: () => void;
    cluster.renewGate = new Promise((r) => (answer = r));
    const first = leases.renew();
    // The next tick, before the lease's deadline: nothing stops.
    monotonic.now = 2_000;
    await leases.renew();
    expect(controller.signal.aborted).toBe(false);
    // Past it, the renewal still unanswered: the task stops as the database being out of reach.
    monotonic.now = 2_701;
    await leases.renew();
    expect(abortCode(controller.signal).code).toBe('storage_unavailable');
    answer();
    await first;
  });

  it('stops the tasks a renewal found taken over, and renews the others', async () => {
    const { cluster, monotonic, leases, run, pumps } = setup(3000);
    const lost = run('lost');
    const kept = run('kept');
    cluster.lost = ['lost'];
    monotonic.now = 1_000;
    await leases.renew();
    expect(abortCode(lost.signal).code).toBe('taken_over');
    expect(kept.signal.aborted).toBe(false);
    // kept's deadline moved to 1000 + 2700.
    monotonic.now = 3_500;
    await leases.confirm('kept', kept);
    expect(cluster.calls).not.toContain('renewOne kept');
    expect(pumps()).toBe(1);
  });

  it("takes over a stopped instance's tasks: a queued one waits again, a resumable one is released for a resume, another ends interrupted", async () => {
    const { cluster, leases, task, store } = setup(3000);
    cluster.expired = [
      await task('t-queued', 'general', 'queued'),
      await task('t-model', 'general', 'running'),
      await task('t-worn', 'general', 'running', 2),
      await task('t-shell', 'shell', 'running'),
    ];
    expect(await leases.takeOver(false)).toEqual({ interrupted: 2, resumed: 1 });
    expect(cluster.calls).toEqual(['takeExpired', 'release t-queued null', 'release t-model restart', 'notify subagentd_wake']);
    expect((await store.getById('t-worn'))!).toMatchObject({ status: 'error', errorCode: 'interrupted' });
    expect((await store.getById('t-shell'))!).toMatchObject({ status: 'error', errorCode: 'interrupted' });
    expect((await store.getById('t-model'))!.status).toBe('running');
  });
});
