import { createEventStore } from '../store/event-store.ts';
import type { SqlClient } from '../store/sql-client.ts';
import { isConflict, isTakenOver } from '../store/sql-errors.ts';
import { storageFaultOf, type StorageGuard } from '../store/storage-guard.ts';
import { TaskTakenOver } from '../store/task-store.ts';
import { createAnnouncementFollower } from './event-announcer.ts';
import { CHANNELS } from '../store/cluster-store.ts';
import { createListeners, type EventListener } from './event-listeners.ts';
import { createNumbering, newUndo, type NumberUndo } from './event-numbering.ts';
import { createEventReader } from './event-reader.ts';
import { envelope, parentKey, type EventTask, type Numbered, type ParentKey, type Pending } from './event-rows.ts';
import { TERMINAL_EVENT, type EventData, type EventType } from './event-types.ts';

export type { EventListener } from './event-listeners.ts';
export type { EventTask, ParentKey } from './event-rows.ts';

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
  /** The event types `onWrite` acts on (default: all): a transaction with none of them does not call it. */
  onWriteTypes?: readonly EventType[];
  onCommit?: () => void;
  /**
   * PostgreSQL, where several instances write events: numbers are taken under a per-parent lock
   * (no cache), and every commit is announced on `subagentd_events` for the readers on the others.
   */
  cluster?: { instanceId: string };
}

const MAX_CONFLICT_RETRIES = 5;
const unlessTakenOver = (err: unknown) => {
  if (!(err instanceof TaskTakenOver)) throw err;
};

/** Appends events; inside `transaction`, they commit with the body's writes. */
export type Append = <T extends EventType>(task: EventTask, type: T, data: EventData[T]) => void;

/**
 * The per-task event log: every event gets the next `seq` of its task (and of its parent:
 * event-numbering.ts), is written to the database, and only then is handed to live listeners.
 * Writes are group-committed: the events appended until the write queue reaches their batch (at
 * least one turn of the event loop; under load, every task's events of that while) go into one
 * transaction (at thousands of events a second one commit each would cost more than everything
 * else); an event and the state it reports commit together through `transaction`, which takes
 * along the task's events still waiting in the open batch (a step's events and its usage, say: one
 * commit, not two). A batch takes no event appended after a later write was asked for, so a task's
 * writes keep their order.
 * Events are numbered when they are written, in the queue's order, so numbers follow the order of
 * the writes. Because an event is published only after it is stored, a reader that subscribes and
 * then replays from the store (event-reader.ts) sees every event exactly once, in order, with no
 * gap. On PostgreSQL, commits are announced to the other instances (event-announcer.ts).
 */
export function createEventLog(sql: SqlClient, opts: EventLogOptions) {
  const now = opts.now ?? Date.now;
  const storage = opts.storage;
  const cluster = opts.cluster ?? null;
  const numbering = createNumbering(cluster);
  const reader = createEventReader(sql);
  const taskListeners = createListeners();
  const parentListeners = createListeners();
  const follower = cluster ? createAnnouncementFollower({ instanceId: cluster.instanceId, reader, tasks: taskListeners, parents: parentListeners }) : null;
  /**
   * The open batch: its group commit is queued at its first event and takes, when it runs, every
   * event appended until then, except those of a task that asked for another write meanwhile
   * (`sealed`: that task's next events go in a batch queued after that write). Under load one
   * commit carries the events of many tasks.
   */
  let open: { rows: Pending[]; sealed: Set<string> } | null = null;
  /** The group commit of the last batch (what `flush` waits for). */
  let lastBatch: Promise<void> = Promise.resolve();
  /** Events of tasks that promised a write of their own soon (`hold`): they go in with it. */
  const holding = new Map<string, Pending[]>();
  /**
   * Writes a task left for its next transaction (`holdWrite`), first in it; `owned`: they are
   * written only while this instance may write the task (see `transaction`).
   */
  const heldWrites = new Map<string, { writes: Array<(tx: SqlClient, append: Append) => Promise<void>>; owned: boolean }>();

  /** `body` after the writes `taskId` held for its next transaction (taken out of the hold), and whether those are owned. */
  function afterHeld<R>(
    taskId: string,
    body: (tx: SqlClient, append: Append) => Promise<R>,
  ): { body: (tx: SqlClient, append: Append) => Promise<R>; owned: boolean } {
    const held = heldWrites.get(taskId);
    if (!held) return { body, owned: false };
    heldWrites.delete(taskId);
    return {
      body: async (tx, append) => {
        for (const write of held.writes) await write(tx, append);
        return body(tx, append);
      },
      owned: held.owned,
    };
  }

  /** An event as written, with its numbers. */
  function numberedOf(r: Pending, seq: number, parentSeq: number): Numbered {
    return {
      event: { taskId: r.task.id, seq, type: r.type, json: envelope(seq, r.type, r.task.id, r.at, r.dataJson, parentSeq), parentSeq },
      parent: parentKey(r.task),
      at: r.at,
      dataJson: r.dataJson,
    };
  }

  /** Runs the write hook (`onWrite`) on events written in `tx`, when it acts on any of them. */
  async function hook(tx: SqlClient, rows: Pending[]): Promise<boolean> {
    if (!opts.onWrite || !rows.some((r) => hooked(r.type))) return false;
    return opts.onWrite(
      tx,
      rows.map((r) => ({ taskId: r.task.id, tenant: r.task.tenant, type: r.type, at: r.at })),
    );
  }
  const hooked = (type: EventType) => !opts.onWriteTypes || opts.onWriteTypes.includes(type);

  /**
   * Numbers and inserts `rows` in `tx` (and announces them, on a cluster). Answers what it wrote
   * (on a cluster, read after the commit unless the write hook needed it), and whether `onWrite`
   * wrote something of its own (the webhook outbox), which `onCommit` is told once the
   * transaction commits.
   */
  async function writeRows(
    tx: SqlClient,
    pending: Pending[],
    undo: NumberUndo,
    owned: string | null,
  ): Promise<{ written: Numbered[] | Promise<Numbered[]>; hooked: boolean }> {
    if (cluster) {
      // Numbered, written and announced by the database in one statement, whose answer waits for
      // the commit (one round trip for the whole transaction)...
      const numbered = numbering.insert(tx, pending, owned, CHANNELS.events);
      const written = numbered.then((rows) => rows.map((r) => numberedOf(r.row, r.seq, r.parentSeq)));
      written.catch(() => {});
      if (!opts.onWrite || !pending.some((r) => hooked(r.type))) return { written, hooked: false };
      // The write hook sees only events stored. A transaction of one task's own (`owned`) stores
      // all of them or fails whole: the hook's reads go out right behind the numbering. Otherwise
      // the events of a task taken over are dropped, and the hook waits for the answer.
      if (owned !== null && pending.every((r) => r.task.id === owned)) return { written, hooked: await hook(tx, pending) };
      return {
        written,
        hooked: await hook(
          tx,
          (await numbered).map((r) => r.row),
        ),
      };
    }
    const out: Numbered[] = [];
    for (const r of pending) {
      const { seq, parentSeq } = await numbering.next(tx, r, r.type === TERMINAL_EVENT, undo);
      out.push(numberedOf(r, seq, parentSeq));
    }
    createEventStore(tx).send(
      out.map((r) => ({
        taskId: r.event.taskId,
        seq: r.event.seq,
        type: r.event.type,
        at: r.at,
        dataJson: r.dataJson,
        parentKey: r.parent,
        parentSeq: r.event.parentSeq,
      })),
    );
    return { written: out, hooked: await hook(tx, pending) };
  }

  function publish(rows: Numbered[]) {
    numbering.trim();
    for (const r of rows) {
      follower?.published(r.event.taskId, r.event.seq);
      taskListeners.notify(r.event.taskId, r.event);
      // Cluster: a parent's events come from several instances; all reach its readers through the
      // announcements, in commit order (which is parent-seq order), this instance's too.
      if (!cluster) parentListeners.notify(r.parent, r.event);
    }
  }

  /**
   * Writes `rows` and whatever `body` writes in one transaction, then publishes the events in
   * order. If it throws, nothing was written, the numbers are given back and the error goes on.
   */
  async function commit<R>(rows: Pending[], body?: (tx: SqlClient, append: Append) => Promise<R>, owned: string | null = null): Promise<R> {
    const undo = newUndo();
    try {
      const once = () =>
        sql.transaction(async (tx) => {
          if (!body) return { answer: undefined as R, ...(await writeRows(tx, rows, undo, null)) };
          // The events are written after the body, those given first: one round of numbering
          // (on PostgreSQL its locks come after the body's, in every transaction alike).
          const mine = [...rows];
          const answer = await body(tx, (task, type, data) => mine.push(pendingOf(task, type, data)));
          return { answer, ...(await writeRows(tx, mine, undo, owned)) };
        });
      for (let attempt = 1; ; attempt++) {
        try {
          const { answer, written, hooked } = await once();
          publish(await written);
          if (hooked) opts.onCommit?.();
          return answer;
        } catch (err) {
          // The database refused a write for a task another instance took over (event-numbering.ts).
          if (owned !== null && isTakenOver(err)) throw new TaskTakenOver(owned);
          if (!isConflict(err) || attempt >= MAX_CONFLICT_RETRIES) throw err;
          numbering.restore(undo);
        }
      }
    } catch (err) {
      numbering.restore(undo);
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
      // Every event of it may have gone into a task's own transaction meanwhile (`transaction`).
      if (batch.rows.length > 0) await commit(batch.rows);
    });
    // A write that is not a storage fault failed: the events are lost, as the task's own writes will be.
    lastBatch.catch(() => undefined);
    return batch.rows;
  }

  /** Takes the events of `taskId` out of the open batch, unless that batch is sealed for it. */
  function take(taskId: string): Pending[] {
    if (!open || open.sealed.has(taskId)) return [];
    const mine: Pending[] = [];
    const others: Pending[] = [];
    for (const r of open.rows) (r.task.id === taskId ? mine : others).push(r);
    if (mine.length > 0) open.rows.splice(0, open.rows.length, ...others);
    return mine;
  }

  /** The task's (every task's, without one) later events go after the writes asked for from now on. */
  function seal(taskId?: string): void {
    if (!open) return;
    if (taskId === undefined) open = null;
    else open.sealed.add(taskId);
  }

  /** Seals and resolves once everything appended so far is written and published. */
  function flush(taskId?: string): Promise<void> {
    // One task's (a step's release asks for one among a thousand running), or every task's.
    const ids = taskId !== undefined ? [taskId] : new Set([...holding.keys(), ...heldWrites.keys()]);
    for (const id of ids) {
      if (!holding.has(id) && !heldWrites.has(id)) continue;
      const rows = holding.get(id) ?? [];
      holding.delete(id);
      const held = afterHeld(id, async () => undefined);
      // A task another instance took over: its held writes are rightly not written.
      lastBatch = storage.write(() => commit(rows, held.body, held.owned ? id : null).catch(unlessTakenOver));
    }
    seal(taskId);
    return lastBatch;
  }

  return {
    /** Appends one event; it is written with the next group commit, then handed to listeners. */
    append<T extends EventType>(task: EventTask, type: T, data: EventData[T]): void {
      (holding.get(task.id) ?? batchFor(task.id)).push(pendingOf(task, type, data));
    },

    /**
     * The task's events not yet written, and those it appends from now on, wait for its next
     * `transaction` and commit in it, first (one commit instead of two: a step's last events and
     * its end). Whoever holds must run that transaction soon: until then they are not published.
     */
    hold(taskId: string): void {
      if (!holding.has(taskId)) holding.set(taskId, take(taskId));
    },

    /**
     * Like `hold`, with a write of the task's own (`owned`: see `transaction`) that runs first in
     * that transaction, the events it appends before the transaction's: one commit instead of two
     * (the last step's end and the task's). Whoever holds must run that transaction soon, or
     * `flush` the task.
     */
    holdWrite(taskId: string, write: (tx: SqlClient, append: Append) => Promise<void>, opts: { owned?: boolean } = {}): void {
      if (!holding.has(taskId)) holding.set(taskId, take(taskId));
      const held = heldWrites.get(taskId) ?? { writes: [], owned: false };
      held.writes.push(write);
      held.owned ||= opts.owned === true;
      heldWrites.set(taskId, held);
    },

    /** Are the task's events held for its next transaction (`hold`)? */
    held(taskId: string): boolean {
      return holding.has(taskId);
    },

    /**
     * Runs `body`, a write of task `taskId`, in one transaction with the events it appends (numbered and written in order),
     * so that an event and the state it reports commit together or not at all; the body writes
     * through `tx`. Listeners hear of them after the commit. It is queued after the writes asked
     * for before it (the events appended before it included, whether or not the body fails), with
     * the storage guard's waiting and retries. `owned` (a cluster): nothing is written unless this
     * instance may still write the task, which is read with the events' numbers (`TaskTakenOver`).
     */
    transaction<R>(taskId: string, given: (tx: SqlClient, append: Append) => Promise<R>, opts: { owned?: boolean } = {}): Promise<R> {
      // The writes the task held for it come first (`holdWrite`).
      const { body, owned: heldOwned } = afterHeld(taskId, given);
      const owned = opts.owned || heldOwned ? taskId : null;
      // The task's events still waiting in the open batch come along, first: one commit instead of
      // two, in the same order (the batch holds none of its events appended before a later write).
      let mine = holding.get(taskId) ?? take(taskId);
      holding.delete(taskId);
      seal(taskId);
      return storage.write(async () => {
        try {
          return await commit(mine, body, owned);
        } catch (err) {
          if (mine.length === 0 || storageFaultOf(err) !== null || err instanceof TaskTakenOver) throw err;
          // Not the storage (its faults are tried again, whole): then apart, in order, so that
          // neither fails for the other (usage is billed though an event was refused).
          await commit(mine).catch((e: unknown) => {
            if (storageFaultOf(e) !== null) throw e;
          });
          mine = [];
          return commit([], body, owned);
        }
      });
    },

    /**
     * Resolves once everything appended so far is written and published; with a task, that task's
     * next events are written after whatever write it asks for next (its usage after its events).
     */
    flush,

    /** Stored events of a task with `seq > after`, in order. */
    read: reader.read,
    /** Stored events of every task of a parent with `parentSeq > after`, in the order they were written. */
    readParent: reader.readParent,
    /** A task's stored events after `after`, a page at a time (what a stream replays before its live events). */
    replay: reader.replay,
    /** A parent's stored events after the cursor `after`, a page at a time. */
    replayParent: reader.replayParent,
    lastAt: reader.lastAt,
    lastSeq: reader.lastSeq,

    /** Cluster: an announcement of committed events (event-announcer.ts). */
    announced(payload: string): void {
      follower?.announced(payload);
    },

    /** Cluster: the listening connection was lost and is back; every reader here catches up from the table. */
    caughtUp(): void {
      follower?.caughtUp();
    },

    subscribe(taskId: string, listener: EventListener): () => void {
      return taskListeners.add(taskId, listener, () => follower?.forgetTask(taskId));
    },

    subscribeParent(key: ParentKey, listener: EventListener): () => void {
      const k = parentKey(key);
      return parentListeners.add(k, listener, () => follower?.forgetParent(k));
    },

    /** Live readers of a task (for metrics and tests). */
    listenerCount(taskId: string): number {
      return taskListeners.count(taskId);
    },
  };
}

export type EventLog = ReturnType<typeof createEventLog>;
