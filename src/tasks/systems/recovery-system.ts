import type { TaskRow } from '../../store/schema.ts';
import { failed } from '../writes/finish-task.ts';
import type { PauseSystem } from './pause-system.ts';
import type { Scheduler } from './scheduler.ts';
import type { TaskResources } from './task-resources.ts';

/** What `recover` sets going once it has decided. */
export interface RecoveryContext {
  scheduler: Scheduler;
  pauses: PauseSystem;
  /** PostgreSQL: the lease system (lease-system.ts), which takes over the tasks of stopped instances. */
  leases: { takeOver(own: boolean): Promise<{ interrupted: number; resumed: number }>; start(): void } | null;
  pump: () => Promise<void>;
}

/**
 * What becomes of a task whose process stopped under it (a restart here, or another instance that
 * stopped renewing its lease): resumed from its last finished step (RECOVERY_MODE=resume, model
 * tasks, at most MAX_RESUMES times), else ended `error` / `interrupted`.
 */
export function createRecoverySystem(res: TaskResources) {
  const { deps } = res;

  const recovery = {
    /** May a task a stopped process left `running` be resumed (else it ends `interrupted`)? */
    resumable(row: TaskRow): boolean {
      return deps.recovery.mode === 'resume' && deps.registry.get(row.subagentType)?.kind === 'model' && row.resumes < deps.recovery.maxResumes;
    },

    /** Ends a task whose process stopped under it: at its last stored event, not now. */
    async interrupt(row: TaskRow): Promise<void> {
      const endedAt = Math.max(row.startedAt ?? row.createdAt, (await deps.events.lastAt(row.id)) ?? 0);
      const why =
        row.resumes > 0 ? `the service stopped while the task was running (${row.resumes} resumes already)` : 'the service stopped while the task was running';
      await res.finish(row, { ...failed('interrupted', why), summary: row.summary }, endedAt);
    },

    /**
     * Takes up what a previous process left behind. A `running` task is resumed or ends
     * `interrupted` (above); a `queued` one never ran and is queued again. On PostgreSQL the
     * waiting tasks wait in the table already; running ones this instance's previous process left
     * (its id is this one's) are taken back at once, other instances' when their leases expire.
     */
    async recover(ctx: RecoveryContext): Promise<{ interrupted: number; requeued: number; resumed: number }> {
      if (ctx.leases) {
        const { all: requeued } = await ctx.scheduler.waiting('');
        const taken = await ctx.leases.takeOver(true);
        await ctx.pauses.expire();
        ctx.leases.start();
        await ctx.pump();
        return { interrupted: taken.interrupted, requeued, resumed: taken.resumed };
      }
      let interrupted = 0;
      let requeued = 0;
      let resumed = 0;
      for (const row of await deps.store.unfinished()) {
        if (row.status === 'queued') {
          ctx.scheduler.offer(row);
          requeued++;
        } else if (recovery.resumable(row)) {
          await deps.store.countResume(row.id);
          ctx.scheduler.offer((await deps.store.getById(row.id))!);
          resumed++;
        } else {
          await recovery.interrupt(row);
          interrupted++;
        }
      }
      await ctx.pauses.expire();
      await ctx.pump();
      return { interrupted, requeued, resumed };
    },
  };
  return recovery;
}

export type RecoverySystem = ReturnType<typeof createRecoverySystem>;
