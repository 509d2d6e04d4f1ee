import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Db } from '../store/database';
import { taskEvents } from '../store/schema';
import type { EventType, StoredEvent } from './event-types';

export type EventListener = (event: StoredEvent) => void;

/** Scope of a parent stream: the tenant and the parent task id. */
export interface ParentKey {
  tenant: string;
  parentTaskId: string;
}

const parentKey = (k: ParentKey) => `${k.tenant}\u0000${k.parentTaskId}`;

/**
 * The per-task event log: every event is written to SQLite with the next `seq` of its task, then
 * handed to live listeners. Appends are synchronous, so a reader that replays from the store and
 * subscribes in the same tick sees every event exactly once, in order, with no gap.
 */
export function createEventLog(db: Db, opts: { now?: () => number } = {}) {
  const now = opts.now ?? Date.now;
  const lastSeq = new Map<string, number>();
  const taskListeners = new Map<string, Set<EventListener>>();
  const parentListeners = new Map<string, Set<EventListener>>();
  const insert = db.$client.prepare('INSERT INTO task_events (task_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)');
  const maxSeq = db.$client.prepare('SELECT max(seq) AS seq FROM task_events WHERE task_id = ?').pluck();

  function nextSeq(taskId: string): number {
    let seq = lastSeq.get(taskId);
    if (seq === undefined) seq = (maxSeq.get(taskId) as number | null) ?? 0;
    return seq + 1;
  }

  function notify(set: Set<EventListener> | undefined, event: StoredEvent) {
    if (!set) return;
    for (const listener of set) {
      try {
        listener(event);
      } catch {
        // A reader's failure never reaches the task that produced the event.
      }
    }
  }

  return {
    /**
     * Stores one event and publishes it. `alsoInTransaction` runs first, in the same transaction, so
     * a step's usage and its `step.finished` event are written together or not at all.
     */
    append(
      task: { id: string } & ParentKey,
      type: EventType,
      data: Record<string, unknown> | (() => Record<string, unknown>),
      alsoInTransaction?: () => void,
    ): StoredEvent {
      const seq = nextSeq(task.id);
      const at = now();
      let dataJson = '';
      // The store write goes first, so `data` may be computed from what it wrote.
      const write = () => {
        alsoInTransaction?.();
        dataJson = JSON.stringify(typeof data === 'function' ? data() : data);
        insert.run(task.id, seq, type, at, dataJson);
      };
      if (alsoInTransaction) db.$client.transaction(write)();
      else write();
      lastSeq.set(task.id, seq);
      const event: StoredEvent = { taskId: task.id, seq, type, json: envelope(seq, type, task.id, at, dataJson) };
      if (type === 'task.finished') lastSeq.delete(task.id);
      notify(taskListeners.get(task.id), event);
      notify(parentListeners.get(parentKey(task)), event);
      return event;
    },

    /** Stored events of a task with `seq > after`, in order. */
    read(taskId: string, after = 0, limit = 10_000): StoredEvent[] {
      return db
        .select()
        .from(taskEvents)
        .where(and(eq(taskEvents.taskId, taskId), gt(taskEvents.seq, after)))
        .orderBy(asc(taskEvents.seq))
        .limit(limit)
        .all()
        .map((r) => ({
          taskId: r.taskId,
          seq: r.seq,
          type: r.type as EventType,
          json: envelope(r.seq, r.type, r.taskId, r.at, r.data),
        }));
    },

    lastSeq(taskId: string): number {
      return lastSeq.get(taskId) ?? (maxSeq.get(taskId) as number | null) ?? 0;
    },

    subscribe(taskId: string, listener: EventListener): () => void {
      return addListener(taskListeners, taskId, listener);
    },

    subscribeParent(key: ParentKey, listener: EventListener): () => void {
      return addListener(parentListeners, parentKey(key), listener);
    },

    /** Live readers of a task (for metrics and tests). */
    listenerCount(taskId: string): number {
      return taskListeners.get(taskId)?.size ?? 0;
    },

    count(): number {
      return (db.get(sql`SELECT count(*) AS n FROM task_events`) as { n: number }).n;
    },
  };
}

export type EventLog = ReturnType<typeof createEventLog>;

function addListener(map: Map<string, Set<EventListener>>, key: string, listener: EventListener): () => void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && map.get(key) === set) map.delete(key);
  };
}

function envelope(seq: number, type: string, taskId: string, at: number, dataJson: string): string {
  return `{"seq":${seq},"type":${JSON.stringify(type)},"taskId":${JSON.stringify(taskId)},"at":"${new Date(at).toISOString()}","data":${dataJson}}`;
}
