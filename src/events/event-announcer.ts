import type { Listeners } from './event-listeners.ts';
import type { EventReader } from './event-reader.ts';
import type { StoredEvent } from './event-types.ts';

/** What a commit announces per task (written by the database: event-numbering.ts): instance, task, parent key, and the seq and parent-seq ranges written. */
interface Announcement {
  i: string;
  t: string;
  k: string;
  s: [number, number];
  p: [number, number];
}

/**
 * Cluster: hands this instance's readers the events the announcements tell of, read back from
 * the table, in order, one announcement after the other. Readers of a task get the events other
 * instances wrote (this instance's own reach them as they are published); readers of a parent get
 * them all, this instance's too, in commit order (which is parent-seq order). What a lost
 * notification skipped is read too, from the last number handed over.
 */
export function createAnnouncementFollower(opts: { instanceId: string; reader: EventReader; tasks: Listeners; parents: Listeners }) {
  const { reader, tasks, parents } = opts;
  /** The last seq (task) and parent seq (parent) handed to this instance's listeners. */
  const taskSeen = new Map<string, number>();
  const parentSeen = new Map<string, number>();
  let chain: Promise<void> = Promise.resolve();

  /** Hands `events` to the listeners of `key` not yet given them. */
  function deliver(events: StoredEvent[], seen: Map<string, number>, key: string, listeners: Listeners, seqOf: (e: StoredEvent) => number) {
    for (const e of events) {
      if (seqOf(e) <= (seen.get(key) ?? 0)) continue;
      seen.set(key, seqOf(e));
      listeners.notify(key, e);
    }
  }
  const bySeq = (e: StoredEvent) => e.seq;
  const byParentSeq = (e: StoredEvent) => e.parentSeq ?? 0;

  return {
    /** This instance published `seq` of `taskId` to its own readers. */
    published(taskId: string, seq: number): void {
      if (tasks.has(taskId)) taskSeen.set(taskId, Math.max(taskSeen.get(taskId) ?? 0, seq));
    },

    /** The last reader of a task or a parent left. */
    forgetTask: (taskId: string) => void taskSeen.delete(taskId),
    forgetParent: (key: string) => void parentSeen.delete(key),

    /** An announcement of committed events (a `subagentd_events` payload). */
    announced(payload: string): void {
      let list: Announcement[];
      try {
        list = JSON.parse(payload) as Announcement[];
      } catch {
        return;
      }
      if (!Array.isArray(list)) return;
      chain = chain
        .then(async () => {
          for (const a of list) {
            if (tasks.has(a.t) && a.i !== opts.instanceId) {
              const from = Math.min(taskSeen.get(a.t) ?? a.s[0] - 1, a.s[0] - 1);
              deliver(await reader.read(a.t, from, a.s[1] - from), taskSeen, a.t, tasks, bySeq);
            }
            if (parents.has(a.k)) {
              const from = Math.min(parentSeen.get(a.k) ?? a.p[0] - 1, a.p[0] - 1);
              deliver(await reader.readParentKey(a.k, from, a.p[1] - from), parentSeen, a.k, parents, byParentSeq);
            }
          }
        })
        .catch(() => {
          // The database is unreachable: the readers catch up from the table when they reconnect.
        });
    },

    /** The listening connection was lost and is back: every reader here catches up from the table. */
    caughtUp(): void {
      chain = chain
        .then(async () => {
          for (const taskId of tasks.keys()) deliver(await reader.read(taskId, taskSeen.get(taskId) ?? 0), taskSeen, taskId, tasks, bySeq);
          for (const key of parents.keys()) deliver(await reader.readParentKey(key, parentSeen.get(key) ?? 0), parentSeen, key, parents, byParentSeq);
        })
        .catch(() => undefined);
    },
  };
}
