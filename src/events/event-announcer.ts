import type { Listeners } from './event-listeners.ts';
import type { EventReader } from './event-reader.ts';
import type { Numbered } from './event-rows.ts';
import type { StoredEvent } from './event-types.ts';

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more (one announcement is at most ~1 KB: ids of 128 characters). */
const MAX_NOTIFY_BYTES = 7000;

/** What a commit announces per task: instance, task, parent key, and the seq and parent-seq ranges written. */
interface Announcement {
  i: string;
  t: string;
  k: string;
  s: [number, number];
  p: [number, number];
}

/**
 * Cluster: what to announce on `subagentd_events`, in the transaction that writes them (so with
 * its commit), of the events `written` by this instance: one announcement per task, packed into as
 * few notification payloads as fit (event-log.ts sends the first with the rows' INSERT).
 */
export function announcements(instanceId: string, written: Numbered[]): string[] {
  const byTask = new Map<string, Announcement>();
  for (const r of written) {
    const a = byTask.get(r.event.taskId);
    if (a) {
      a.s[1] = r.event.seq;
      a.p[1] = r.event.parentSeq!;
    } else
      byTask.set(r.event.taskId, { i: instanceId, t: r.event.taskId, k: r.parent, s: [r.event.seq, r.event.seq], p: [r.event.parentSeq!, r.event.parentSeq!] });
  }
  const payloads: string[] = [];
  let batch: string[] = [];
  let size = 2;
  const send = () => {
    if (batch.length > 0) payloads.push(`[${batch.join(',')}]`);
    batch = [];
    size = 2;
  };
  for (const a of byTask.values()) {
    const json = JSON.stringify(a);
    const bytes = Buffer.byteLength(json) + 1;
    if (size + bytes > MAX_NOTIFY_BYTES) send();
    batch.push(json);
    size += bytes;
  }
  send();
  return payloads;
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
