import { iso } from '../shapes/time.ts';
import type { SqlClient } from '../store/sql-client.ts';
import { CHANNELS } from '../store/cluster-store.ts';
import type { StorageGuard } from '../store/storage-guard.ts';
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

/** Cluster: the advisory-lock namespace of parent streams, and the channel commits are announced on. */
const PARENT_LOCK = 0x5a6d_0004;
/** Events per INSERT statement (7 parameters each: within SQLite's and PostgreSQL's limits). */
const INSERT_CHUNK = 500;
/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more (one announcement is at most ~1 KB: ids of 128 characters). */
const MAX_NOTIFY_BYTES = 7000;

/** Parents whose last parent seq is cached; past it the cache is emptied once all is written. */
const MAX_CACHED_PARENTS = 50_000;

/** An event as the write hook sees it, inside the transaction that stores it. */
export interface WrittenEvent {
  taskId: string;
  tenant: string;
  type: EventType;
  at: number;
}

export interface EventLogOptions {
  now?: () => number;
  /** The write queue every write of the log goes through, in order with the other writes. */
  storage: StorageGuard;
  /**
   * Runs inside every transaction that stores events, after them (the webhook outbox); when it
   * answers true, `onCommit` runs once the transaction has committed.
   */
  onWrite?: (tx: SqlClient, events: WrittenEvent[]) => Promise<boolean>;
  onCommit?: () => void;
  /**
   * PostgreSQL, where several instances write events: numbers are taken under a per-parent lock
   * (no cache), and every commit is announced on `subagentd_events` for the readers on the others.
   */
  cluster?: { instanceId: string };
}

/** What a commit announces per task: instance, task, parent key, and the seq and parent-seq ranges written. */
interface Announcement {
  i: string;
  t: string;
  k: string;
  s: [number, number];
  p: [number, number];
}

/** A deadlock or a serialization failure (PostgreSQL): the transaction is run again. */
const isConflict = (err: unknown) => ['40P01', '40001'].includes((err as { code?: string } | null)?.code ?? '');
const MAX_CONFLICT_RETRIES = 5;

/** Appends events; inside `transaction`, they commit with the body's writes. */
export type Append = <T extends EventType>(task: EventTask, type: T, data: EventData[T]) => void;

/** An event appended and not yet written: numbered when it is. */
interface Pending {
  task: EventTask;
  type: EventType;
  at: number;
  dataJson: string;
}

/** An event as written, with its numbers. */
interface Numbered {
  event: StoredEvent;
  parent: string;
  at: number;
  dataJson: string;
}

/**
 * The per-task event log: every event gets the next `seq` of its task (and of its parent), is
 * written to the database, and only then is handed to live listeners. Writes are group-committed:
 * the events appended until the write queue reaches their batch (at least one turn of the event
 * loop; under load, every task's events of that while) go into one transaction (at thousands of
 * events a second one commit each would cost more than everything else); an event and the state it
 * reports commit together through `transaction`. A batch takes no event appended after a later
 * write was asked for, so a task's writes keep their order. Events are numbered when
 * they are written, in the queue's order, so numbers follow the order of the writes. Because an
 * event is published only after it is stored, a reader that subscribes and then replays from the
 * store sees every event exactly once, in order, with no gap.
 */
export function createEventLog(sql: SqlClient, opts: EventLogOptions) {
  const now = opts.now ?? Date.now;
  const storage = opts.storage;
  const lastSeq = new Map<string, number>();
  const taskListeners = new Map<string, Set<EventListener>>();
  const parentListeners = new Map<string, Set<EventListener>>();
  const lastParentSeq = new Map<string, number>();
  /**
   * The open batch: its group commit is queued at its first event and takes, when it runs, every
   * event appended until then, except those of a task that asked for another write meanwhile
   * (`sealed`: that task's next events go in a batch queued after that write). Under load one
   * commit carries the events of many tasks.
   */
  let open: { rows: Pending[]; sealed: Set<string> } | null = null;
  /** The group commit of the last batch (what `flush` waits for). */
  let lastBatch: Promise<void> = Promise.resolve();
  const cluster = opts.cluster ?? null;
  /** Cluster: the last seq (task) and parent seq (parent) handed to this instance's listeners. */
  const taskSeen = new Map<string, number>();
  const parentSeen = new Map<string, number>();

  /**
   * Numbers and inserts `rows` in `tx`; on failure the caches are put back, so a retry takes the
   * same numbers. Answers what it wrote, and whether `onWrite` wrote something of its own (the
   * webhook outbox), which `onCommit` is told once the transaction commits.
   */
  async function writeRows(tx: SqlClient, rows: Pending[], undo: Map<string, number | undefined>[]): Promise<{ written: Numbered[]; hooked: boolean }> {
    const [seqs, parentSeqs] = undo;
    const out: Numbered[] = [];
    if (cluster && rows.length > 0) {
      // Events of a task another instance took over from this one (cut off longer than its lease)
      // are not written: the task's stream goes on from its new owner only.
      const taskIds = [...new Set(rows.map((r) => r.task.id))];
      const lost = new Set(
        (await tx.rows('SELECT id FROM tasks WHERE id = ANY(?) AND owner IS NOT NULL AND owner <> ?', [taskIds, cluster.instanceId])).map((r) => r[0] as string),
      );
      if (lost.size > 0) rows = rows.filter((r) => !lost.has(r.task.id));
      // Another instance may write events of the same parent (or task) now: its numbers are taken
      // under a lock held to the commit, so they follow the commit order, gap-free. Locks are taken
      // in one order; a deadlock between two bodies' late events is retried by `commit`. The last
      // numbers are read after the locks, for every task and parent of the batch at once.
      const parents = [...new Set(rows.map((r) => parentKey(r.task)))].sort();
      lastSeq.clear();
      lastParentSeq.clear();
      if (rows.length > 0) {
        await tx.run('SELECT pg_advisory_xact_lock(?, hashtext(k)) FROM (SELECT k FROM unnest(CAST(? AS TEXT[])) AS k ORDER BY k) AS keys', [PARENT_LOCK, parents]);
        const maxSeqs = await tx.rows('SELECT task_id, max(seq) FROM task_events WHERE task_id = ANY(?) GROUP BY task_id', [taskIds]);
        const maxParentSeqs = await tx.rows('SELECT parent_key, max(parent_seq) FROM task_events WHERE parent_key = ANY(?) GROUP BY parent_key', [parents]);
        for (const id of taskIds) lastSeq.set(id, 0);
        for (const key of parents) lastParentSeq.set(key, 0);
        for (const [id, max] of maxSeqs) lastSeq.set(id as string, Number(max ?? 0));
        for (const [key, max] of maxParentSeqs) lastParentSeq.set(key as string, Number(max ?? 0));
      }
    }
    for (const r of rows) {
      const parent = parentKey(r.task);
      if (!seqs.has(r.task.id)) seqs.set(r.task.id, lastSeq.get(r.task.id));
      if (!parentSeqs.has(parent)) parentSeqs.set(parent, lastParentSeq.get(parent));
      let seq = lastSeq.get(r.task.id);
      if (seq === undefined) seq = Number((await tx.rows('SELECT max(seq) FROM task_events WHERE task_id = ?', [r.task.id]))[0]?.[0] ?? 0);
      seq += 1;
      let parentSeq = lastParentSeq.get(parent);
      if (parentSeq === undefined) parentSeq = Number((await tx.rows('SELECT max(parent_seq) FROM task_events WHERE parent_key = ?', [parent]))[0]?.[0] ?? 0);
      parentSeq += 1;
      // A finished task takes no more events: its number need not stay cached.
      if (r.type === TERMINAL_EVENT) lastSeq.delete(r.task.id);
      else lastSeq.set(r.task.id, seq);
      lastParentSeq.set(parent, parentSeq);
      out.push({ event: { taskId: r.task.id, seq, type: r.type, json: envelope(seq, r.type, r.task.id, r.at, r.dataJson, parentSeq), parentSeq }, parent, at: r.at, dataJson: r.dataJson });
    }
    // One statement per INSERT_CHUNK events (a group commit holds hundreds of text deltas).
    for (let i = 0; i < out.length; i += INSERT_CHUNK) {
      const chunk = out.slice(i, i + INSERT_CHUNK);
      await tx.run(
        `INSERT INTO task_events (task_id, seq, type, at, data, parent_key, parent_seq) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flatMap((r) => [r.event.taskId, r.event.seq, r.event.type, r.at, r.dataJson, r.parent, r.event.parentSeq]),
      );
    }
    if (cluster && out.length > 0) {
      lastSeq.clear();
      lastParentSeq.clear();
      const byTask = new Map<string, Announcement>();
      for (const r of out) {
        const a = byTask.get(r.event.taskId);
        if (a) {
          a.s[1] = r.event.seq;
          a.p[1] = r.event.parentSeq!;
        } else byTask.set(r.event.taskId, { i: cluster.instanceId, t: r.event.taskId, k: r.parent, s: [r.event.seq, r.event.seq], p: [r.event.parentSeq!, r.event.parentSeq!] });
      }
      // A notification carries less than 8,000 bytes: the announcements go in as few as fit.
      let batch: string[] = [];
      let size = 2;
      const send = async () => {
        if (batch.length > 0) await tx.run('SELECT pg_notify(?, ?)', [CHANNELS.events, `[${batch.join(',')}]`]);
        batch = [];
        size = 2;
      };
      for (const a of byTask.values()) {
        const json = JSON.stringify(a);
        const bytes = Buffer.byteLength(json) + 1;
        if (size + bytes > MAX_NOTIFY_BYTES) await send();
        batch.push(json);
        size += bytes;
      }
      await send();
    }
    const hooked =
      opts.onWrite !== undefined &&
      out.length > 0 &&
      (await opts.onWrite(tx, out.map((r) => ({ taskId: r.event.taskId, tenant: r.parent.slice(r.parent.indexOf('@') + 1), type: r.event.type, at: r.at }))));
    return { written: out, hooked };
  }

  function restore(undo: Map<string, number | undefined>[]) {
    const [seqs, parentSeqs] = undo;
    for (const [id, seq] of seqs) seq === undefined ? lastSeq.delete(id) : lastSeq.set(id, seq);
    for (const [key, seq] of parentSeqs) seq === undefined ? lastParentSeq.delete(key) : lastParentSeq.set(key, seq);
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

  function publish(rows: Numbered[]) {
    // Everything is stored now, so the cache can be rebuilt from the table when needed.
    if (lastParentSeq.size > MAX_CACHED_PARENTS) lastParentSeq.clear();
    for (const r of rows) {
      const listeners = taskListeners.get(r.event.taskId);
      if (cluster && listeners) taskSeen.set(r.event.taskId, Math.max(taskSeen.get(r.event.taskId) ?? 0, r.event.seq));
      notify(listeners, r.event);
      // Cluster: a parent's events come from several instances; all reach its readers through the
      // announcements, in commit order (which is parent-seq order), this instance's too.
      if (!cluster) notify(parentListeners.get(r.parent), r.event);
    }
  }

  /** Hands `events` (read back from the table) to the listeners of a task or a parent not yet given them. */
  function deliver(events: StoredEvent[], seen: Map<string, number>, key: string, listeners: Set<EventListener> | undefined, seqOf: (e: StoredEvent) => number) {
    for (const e of events) {
      if (seqOf(e) <= (seen.get(key) ?? 0)) continue;
      seen.set(key, seqOf(e));
      notify(listeners, e);
    }
  }

  let remoteChain: Promise<void> = Promise.resolve();
  /**
   * Cluster: an announcement of committed events. Readers here of that task (written by another
   * instance) or of that parent get them from the table, in order, one announcement after the other;
   * what a lost notification skipped is read too (from the last seq handed over).
   */
  function announced(payload: string): void {
    let list: Announcement[];
    try {
      list = JSON.parse(payload) as Announcement[];
    } catch {
      return;
    }
    if (!Array.isArray(list)) return;
    remoteChain = remoteChain
      .then(async () => {
        for (const a of list) {
          const task = taskListeners.get(a.t);
          if (task && a.i !== cluster?.instanceId) {
            const from = Math.min(taskSeen.get(a.t) ?? a.s[0] - 1, a.s[0] - 1);
            deliver(await log.read(a.t, from, a.s[1] - from), taskSeen, a.t, task, (e) => e.seq);
          }
          const parent = parentListeners.get(a.k);
          if (parent) {
            const from = Math.min(parentSeen.get(a.k) ?? a.p[0] - 1, a.p[0] - 1);
            deliver(await readParentKey(a.k, from, a.p[1] - from), parentSeen, a.k, parent, (e) => e.parentSeq ?? 0);
          }
        }
      })
      .catch(() => {
        // The database is unreachable: the readers catch up from the table when they reconnect.
      });
  }

  /** Cluster: the listening connection was lost and is back; every reader here catches up from the table. */
  function caughtUp(): void {
    remoteChain = remoteChain.then(async () => {
      for (const [taskId, listeners] of taskListeners) {
        deliver(await log.read(taskId, taskSeen.get(taskId) ?? 0), taskSeen, taskId, listeners, (e) => e.seq);
      }
      for (const [key, listeners] of parentListeners) {
        deliver(await readParentKey(key, parentSeen.get(key) ?? 0), parentSeen, key, listeners, (e) => e.parentSeq ?? 0);
      }
    }).catch(() => undefined);
  }

  async function readParentKey(key: string, after: number, limit = 10_000): Promise<StoredEvent[]> {
    const rows = await sql.rows(
      'SELECT task_id, seq, type, at, data, parent_seq FROM task_events WHERE parent_key = ? AND parent_seq > ? ORDER BY parent_seq LIMIT ?',
      [key, after, limit],
    );
    return rows.map(storedOf);
  }

  /**
   * Writes `rows` and whatever `body` writes in one transaction, then publishes the events in
   * order. If it throws, nothing was written, the numbers are given back and the error goes on.
   */
  async function commit<R>(rows: Pending[], body?: (tx: SqlClient, append: Append) => Promise<R>): Promise<R> {
    const undo = [new Map<string, number | undefined>(), new Map<string, number | undefined>()];
    let written: Numbered[] = [];
    let hooked = false;
    try {
      const once = () =>
        sql.transaction(async (tx) => {
          const first = await writeRows(tx, rows, undo);
          [written, hooked] = [first.written, first.hooked];
          if (!body) return undefined as R;
          const mine: Pending[] = [];
          const answer = await body(tx, (task, type, data) => mine.push(pendingOf(task, type, data)));
          const late = await writeRows(tx, mine, undo);
          [written, hooked] = [written.concat(late.written), hooked || late.hooked];
          return answer;
        });
      let result: R;
      for (let attempt = 1; ; attempt++) {
        try {
          result = await once();
          break;
        } catch (err) {
          if (!isConflict(err) || attempt >= MAX_CONFLICT_RETRIES) throw err;
          restore(undo);
        }
      }
      publish(written);
      if (hooked) opts.onCommit?.();
      return result;
    } catch (err) {
      restore(undo);
      throw err;
    }
  }

  function pendingOf<T extends EventType>(task: EventTask, type: T, data: EventData[T]): Pending {
    return { task: { id: task.id, tenant: task.tenant, parentTaskId: task.parentTaskId }, type, at: now(), dataJson: JSON.stringify(data) };
  }

  function batchFor(taskId: string): Pending[] {
    if (open && !open.sealed.has(taskId)) return open.rows;
    const batch = { rows: [] as Pending[], sealed: new Set<string>() };
    open = batch;
    lastBatch = storage.write(async () => {
      // A turn of the event loop first: the events appended in this tick go in as well.
      await new Promise((resolve) => setImmediate(resolve));
      if (open === batch) open = null;
      await commit(batch.rows);
    });
    // A write that is not a storage fault failed: the events are lost, as the task's own writes will be.
    lastBatch.catch(() => undefined);
    return batch.rows;
  }

  /** The task's (every task's, without one) later events go after the writes asked for from now on. */
  function seal(taskId?: string): void {
    if (!open) return;
    if (taskId === undefined) open = null;
    else open.sealed.add(taskId);
  }

  /** Seals and resolves once everything appended so far is written and published. */
  function flush(taskId?: string): Promise<void> {
    seal(taskId);
    return lastBatch;
  }

  const log = {
    /** Appends one event; it is written with the next group commit, then handed to listeners. */
    append<T extends EventType>(task: EventTask, type: T, data: EventData[T]): void {
      batchFor(task.id).push(pendingOf(task, type, data));
    },

    /**
     * Runs `body`, a write of task `taskId`, in one transaction with the events it appends (numbered and written in order),
     * so that an event and the state it reports commit together or not at all; the body writes
     * through `tx`. Listeners hear of them after the commit. It is queued after the writes asked
     * for before it (the events appended before it included, whether or not the body fails), with
     * the storage guard's waiting and retries.
     */
    transaction<R>(taskId: string, body: (tx: SqlClient, append: Append) => Promise<R>): Promise<R> {
      seal(taskId);
      return storage.write(() => commit([], body));
    },

    /**
     * Resolves once everything appended so far is written and published; with a task, that task's
     * next events are written after whatever write it asks for next (its usage after its events).
     */
    flush,

    /** Stored events of a task with `seq > after`, in order. */
    async read(taskId: string, after = 0, limit = 10_000): Promise<StoredEvent[]> {
      const rows = await sql.rows(
        'SELECT task_id, seq, type, at, data, parent_seq FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?',
        [taskId, after, limit],
      );
      return rows.map(storedOf);
    },

    /** Stored events of every task of a parent with `parentSeq > after`, in the order they were written. */
    readParent(key: ParentKey, after = 0, limit = 10_000): Promise<StoredEvent[]> {
      return readParentKey(parentKey(key), after, limit);
    },

    announced,
    caughtUp,

    /** When the task's last stored event was written (null without events). */
    async lastAt(taskId: string): Promise<number | null> {
      const value = (await sql.rows('SELECT max(at) FROM task_events WHERE task_id = ?', [taskId]))[0]?.[0];
      return value === null || value === undefined ? null : Number(value);
    },

    /** The seq of the task's last stored event (0 without events). */
    async lastSeq(taskId: string): Promise<number> {
      return Number((await sql.rows('SELECT max(seq) FROM task_events WHERE task_id = ?', [taskId]))[0]?.[0] ?? 0);
    },

    subscribe(taskId: string, listener: EventListener): () => void {
      return addListener(taskListeners, taskId, listener, () => taskSeen.delete(taskId));
    },

    subscribeParent(key: ParentKey, listener: EventListener): () => void {
      const k = parentKey(key);
      return addListener(parentListeners, k, listener, () => parentSeen.delete(k));
    },

    /** Live readers of a task (for metrics and tests). */
    listenerCount(taskId: string): number {
      return taskListeners.get(taskId)?.size ?? 0;
    },
  };
  return log;
}

function storedOf(r: unknown[]): StoredEvent {
  const [taskId, seq, type, at, data, parentSeq] = r as [string, number, string, number, string, number | null];
  return {
    taskId,
    seq: Number(seq),
    type: type as EventType,
    parentSeq: parentSeq === null ? undefined : Number(parentSeq),
    json: envelope(Number(seq), type, taskId, Number(at), data, parentSeq === null ? null : Number(parentSeq)),
  };
}

export type EventLog = ReturnType<typeof createEventLog>;

function addListener(map: Map<string, Set<EventListener>>, key: string, listener: EventListener, onLast: () => void): () => void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && map.get(key) === set) {
      map.delete(key);
      onLast();
    }
  };
}

function envelope(seq: number, type: string, taskId: string, at: number, dataJson: string, parentSeq?: number | null): string {
  const cursor = parentSeq ? `,"parentSeq":${parentSeq}` : '';
  return `{"seq":${seq},"type":${JSON.stringify(type)},"taskId":${JSON.stringify(taskId)}${cursor},"at":"${iso(at)}","data":${dataJson}}`;
}
