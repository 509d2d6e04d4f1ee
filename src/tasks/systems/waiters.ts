import type { TaskRow } from '../../store/schema.ts';
import type { TaskStore } from '../../store/task-store.ts';

const unfinished = (row: TaskRow) => row.status === 'queued' || row.status === 'running';

/** Whoever waits for a task's end (a `?wait` request, a client's `tasks.run`), answered once. */
export function createWaiters(store: TaskStore) {
  const waiting = new Map<string, Array<(row: TaskRow) => void>>();

  function settle(row: TaskRow): void {
    const list = waiting.get(row.id);
    waiting.delete(row.id);
    for (const resolve of list ?? []) resolve(row);
  }

  return {
    settle,

    /**
     * Resolves with the task's row once it has ended (or paused). `stored`: the task as it is
     * stored now, not yet offered to any instance (a new one, waited for from its admission), so
     * nothing can have ended it: it is not read.
     */
    wait(id: string, stored?: TaskRow): Promise<TaskRow> {
      // Listening first, then reading: an end between the two is not missed.
      return new Promise((resolve, reject) => {
        const list = waiting.get(id) ?? [];
        list.push(resolve);
        waiting.set(id, list);
        if (stored && unfinished(stored)) return;
        store.getById(id).then((row) => {
          if (row && unfinished(row)) return;
          const left = (waiting.get(id) ?? []).filter((w) => w !== resolve);
          if (left.length > 0) waiting.set(id, left);
          else waiting.delete(id);
          resolve(row!);
        }, reject);
      });
    },

    /** Nobody waits for `id` any more (its admission failed: it never existed). */
    forget(id: string): void {
      waiting.delete(id);
    },

    /**
     * A task changed elsewhere (another instance): its waiters are answered if it has ended or
     * paused. Without an id: every task waited for (after notifications may have been lost).
     */
    async changed(id?: string): Promise<void> {
      for (const waited of id === undefined ? [...waiting.keys()] : [id]) {
        if (!waiting.has(waited)) continue;
        const row = await store.getById(waited);
        if (row && !unfinished(row)) settle(row);
      }
    },

    /** Answers every waiter with its task as it is now, ended or not (the process is stopping). */
    async releaseAll(): Promise<void> {
      for (const id of [...waiting.keys()]) {
        const row = await store.getById(id);
        if (row) settle(row);
      }
    },
  };
}

export type Waiters = ReturnType<typeof createWaiters>;
