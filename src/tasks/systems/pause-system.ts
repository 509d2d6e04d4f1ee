import { AppError, shuttingDown } from '../../errors/app-error.ts';
import type { TaskBudget } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { TaskTakenOver } from '../../store/task-store.ts';
import { createTicker } from '../../util/ticker.ts';
import { candidateOf } from '../run/candidate-key.ts';
import { aborted } from '../writes/finish-task.ts';
import type { TaskResources } from './task-resources.ts';

/**
 * Tasks paused at a budget: they hold no slot, continue when the caller raises the budget
 * (`resume`), and end `aborted` / `budget_exceeded` once paused longer than PAUSED_TTL_MS.
 */
export function createPauseSystem(res: TaskResources) {
  const { deps } = res;
  const { store } = deps;
  // Looks for expired pauses four times per PAUSED_TTL_MS (every 250 ms to every minute).
  const ticker = createTicker({
    everyMs: Math.min(60_000, Math.max(250, deps.pausedTtlMs / 4)),
    tick: () => void pauses.expire().catch((err) => deps.logger.error({ err }, 'could not end the expired paused tasks; retrying')),
  });

  const pauses = {
    /** Ends the tasks paused longer than PAUSED_TTL_MS as `aborted` / `budget_exceeded`. */
    async expire(): Promise<void> {
      if (deps.storage.fault) return;
      for (const id of await store.pausedBefore(deps.now() - deps.pausedTtlMs)) {
        const row = (await store.getById(id))!;
        // An attempt of a task with candidates paused at a budget waits on its task: a resume of the
        // task resumes it, and the task's own pause expiring (or its cancel) ends it.
        if (row.pause?.reason === 'budget' && candidateOf(row)) continue;
        const why = aborted(
          'budget_exceeded',
          `the task stayed paused at its ${row.pause?.reason === 'budget' ? row.pause.budget : ''} budget longer than PAUSED_TTL_MS (${deps.pausedTtlMs} ms)`,
        );
        try {
          await res.finish(row, why, deps.now());
        } catch (err) {
          // Another instance ended (or resumed) it first.
          if (!(err instanceof TaskTakenOver)) throw err;
        }
      }
    },

    start: ticker.start,
    stop: ticker.stop,

    /**
     * Takes a paused task out of its pause, after `budget` (if given) replaced its own: the row to
     * offer the scheduler, or null when it was no longer paused (resumed or ended meanwhile).
     * 409 `task_not_paused` unless it is paused; 409 `budget_exceeded` while a budget is still reached.
     */
    async unpause(row: TaskRow, budget: TaskBudget | undefined): Promise<TaskRow | null> {
      if (row.status !== 'paused') throw new AppError(409, 'task_not_paused', `task ${row.id} is ${row.status}, not paused`);
      if (row.pause && row.pause.reason !== 'budget') {
        const route = row.pause.reason === 'approval' ? 'approvals' : 'tool-results';
        throw new AppError(
          409,
          'approval_pending',
          `task ${row.id} waits for the caller's answer to request ${row.pause.requestId}: POST /tasks/${row.id}/${route}/${row.pause.requestId}`,
        );
      }
      if (res.state.closing) throw shuttingDown();
      const now = deps.now();
      const own = budget ?? row.budget ?? undefined;
      // A task with candidates spends through its attempts: its own budget is checked against their sum.
      const tree = row.request.options?.candidates !== undefined;
      const still = await deps.budgets.reached({ ...row, pausedMs: row.pausedMs + (now - (row.pausedAt ?? now)), tree }, own, now);
      if (still) {
        throw new AppError(
          409,
          'budget_exceeded',
          `the ${still.budget} budget is still reached (${still.measure}: ${still.spent} of ${still.limit}); raise it first`,
          still,
        );
      }
      return deps.storage.write(async () => {
        if (!(await store.unpause(row.id, budget ?? null, now))) return null;
        return (await store.getById(row.id))!;
      });
    },
  };
  return pauses;
}

export type PauseSystem = ReturnType<typeof createPauseSystem>;
