import { AppError } from '../../errors/app-error.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { ChildTasks, StopWhy } from '../run/run-context.ts';
import type { Lineage } from './admission.ts';
import type { TaskResources } from './task-resources.ts';

/** What the child system asks of the task service and the dispatcher, by name. */
export interface ChildPeers {
  submit(tenant: string, body: CreateTaskBody, opts: { idempotencyKey: string; lineage: Lineage }): Promise<{ row: TaskRow }>;
  cancel(tenant: string, id: string, why: StopWhy): Promise<TaskRow>;
  steer(tenant: string, id: string, message: string): Promise<void>;
  /** Takes a task out of a budget pause (409 `budget_exceeded` while one is still reached). */
  resume(tenant: string, id: string): Promise<unknown>;
  /** The dispatcher's: the task waits for children of its own, so its slot serves others. */
  setWaiting(id: string, on: boolean): void;
}

/**
 * Nesting, the task service's side of a lead's tools: children started once (found again by
 * their key when a step runs again after a crash or a takeover), waited for, steered, stopped;
 * and the children of a lead that ended, cancelled (`parent_ended`).
 */
export function createChildSystem(res: TaskResources, peers: ChildPeers) {
  const { deps } = res;
  const { store } = deps;
  /** Tools of a task waiting for its children at once (a step's calls run together): its slot is lent while any does. */
  const waitingCalls = new Map<string, number>();

  /** The child stored under `key` if it is `parent`'s (a caller's own Idempotency-Key may look like one). */
  const found = async (parent: TaskRow, key: string) => {
    const row = await store.findByIdempotencyKey(parent.tenant, key);
    return row?.parentTask === parent.id ? row : undefined;
  };

  const children = {
    async start(parent, body, how) {
      // A step run again (after a crash, a takeover) finds the child its first run started at the
      // call's place; a child there that is not this call's leaves it its own id as the key.
      const atPlace = await found(parent, how.key);
      if (atPlace && (how.matches?.(atPlace) ?? true)) return atPlace;
      const byCall = await found(parent, how.callKey);
      if (byCall) return byCall;
      const key = atPlace ? how.callKey : how.key;
      const lineage: Lineage = {
        depth: parent.depth + 1,
        parentTask: parent.id,
        maxDepth: how.maxDepth ?? parent.maxDepth,
        background: how.background ?? false,
      };
      try {
        return (await peers.submit(parent.tenant, body, { idempotencyKey: key, lineage })).row;
      } catch (err) {
        // Stored by another run of the same step at the same moment (a deposed owner's): that child.
        const other = err instanceof AppError && err.code === 'idempotency_conflict' ? await found(parent, key) : undefined;
        if (other) return other;
        throw err;
      }
    },
    ended: (id) => res.waiters.wait(id),
    cancel: async (tenant, id, why) => void (await peers.cancel(tenant, id, why ?? { code: 'cancelled', message: 'the task was cancelled' })),
    steer: (tenant, id, message) => peers.steer(tenant, id, message),
    async resume(tenant, id) {
      try {
        await peers.resume(tenant, id);
        return true;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        if (err.code === 'budget_exceeded') return false;
        // Resumed (or ended) meanwhile: nothing holds it.
        if (err.code === 'task_not_paused') return true;
        throw err;
      }
    },
    waiting(id, on) {
      const n = (waitingCalls.get(id) ?? 0) + (on ? 1 : -1);
      if (n > 0) waitingCalls.set(id, n);
      else waitingCalls.delete(id);
      if ((on && n === 1) || (!on && n === 0)) peers.setWaiting(id, on);
    },
  } satisfies ChildTasks;

  /** Cancels the children in `rows`, as `why` says. */
  async function cancelChildren(rows: TaskRow[], why: (child: TaskRow) => StopWhy): Promise<void> {
    await Promise.all(
      rows.map((child) =>
        peers
          .cancel(child.tenant, child.id, why(child))
          .catch((err: unknown) => deps.logger.warn({ err, taskId: child.id }, 'could not cancel the child of an ended task')),
      ),
    );
  }

  return {
    children,

    /**
     * A task ended (any way): its children that have not are cancelled, each ending `aborted` /
     * `parent_ended`: those in the background, and one whose start's answer was lost while the task
     * was stopped (its `task` call never knew it). Only a task of a tree (`maxDepth`) or with
     * candidates may have any: no read for the others.
     */
    parentEnded(row: TaskRow): void {
      if ((row.maxDepth === 0 && !row.request.options?.candidates) || (row.status !== 'completed' && row.status !== 'aborted' && row.status !== 'error'))
        return;
      void store
        .childrenNotEnded(row.id)
        .then((rows) => cancelChildren(rows, () => ({ code: 'parent_ended', message: `its lead ${row.id} ended (${row.status})` })))
        .catch((err: unknown) => deps.logger.warn({ err, taskId: row.id }, 'could not read the children of an ended task'));
    },

    /** At start: children whose lead ended and that were not cancelled then (a process stopped between the two) are cancelled now. */
    async sweep(): Promise<number> {
      const orphans = await store.orphanedChildren();
      await cancelChildren(orphans, (child) => ({ code: 'parent_ended', message: `its lead ${child.parentTask} ended` }));
      return orphans.length;
    },
  };
}

export type ChildSystem = ReturnType<typeof createChildSystem>;
