import type { SqlClient } from '../store/sql-client.ts';
import { isConflict, isTakenOver } from '../store/sql-errors.ts';
import { storageFaultOf, type StorageGuard } from '../store/storage-guard.ts';
import { TaskTakenOver } from '../store/task-store.ts';
import { createAnnouncementFollower } from './event-announcer.ts';
import { createListeners, type EventListener } from './event-listeners.ts';
import { createNumbering, newUndo } from './event-numbering.ts';
import { createEventReader } from './event-reader.ts';
import { parentKey, pendingOf, type EventTask, type Numbered, type ParentKey, type Pending } from './event-rows.ts';
import { createEventWriter, type EventOutbox } from './event-writer.ts';
import type { EventData, EventType } from './event-types.ts';

export type { EventListener } from './event-listeners.ts';
export type { EventTask, ParentKey } from './event-rows.ts';
export type { EventOutbox, WrittenEvent } from './event-writer.ts';

export interface EventLogOptions {
  now?: () => number;
  /** The write queue every write of the log goes through, in order with the other writes. */
  storage: StorageGuard;
  /** What each transaction that stores events writes beside them (the webhook outbox: event-writer.ts). */
  outbox?: EventOutbox;
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
 * writes keep their order. The events of a task with no write of its own waiting in the queue go
 * in a fast batch, queued ahead of the other tasks' waiting writes: under a burst of step ends a
 * live answer's text is not held behind a thousand of them. A task with a write waiting keeps its
 * events after it.
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
  const writer = createEventWriter({ numbering, cluster, outbox: opts.outbox ?? null });
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
  let open: { rows: Pending[]; sealed: Set<string>; tasks: Set<string> } | null = null;
  /** The group commit of the last batch in order, or of the last write `flush` asked for (what `flush` waits for). */
  let lastBatch: Promise<void> = Promise.resolve();
  /**
   * The open fast batch: the events of tasks with no write of theirs waiting in the queue (a
   * streaming answer's text, most of the time). Its group commit goes ahead of the writes waiting
   * in order (the storage guard's `first`), so that under a burst of step ends a live stream's
   * events do not wait behind a thousand other tasks' writes. A task's order holds: while a write
   * of its own waits (`inOrder`), its events go in the batch in order, after that write.
   */
  let fast: { rows: Pending[]; sealed: Set<string> } | null = null;
  /** The group commit of the last fast batch (what `flush` waits for too). */
  let lastFast: Promise<void> = Promise.resolve();
  /** Per task, its writes waiting in the queue in order: its transactions, held writes and batches in order. */
  const inOrder = new Map<string, number>();
  /** Per task, the last of its transactions and held writes queued and not yet settled (what `flush` of it waits for too). */
  const lastOwn = new Map<string, Promise<unknown>>();
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
          if (!body) return { answer: undefined as R, ...(await writer.write(tx, rows, undo, null)) };
          // The events are written after the body, those given first: one round of numbering
          // (on PostgreSQL its locks come after the body's, in every transaction alike).
          const mine = [...rows];
          const answer = await body(tx, (task, type, data) => mine.push(pendingOf(task, type, data, now())));
          return { answer, ...(await writer.write(tx, mine, undo, owned)) };
        });
      for (let attempt = 1; ; attempt++) {
        try {
          const { answer, written, hooked } = await once();
          publish(await written);
          if (hooked) opts.outbox?.committed();
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

  /** `taskId` has one more write waiting in order. */
  const waits = (taskId: string) => inOrder.set(taskId, (inOrder.get(taskId) ?? 0) + 1);
  /** One of the writes of `taskId` waiting in order is done. */
  const done = (taskId: string) => {
    const n = (inOrder.get(taskId) ?? 1) - 1;
    if (n > 0) inOrder.set(taskId, n);
    else inOrder.delete(taskId);
  };

  /** Counts `write` among the writes of `taskId` waiting in order until it settles; answers it. */
  function waitsInOrder<T>(taskId: string, write: Promise<T>): Promise<T> {
    waits(taskId);
    lastOwn.set(taskId, write);
    const settled = () => {
      done(taskId);
      if (lastOwn.get(taskId) === write) lastOwn.delete(taskId);
    };
    write.then(settled, settled);
    return write;
  }

  /**
   * Queues the group commit of a batch's `rows`: when the queue reaches it, a turn of the event
   * loop first (the events appended in this tick go in as well), then `close` (the batch takes no
   * more), then one transaction of the rows left (every one may have gone into a task's own
   * transaction meanwhile: `transaction`). `first`: ahead of the writes waiting in order.
   */
  function groupCommit(rows: Pending[], close: () => void, opts: { first?: boolean } = {}): Promise<void> {
    const write = storage.write(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      close();
      if (rows.length > 0) await commit(rows);
    }, opts);
    // A write that is not a storage fault failed: the events are lost, as the task's own writes will be.
    write.catch(() => undefined);
    return write;
  }

  /** The rows of the batch in order `taskId`'s next event goes in (after the writes asked for before it). */
  function batchFor(taskId: string): Pending[] {
    const current = open && !open.sealed.has(taskId) ? open : null;
    const batch = current ?? { rows: [] as Pending[], sealed: new Set<string>(), tasks: new Set<string>() };
    if (!current) {
      open = batch;
      lastBatch = groupCommit(batch.rows, () => {
        if (open === batch) open = null;
      });
      // Its tasks' later events wait for it: each is counted as it joins, until the commit settles.
      const settled = () => batch.tasks.forEach(done);
      lastBatch.then(settled, settled);
    }
    if (!batch.tasks.has(taskId)) {
      batch.tasks.add(taskId);
      waits(taskId);
    }
    return batch.rows;
  }

  /** The rows of the open fast batch (for a task with no write waiting in order). */
  function fastBatch(): Pending[] {
    if (fast) return fast.rows;
    const batch = { rows: [] as Pending[], sealed: new Set<string>() };
    fast = batch;
    lastFast = groupCommit(
      batch.rows,
      () => {
        if (fast === batch) fast = null;
      },
      { first: true },
    );
    return batch.rows;
  }

  /** Moves the events of `taskId` out of `rows` (in their order), and answers them. */
  function takeFrom(rows: Pending[], taskId: string): Pending[] {
    const mine: Pending[] = [];
    const others: Pending[] = [];
    for (const r of rows) (r.task.id === taskId ? mine : others).push(r);
    if (mine.length > 0) rows.splice(0, rows.length, ...others);
    return mine;
  }

  /**
   * Takes the events of `taskId` not yet being written, for its next transaction: those of the
   * fast batch while nothing else waits in the queue (the transaction runs next anyway: one commit
   * instead of two; under load they go first on their own), then those of the open batch in
   * order; from neither once a `flush` waits for it (sealed).
   */
  function take(taskId: string): Pending[] {
    const early = fast && !fast.sealed.has(taskId) && storage.queued <= 1 ? takeFrom(fast.rows, taskId) : [];
    const late = open && !open.sealed.has(taskId) ? takeFrom(open.rows, taskId) : [];
    return early.length === 0 ? late : [...early, ...late];
  }

  /**
   * The events of `taskId` (of every task, without one) in the open batches stay in them, for a
   * `flush` waiting for those; its later events go after the writes asked for from now on.
   */
  function seal(taskId?: string): void {
    if (taskId === undefined) {
      open = null;
      fast = null;
      return;
    }
    open?.sealed.add(taskId);
    fast?.sealed.add(taskId);
  }

  /**
   * Seals and resolves once everything appended so far is written and published: the open batches,
   * and the task's own writes queued before (every task's, without one), which may have taken its
   * events along (`take`). Whether those writes failed is theirs to answer, not the flush's.
   */
  function flush(taskId?: string): Promise<void> {
    // One task's (a step's release asks for one among a thousand running), or every task's.
    const ids = taskId !== undefined ? [taskId] : new Set([...holding.keys(), ...heldWrites.keys()]);
    for (const id of ids) {
      if (!holding.has(id) && !heldWrites.has(id)) continue;
      const rows = holding.get(id) ?? [];
      holding.delete(id);
      const held = afterHeld(id, async () => undefined);
      // A task another instance took over: its held writes are rightly not written.
      lastBatch = waitsInOrder(
        id,
        storage.write(() => commit(rows, held.body, held.owned ? id : null).catch(unlessTakenOver)),
      );
    }
    seal(taskId);
    const own = taskId !== undefined ? [lastOwn.get(taskId)] : [...lastOwn.values()];
    const settled = own.map((write) => write?.catch(() => undefined));
    return Promise.all([lastBatch, lastFast, ...settled]).then(() => undefined);
  }

  return {
    /** Appends one event; it is written with the next group commit, then handed to listeners. */
    append<T extends EventType>(task: EventTask, type: T, data: EventData[T]): void {
      (holding.get(task.id) ?? (inOrder.has(task.id) ? batchFor(task.id) : fastBatch())).push(pendingOf(task, type, data, now()));
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
      return waitsInOrder(
        taskId,
        storage.write(async () => {
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
        }),
      );
    },

    /**
     * Resolves once everything appended so far is written and published; with a task, that task's
     * next events are written after whatever write it asks for next (its usage after its events).
     */
    flush,

    /**
     * Reads of the stored events (event-reader.ts): a task's or a parent's at once (`read`,
     * `readParent`) or a page at a time (`replay`, `replayParent`, what a stream replays before its
     * live events), and the last `seq` and time of a task.
     */
    ...reader,

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
