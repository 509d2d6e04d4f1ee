import type { SqlClient } from './sql-client.ts';

/** The columns every read selects, in the order of an `EventTuple`. */
const EVENT_COLUMNS = 'task_id, seq, type, at, data, parent_seq';
/** A `task_events` row as read, in an array (the replays read thousands): its data is JSON. */
export type EventTuple = [taskId: string, seq: number, type: string, at: number, data: string, parentSeq: number | null];

/** Events per INSERT statement (7 parameters each: within SQLite's and PostgreSQL's limits). */
const INSERT_CHUNK = 500;
const insertOf = (n: number) =>
  `INSERT INTO task_events (task_id, seq, type, at, data, parent_key, parent_seq) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`;

/** An event to store, numbered. */
export interface EventInsert {
  taskId: string;
  seq: number;
  type: string;
  at: number;
  dataJson: string;
  parentKey: string;
  parentSeq?: number;
}

/** What `append` is given: the batch's events, column by column, in order. */
export interface EventAppend {
  taskIds: string[];
  types: string[];
  ats: number[];
  dataJsons: string[];
  parentKeys: string[];
  instanceId: string;
  channel: string;
  owned: string | null;
}

/**
 * Cluster: a batch of events numbered, filtered and written by the database in one call,
 * `subagentd_append_events` (migrations-pg/0011): the parents' locks, then, with a snapshot that
 * sees every commit made under them, each task's next seqs and each parent's next parent seqs in
 * the batch's order; the events of tasks another instance took over from this one dropped (the
 * stream goes on from its new owner only); the commit announced on the events channel (one
 * notification per 6,000 bytes of announcements, in order, each a JSON array of
 * `{ i, t, k, s: [first, last], p: [first, last] }` per task: events/event-announcer.ts); and, for a
 * transaction of task `owned`, the whole transaction refused unless this instance may still write
 * it (it owns it, or nobody does). Answers `ord` (1-based in the batch), seq, parent seq.
 */
const APPEND_EVENTS = `SELECT ord, seq, parent_seq FROM subagentd_append_events(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]),
  CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))`;

const maxOf = async (sql: SqlClient, statement: string, key: string): Promise<number> => Number((await sql.rows(statement, [key]))[0]?.[0] ?? 0);

/** The `task_events` table: reads by task and by parent, the last numbers, and the writes of both engines. */
export function createEventStore(sql: SqlClient) {
  return {
    /** A task's events with `seq > after`, in order. */
    async byTask(taskId: string, after: number, limit: number): Promise<EventTuple[]> {
      return (await sql.rows(`SELECT ${EVENT_COLUMNS} FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`, [
        taskId,
        after,
        limit,
      ])) as EventTuple[];
    },
    /** A parent's events (by its key) with `parent_seq > after`, in the order they were written. */
    async byParent(key: string, after: number, limit: number): Promise<EventTuple[]> {
      return (await sql.rows(`SELECT ${EVENT_COLUMNS} FROM task_events WHERE parent_key = ? AND parent_seq > ? ORDER BY parent_seq LIMIT ?`, [
        key,
        after,
        limit,
      ])) as EventTuple[];
    },
    /** When the task's last event was written (null without events). */
    lastAt: async (taskId: string): Promise<number | null> => {
      const value = (await sql.rows('SELECT max(at) FROM task_events WHERE task_id = ?', [taskId]))[0]?.[0];
      return value === null || value === undefined ? null : Number(value);
    },
    /** The seq of the task's last event (0 without events). */
    lastSeq: (taskId: string): Promise<number> => maxOf(sql, 'SELECT max(seq) FROM task_events WHERE task_id = ?', taskId),
    /** The parent seq of the parent's last event (0 without events). */
    lastParentSeq: (key: string): Promise<number> => maxOf(sql, 'SELECT max(parent_seq) FROM task_events WHERE parent_key = ?', key),

    /** Sends the INSERTs of `rows` in the transaction without waiting: one that fails fails the commit. */
    send(rows: EventInsert[]): void {
      // One statement per INSERT_CHUNK events (a group commit holds hundreds of text deltas).
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        sql.send(
          insertOf(chunk.length),
          chunk.flatMap((r) => [r.taskId, r.seq, r.type, r.at, r.dataJson, r.parentKey, r.parentSeq]),
        );
      }
    },
    /** Cluster: the batch numbered and written by the database, sent without waiting (the answer comes after the commit). */
    append(a: EventAppend): Promise<Array<{ ord: string; seq: string; parent_seq: string }>> {
      return sql.defer<{ ord: string; seq: string; parent_seq: string }>(APPEND_EVENTS, [
        a.taskIds,
        a.types,
        a.ats,
        a.dataJsons,
        a.parentKeys,
        a.instanceId,
        a.channel,
        a.owned,
      ]);
    },
  };
}

export type EventStore = ReturnType<typeof createEventStore>;
