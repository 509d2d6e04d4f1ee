import { and, asc, eq, gt } from 'drizzle-orm';
import { iso } from '../shapes/time.ts';
import type { Db } from '../store/database.ts';
import type { StorageGuard } from '../store/storage-guard.ts';
import { taskEvents } from '../store/schema.ts';
import { TERMINAL_EVENT, type EventData, type EventType, type StoredEvent } from './event-types.ts';

export type EventListener = (event: StoredEvent) => void;

/** Scope of a parent stream: the tenant and the parent task id. */
export interface ParentKey {
  tenant: string;
  parentTaskId: string;
}

/** What the log needs of a task to number its events. */
export type EventTask = { id: string } & ParentKey;

/** `<parentTaskId>@<tenant>`: a parentTaskId never holds `@`, so the first one ends it. */
const parentKey = (k: ParentKey) => `${k.parentTaskId}@${k.tenant}`;

/** Parents whose last parent seq is cached; past it the cache is emptied once all is written. */
const MAX_CACHED_PARENTS = 50_000;

/**
 * The per-task event log: every event gets the next `seq` of its task, is written to SQLite, and
 * only then is handed to live listeners. Writes are group-committed: events appended in the same
 * tick go into one transaction (at thousands of events a second one commit each would cost more
 * than everything else), flushed on the next turn of the event loop or at once when an event must
 * be written together with other state (`transaction`). Because an event is published only
 * after it is stored, a reader that replays from the store and subscribes in the same tick sees
 * every event exactly once, in order, with no gap.
 */
/** An event as the write hook sees it, inside the transaction that stores it. */
export interface WrittenEvent {
  taskId: string;
  tenant: string;
  type: EventType;
  at: number;
}

export interface EventLogOptions {
  now?: () => number;
  storage?: StorageGuard;
  /** Runs inside every transaction that stores events, after them (the webhook outbox). */
  onWrite?: (events: WrittenEvent[]) => void;
}

export function createEventLog(db: Db, opts: EventLogOptions = {}) {
  const now = opts.now ?? Date.now;
  const lastSeq = new Map<string, number>();
  const taskListeners = new Map<string, Set<EventListener>>();
  const parentListeners = new Map<string, Set<EventListener>>();
  const lastParentSeq = new Map<string, number>();
  const insert = db.$client.prepare(
    'INSERT INTO task_events (task_id, seq, type, at, data, parent_key, parent_seq) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const maxSeq = db.$client.prepare('SELECT max(seq) AS seq FROM task_events WHERE task_id = ?').pluck();
  const maxParentSeq = db.$client.prepare('SELECT max(parent_seq) FROM task_events WHERE parent_key = ?').pluck();
  const readParent = db.$client.prepare(
    `SELECT task_id AS taskId, seq, type, at, data, parent_seq AS parentSeq FROM task_events
     WHERE parent_key = ? AND parent_seq > ? ORDER BY parent_seq LIMIT ?`,
  );
  const maxAt = db.$client.prepare('SELECT max(at) FROM task_events WHERE task_id = ?').pluck();
  interface Pending {
    event: StoredEvent;
    parent: string;
    at: number;
    dataJson: string;
  }
  let pending: Pending[] = [];
  let scheduled = false;
  const insertRow = (r: Pending) =>
    insert.run(r.event.taskId, r.event.seq, r.event.type, r.at, r.dataJson, r.parent, r.event.parentSeq);
  const tellWritten = (rows: Pending[]) => {
    if (!opts.onWrite || rows.length === 0) return;
    opts.onWrite(rows.map((r) => ({ taskId: r.event.taskId, tenant: r.parent.slice(r.parent.indexOf('@') + 1), type: r.event.type, at: r.at })));
  };
  const writeBatch = db.$client.transaction((rows: Pending[]) => {
    rows.forEach(insertRow);
    tellWritten(rows);
  });
  function nextParentSeq(key: string): number {
    const seq = (lastParentSeq.get(key) ?? (maxParentSeq.get(key) as number | null) ?? 0) + 1;
    lastParentSeq.set(key, seq);
    return seq;
  }

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

  function publish(rows: Pending[]) {
    for (const r of rows) {
      notify(taskListeners.get(r.event.taskId), r.event);
      notify(parentListeners.get(r.parent), r.event);
    }
  }

  /** Writes what is pending in one transaction, then publishes it in order; throws with nothing lost. */
  function writePending() {
    const rows = pending;
    if (rows.length === 0) return;
    writeBatch(rows);
    pending = [];
    // Everything is stored now, so the cache can be rebuilt from the table when needed.
    if (lastParentSeq.size > MAX_CACHED_PARENTS) lastParentSeq.clear();
    publish(rows);
  }

  let retrying = false;
  /**
   * The group commit. When the disk is full or the database unwritable, the rows stay pending (not
   * published: readers never see an event that is not stored) and the storage guard writes them,
   * in order with the other waiting writes, once it can.
   */
  function flush() {
    if (retrying) return;
    try {
      writePending();
    } catch (err) {
      if (!opts.storage?.report(err)) throw err;
      retrying = true;
      void opts.storage.write(() => {
        writePending();
        retrying = false;
      });
    }
  }

  /** Numbers an event (its task's next seq, its parent's next seq) and serialises it once. */
  function prepare<T extends EventType>(task: EventTask, type: T, data: EventData[T]): Pending {
    const seq = nextSeq(task.id);
    // A finished task takes no more events: its number need not stay cached.
    if (type === TERMINAL_EVENT) lastSeq.delete(task.id);
    else lastSeq.set(task.id, seq);
    const at = now();
    const parent = parentKey(task);
    const parentSeq = nextParentSeq(parent);
    const dataJson = JSON.stringify(data);
    return { event: { taskId: task.id, seq, type, json: envelope(seq, type, task.id, at, dataJson, parentSeq), parentSeq }, parent, at, dataJson };
  }

  return {
    /** Appends one event; it is written with the next group commit, then handed to listeners. */
    append<T extends EventType>(task: EventTask, type: T, data: EventData[T]): void {
      pending.push(prepare(task, type, data));
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => {
          scheduled = false;
          flush();
        });
      }
    },

    /**
     * Runs `body` in one transaction with the events pending before it and the events it appends
     * (written at once, in order), so that an event and the state it reports commit together or not
     * at all. Listeners hear of them after the commit. If it throws, nothing was written and the
     * numbers the events took are given back, so a retry takes the same ones.
     */
    transaction<R>(body: (append: <T extends EventType>(task: EventTask, type: T, data: EventData[T]) => void) => R): R {
      const before = pending;
      const written: Pending[] = [];
      const seqs = new Map<string, number | undefined>();
      const parentSeqs = new Map<string, number | undefined>();
      let result: R;
      try {
        result = db.$client.transaction(() => {
          before.forEach(insertRow);
          tellWritten(before);
          const answer = body((task, type, data) => {
            if (!seqs.has(task.id)) seqs.set(task.id, lastSeq.get(task.id));
            const parent = parentKey(task);
            if (!parentSeqs.has(parent)) parentSeqs.set(parent, lastParentSeq.get(parent));
            const row = prepare(task, type, data);
            insertRow(row);
            written.push(row);
          });
          tellWritten(written);
          return answer;
        })();
      } catch (err) {
        for (const [id, seq] of seqs) seq === undefined ? lastSeq.delete(id) : lastSeq.set(id, seq);
        for (const [key, seq] of parentSeqs) seq === undefined ? lastParentSeq.delete(key) : lastParentSeq.set(key, seq);
        throw err;
      }
      pending = [];
      if (lastParentSeq.size > MAX_CACHED_PARENTS) lastParentSeq.clear();
      publish(before);
      publish(written);
      return result;
    },

    /** Writes and publishes everything appended so far (at shutdown). */
    flush: () => flush(),

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
          parentSeq: r.parentSeq ?? undefined,
          json: envelope(r.seq, r.type, r.taskId, r.at, r.data, r.parentSeq),
        }));
    },

    /** Stored events of every task of a parent with `parentSeq > after`, in the order they were written. */
    readParent(key: ParentKey, after = 0, limit = 10_000): StoredEvent[] {
      const rows = readParent.all(parentKey(key), after, limit) as Array<{
        taskId: string;
        seq: number;
        type: string;
        at: number;
        data: string;
        parentSeq: number;
      }>;
      return rows.map((r) => ({
        taskId: r.taskId,
        seq: r.seq,
        type: r.type as EventType,
        parentSeq: r.parentSeq,
        json: envelope(r.seq, r.type, r.taskId, r.at, r.data, r.parentSeq),
      }));
    },

    /** When the task's last stored event was written (null without events). */
    lastAt(taskId: string): number | null {
      return (maxAt.get(taskId) as number | null) ?? null;
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

function envelope(seq: number, type: string, taskId: string, at: number, dataJson: string, parentSeq?: number | null): string {
  const cursor = parentSeq ? `,"parentSeq":${parentSeq}` : '';
  return `{"seq":${seq},"type":${JSON.stringify(type)},"taskId":${JSON.stringify(taskId)}${cursor},"at":"${iso(at)}","data":${dataJson}}`;
}
