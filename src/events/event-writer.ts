import { CHANNELS } from '../store/cluster-store.ts';
import { createEventStore } from '../store/event-store.ts';
import type { SqlClient } from '../store/sql-client.ts';
import type { createNumbering, NumberUndo } from './event-numbering.ts';
import { envelope, parentKey, type Numbered, type Pending } from './event-rows.ts';
import { TERMINAL_EVENT, type EventType } from './event-types.ts';

/** An event as the outbox sees it, inside the transaction that stores it. */
export interface WrittenEvent {
  taskId: string;
  tenant: string;
  type: EventType;
  at: number;
}

/**
 * What a transaction that stores events writes beside them, and who is told once it commits: the
 * webhook outbox (webhooks/webhooks.ts), whose rows exist exactly when their events do.
 */
export interface EventOutbox {
  /** The event types it takes: a transaction with none of them does not call `write`. */
  types: readonly EventType[];
  /** Inside the transaction, after the events: whether it wrote anything. */
  write(tx: SqlClient, events: WrittenEvent[]): Promise<boolean>;
  /** After the commit of a transaction in which `write` wrote something (the dispatcher is woken). */
  committed(): void;
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

/**
 * Writes a transaction's events: numbers them (event-numbering.ts), inserts them, and has the
 * outbox write its rows for them, in that order, inside the transaction.
 */
export function createEventWriter(opts: {
  numbering: ReturnType<typeof createNumbering>;
  /** PostgreSQL: numbered, written and announced by the database in one statement. */
  cluster: { instanceId: string } | null;
  outbox: EventOutbox | null;
}) {
  const { numbering, cluster, outbox } = opts;
  const takes = (rows: Pending[]) => outbox !== null && rows.some((r) => outbox.types.includes(r.type));

  /** Has the outbox write its rows for `rows`, when it takes any of them; whether it wrote. */
  async function toOutbox(tx: SqlClient, rows: Pending[]): Promise<boolean> {
    if (!outbox || !takes(rows)) return false;
    return outbox.write(
      tx,
      rows.map((r) => ({ taskId: r.task.id, tenant: r.task.tenant, type: r.type, at: r.at })),
    );
  }

  return {
    /**
     * Numbers and inserts `pending` in `tx` (and announces them, on a cluster). Answers what it
     * wrote (on a cluster, read after the commit unless the outbox needed it), and whether the
     * outbox wrote something of its own, which it is told once the transaction commits.
     */
    async write(
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
        if (!takes(pending)) return { written, hooked: false };
        // The outbox sees only events stored. A transaction of one task's own (`owned`) stores
        // all of them or fails whole: the outbox's reads go out right behind the numbering.
        // Otherwise the events of a task taken over are dropped, and the outbox waits for the answer.
        if (owned !== null && pending.every((r) => r.task.id === owned)) return { written, hooked: await toOutbox(tx, pending) };
        return {
          written,
          hooked: await toOutbox(
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
      return { written: out, hooked: await toOutbox(tx, pending) };
    },
  };
}
