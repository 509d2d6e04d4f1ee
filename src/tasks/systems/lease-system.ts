import { CHANNELS, type ClusterStore } from '../../store/cluster-store.ts';
import { createTicker } from '../../util/ticker.ts';
import type { RecoverySystem } from './recovery-system.ts';
import { TaskAbort } from '../run/task-abort.ts';
import type { TaskResources } from './task-resources.ts';

/** What the leases need of the cluster's store. */
export type LeaseStore = Pick<ClusterStore, 'instanceId' | 'renewOne' | 'renew' | 'takeExpired' | 'release' | 'notify'>;

export interface LeaseSystemOptions {
  recovery: RecoverySystem;
  /** Looks for work (after a renewal, a takeover). */
  pump: () => void;
  /** Monotonic milliseconds (a paused VM or a clock step cannot stretch a deadline); `performance.now` by default. */
  clock?: () => number;
}

/**
 * PostgreSQL: the leases of the tasks this instance runs. A claim holds a task for TASK_LEASE_MS;
 * every third of it the leases are renewed, tasks another instance took over are stopped here,
 * and tasks whose owner stopped renewing are taken over. Before each model call and each call's
 * tools a task confirms its lease (`confirm`), so an owner paused past it starts nothing more.
 */
export function createLeaseSystem(res: TaskResources, cluster: LeaseStore, opts: LeaseSystemOptions) {
  const { deps, active, leaseMs } = res;
  const clock = opts.clock ?? (() => performance.now());
  /**
   * Until when this instance may act for each task it runs without asking the database again: a
   * margin under the lease, for the other instances' clocks.
   */
  const deadlines = new Map<string, number>();
  const margin = Math.min(1000, Math.floor(leaseMs / 10));
  const deadlineFrom = (t0: number) => t0 + leaseMs - margin;
  const ticker = createTicker({ everyMs: Math.max(100, Math.floor(leaseMs / 3)), tick: () => void leases.renew() });
  let renewing = false;

  /** Stops a task here whose lease this instance lost, saying so (its end is written by whoever owns it, if anyone). */
  function lose(id: string, why: TaskAbort): void {
    const a = active.get(id);
    if (!a || a.controller.signal.aborted) return;
    a.controller.abort(why);
    deps.logger.warn({ taskId: id, reason: why.code }, "the task's lease was lost; it is stopped here");
  }

  /** Stops the tasks whose lease ran out without being renewed (the database out of reach, or this process paused). */
  function stopExpired(): void {
    const now = clock();
    for (const [id, a] of active) {
      const deadline = deadlines.get(id);
      if (deadline === undefined || now < deadline || a.controller.signal.aborted) continue;
      lose(id, new TaskAbort('storage_unavailable', "the task's lease ran out before it could be renewed; the task was stopped"));
    }
  }

  const leases = {
    /** A task was claimed (or taken back) just now, with a lease of TASK_LEASE_MS. */
    track(id: string): void {
      deadlines.set(id, deadlineFrom(clock()));
    },

    /** The task stopped running here. */
    forget(id: string): void {
      deadlines.delete(id);
    },

    /**
     * Resolves while this instance may still act for the task: before its lease's deadline, or once
     * the database confirms it still owns the task (the lease renewed). Otherwise the task is
     * stopped (taken over elsewhere: nothing more is written here; the database out of reach: it
     * ends once the database is back, if it is still this instance's) and this rejects.
     */
    async confirm(id: string, controller: AbortController): Promise<void> {
      const deadline = deadlines.get(id);
      if (deadline !== undefined && clock() < deadline) return;
      const t0 = clock();
      let held: boolean;
      try {
        held = await cluster.renewOne(id, deps.now() + leaseMs);
      } catch (err) {
        deps.storage.report(err);
        controller.abort(new TaskAbort('storage_unavailable', "the task's lease ran out while the database could not be reached; the task was stopped"));
        throw controller.signal.reason;
      }
      if (!held) {
        controller.abort(new TaskAbort('taken_over', 'another instance took the task over'));
        throw controller.signal.reason;
      }
      deadlines.set(id, deadlineFrom(t0));
    },

    /**
     * Takes over the tasks whose owner stopped renewing (`own`: also those this instance's previous
     * process left): a resumable one is released for any instance to resume (a resume is counted),
     * any other ends `interrupted`; a queued one an admission left held is released.
     */
    async takeOver(own: boolean): Promise<{ interrupted: number; resumed: number }> {
      let interrupted = 0;
      let resumed = 0;
      const now = deps.now();
      // A task still stopping here (its lease lost) is not taken back until it has stopped.
      for (const row of await cluster.takeExpired(now, now + leaseMs, own, [...active.keys()])) {
        if (row.status === 'queued') {
          await cluster.release(row.id, null);
        } else if (opts.recovery.resumable(row)) {
          await cluster.release(row.id, 'restart');
          resumed++;
        } else {
          await opts.recovery.interrupt(row);
          interrupted++;
        }
      }
      if (interrupted + resumed > 0) {
        deps.logger.warn({ interrupted, resumed }, 'took over the tasks of an instance that stopped renewing its leases');
        await cluster.notify(CHANNELS.wake, cluster.instanceId);
      }
      return { interrupted, resumed };
    },

    /**
     * Every third of TASK_LEASE_MS: renews this instance's leases, stops the tasks it lost (another
     * instance took them over while it could not renew), takes over expired ones and looks for work
     * (a missed notification costs at most this long).
     */
    async renew(): Promise<void> {
      if (res.state.closing) return;
      // A renewal still waiting for the database (the driver retries for a while): the tasks whose
      // leases ran out meanwhile stop now. Otherwise the renewal goes first (a process woken from a
      // pause renews what it still owns before it judges what ran out).
      if (renewing) return stopExpired();
      // Tried during a storage fault too: the lease is what keeps the tasks running through it.
      renewing = true;
      try {
        const mine = [...active.keys()].map((id) => {
          const activity = deps.liveness.snapshot(id);
          return { id, activity: activity && JSON.stringify(activity) };
        });
        const t0 = clock();
        const lost = await cluster.renew(mine, deps.now() + leaseMs);
        for (const id of lost) lose(id, new TaskAbort('taken_over', 'another instance took the task over'));
        for (const { id } of mine) if (!lost.includes(id) && deadlines.has(id)) deadlines.set(id, deadlineFrom(t0));
        await leases.takeOver(false);
        opts.pump();
      } catch (err) {
        if (!deps.storage.report(err)) deps.logger.error({ err }, 'could not renew the task leases');
      } finally {
        renewing = false;
        stopExpired();
      }
    },

    /** Renews every third of the lease from now on. */
    start: ticker.start,
    stop: ticker.stop,

    /** Releases tasks left `running` at shutdown, so another instance resumes them now rather than when their leases expire. */
    async handOver(ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      try {
        for (const id of ids) await cluster.release(id, 'restart');
        await cluster.notify(CHANNELS.wake, cluster.instanceId);
      } catch (err) {
        deps.logger.warn({ err }, 'could not hand the running tasks over; they are taken over when their leases expire');
      }
    },
  };
  return leases;
}

export type LeaseSystem = ReturnType<typeof createLeaseSystem>;
