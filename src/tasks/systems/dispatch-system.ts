import type { TaskRow } from '../../store/schema.ts';
import { storageFaultOf } from '../../store/storage-guard.ts';
import { TaskTakenOver } from '../../store/task-store.ts';
import { sharedSlices } from '../../util/turns.ts';
import { failed } from '../writes/finish-task.ts';
import type { LeaseSystem } from './lease-system.ts';
import type { Scheduler } from './scheduler.ts';
import { TaskAbort } from '../run/task-abort.ts';
import type { ResumeReason, TaskResources } from './task-resources.ts';

/**
 * Takes tasks off the scheduler into runs while there are free slots (MAX_CONCURRENT_TASKS) and
 * the database takes writes; gives each its timeout and abort controller, and frees its slot
 * when it stops.
 */
export function createDispatchSystem(res: TaskResources, scheduler: Scheduler, leases: LeaseSystem | null) {
  const { deps, active } = res;
  const slice = deps.startSlice ?? sharedSlices().lane(0);
  /** Tasks started and not yet stored as started: admission answers once they are. */
  const starting = new Map<string, Promise<void>>();
  let pumping: Promise<void> | null = null;
  /** Tasks running here that hold a slot: not those waiting for a child of theirs. */
  const busy = () => {
    let n = 0;
    for (const a of active.values()) if (!a.waitingOnChild) n++;
    return n;
  };
  let pumpAgain = false;
  /**
   * No task waited anywhere when this instance last looked (its last claim took the only one, or
   * the local queue is empty), and nothing that could change that was heard of since: every call
   * of `pump` (a task stored, released, resumed or ended anywhere, a lease renewal) counts in
   * `heard`. A task ending here then starts nothing, and need not wake the other instances.
   */
  let idle = false;
  let heard = 0;

  /** Starts what may start; resolves once the tasks it took are started (or being). */
  function pump(): Promise<void> {
    heard++;
    idle = false;
    if (pumping) {
      pumpAgain = true;
      return pumping;
    }
    const pass = async () => {
      try {
        do {
          pumpAgain = false;
          // Nothing starts while the database cannot be written: its tokens could not be billed.
          const mayStart = () => !res.state.closing && deps.storage.fault === null && busy() < deps.maxConcurrent;
          while (mayStart()) {
            // A local queue answers at once, and each start runs until its first real wait: a
            // burst of queued tasks takes its share of each turn's slice (turns.ts). The turn may
            // come several turns of the loop later: a close, a fault or a full house may have come
            // meanwhile.
            const pause = slice.enter();
            if (pause) {
              await pause;
              if (!mayStart()) break;
            }
            const seen = heard;
            const next = await scheduler.next();
            // Idle only if nothing was heard of while the claim ran (it may have missed that).
            idle = next?.alone === true && seen === heard;
            if (!next) break;
            start(next.row, next.reason);
            // None other could start (cluster): asking again would find none; whatever changes
            // that (a task stored, released, ended) pumps again.
            if (next.last) break;
          }
        } while (pumpAgain);
      } catch (err) {
        if (!deps.storage.report(err)) deps.logger.error({ err }, 'could not take the next task');
      }
    };
    // Cleared in a later turn, after it is set (a pass with nothing to do ends synchronously).
    pumping = pass().finally(() => {
      pumping = null;
    });
    return pumping;
  }

  function start(row: TaskRow, resumeReason: ResumeReason | undefined): void {
    const timeoutMs = Math.min(row.request.options?.timeoutMs ?? deps.taskTimeoutMs, deps.taskTimeoutMs);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TaskAbort('timeout', `the task ran longer than its timeout of ${timeoutMs} ms`)), timeoutMs);
    active.set(row.id, { row, controller, timer, resumable: deps.registry.get(row.subagentType)?.kind === 'model' });
    leases?.track(row.id);
    let started!: () => void;
    starting.set(row.id, new Promise<void>((resolve) => (started = resolve)));
    const onStarted = () => {
      starting.delete(row.id);
      started();
    };
    void deps.runner
      .run(row, controller.signal, { resumeReason, onStarted, ...(leases && { confirmLease: () => leases.confirm(row.id, controller) }) })
      .catch(async (err): Promise<TaskRow | null> => {
        if (err instanceof TaskTakenOver) {
          // Another instance runs it now (this one lost its lease): its end will come from there.
          deps.logger.warn({ taskId: row.id }, 'the task was taken over by another instance; stopped here');
          return null;
        }
        // The runner never throws by design; if it did (its store writes failed), the task still
        // ends error/internal_error where that can be written, and its waiters are answered.
        deps.logger.error({ err, taskId: row.id }, 'runner failed');
        const current = (await deps.store.getById(row.id).catch(() => undefined)) ?? row;
        const fault = storageFaultOf(err);
        const ending = fault ? failed(fault, 'the database could not be written') : failed('internal_error', 'the task failed inside the service');
        return res.record(current, ending, deps.now()).catch((finishErr) => {
          deps.logger.error({ err: finishErr, taskId: row.id }, 'could not record the end of the task');
          return current;
        });
      })
      .then((ended) => {
        onStarted();
        // Left running (handed over at shutdown, taken over elsewhere): its end comes later, or from elsewhere.
        if (ended && (res.state.closing || !['queued', 'running'].includes(ended.status))) res.waiters.settle(ended);
        if (ended && ['completed', 'aborted', 'error'].includes(ended.status)) res.onEnd(ended);
        clearTimeout(timer);
        active.delete(row.id);
        leases?.forget(row.id);
        // Nothing waits (as far as this instance heard): there is nothing to start or tell of.
        scheduler.done(row, idle);
        if (!idle) void pump();
      });
  }

  return {
    pump,

    /** Resolves once a task just started is stored as started (at once when it is not starting). */
    started(id: string): Promise<void> | undefined {
      return starting.get(id);
    },

    /**
     * A task waits for a child (`on`), or no longer does: while it waits, its slot serves others,
     * so the child can start even when every slot is held by parents waiting for theirs.
     */
    setWaiting(id: string, on: boolean): void {
      const here = active.get(id);
      if (!here || Boolean(here.waitingOnChild) === on) return;
      here.waitingOnChild = on;
      // Pumped once the lent place is stored (the cluster's quota is counted in the database).
      void Promise.resolve(scheduler.lend(here.row, on))
        .catch((err) => deps.logger.warn({ err, taskId: id }, 'could not lend the place of a task waiting for its child'))
        .then(() => {
          if (on) void pump();
        });
    },

    /** Stops a task running here; false when it does not run here. */
    abort(id: string, reason: TaskAbort): boolean {
      const here = active.get(id);
      here?.controller.abort(reason);
      return here !== undefined;
    },

    /** Stops every task running here. */
    abortAll(reason: TaskAbort): void {
      for (const a of active.values()) a.controller.abort(reason);
    },

    /**
     * Gives running tasks `graceMs` to end, then stops them: with RECOVERY_MODE=resume a model task
     * is left `running` after its last finished step, for the next start to resume; otherwise (and
     * a shell task always) it ends `interrupted`. Resolves, once they all stopped, with the ids of
     * the tasks left running.
     */
    async stopAll(graceMs: number): Promise<string[]> {
      const pending = [...active.keys()].map((id) => res.waiters.wait(id));
      const handedOver: string[] = [];
      if (pending.length === 0) return handedOver;
      const grace = new Promise((r) => setTimeout(r, graceMs).unref());
      await Promise.race([Promise.all(pending), grace]);
      for (const [id, a] of active) {
        const handOver = deps.recovery.mode === 'resume' && a.resumable;
        if (handOver) handedOver.push(id);
        a.controller.abort(
          handOver
            ? new TaskAbort('handed_over', 'the service stopped; the next start resumes the task')
            : new TaskAbort('interrupted', 'the service stopped while the task was running'),
        );
      }
      await Promise.all(pending);
      return handedOver;
    },
  };
}

export type DispatchSystem = ReturnType<typeof createDispatchSystem>;
