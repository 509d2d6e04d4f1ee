import type { SqlClient } from '../store/sql-client.ts';
import type { StoredEvent } from './event-types.ts';
import { EVENT_COLUMNS, parentKey, storedOf, type ParentKey } from './event-rows.ts';

/** Events read per query when a reader replays the store. */
export const REPLAY_PAGE = 500;

/** Reads of the stored events: a task's by `seq`, a parent's by `parentSeq`, and paged replays of either. */
export function createEventReader(sql: SqlClient) {
  /** Stored events of a task with `seq > after`, in order. */
  async function read(taskId: string, after = 0, limit = 10_000): Promise<StoredEvent[]> {
    const rows = await sql.rows(`SELECT ${EVENT_COLUMNS} FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`, [taskId, after, limit]);
    return rows.map(storedOf);
  }

  /** Stored events of every task of a parent (by its key, `<parentTaskId>@<tenant>`) with `parentSeq > after`, in the order they were written. */
  async function readParentKey(key: string, after = 0, limit = 10_000): Promise<StoredEvent[]> {
    const rows = await sql.rows(`SELECT ${EVENT_COLUMNS} FROM task_events WHERE parent_key = ? AND parent_seq > ? ORDER BY parent_seq LIMIT ?`, [
      key,
      after,
      limit,
    ]);
    return rows.map(storedOf);
  }

  /** The same, by the parent's tenant and id. */
  function readParent(key: ParentKey, after = 0, limit = 10_000): Promise<StoredEvent[]> {
    return readParentKey(parentKey(key), after, limit);
  }

  /** A task's stored events after `after`, read a page at a time as the consumer advances. */
  async function* replay(taskId: string, after = 0): AsyncGenerator<StoredEvent> {
    for (let from = after; ;) {
      const page = await read(taskId, from, REPLAY_PAGE);
      yield* page;
      if (page.length < REPLAY_PAGE) return;
      from = page[page.length - 1].seq;
    }
  }

  /** A parent's stored events after the cursor `after`, a page at a time. */
  async function* replayParent(key: ParentKey, after = 0): AsyncGenerator<StoredEvent> {
    for (let from = after; ;) {
      const page = await readParent(key, from, REPLAY_PAGE);
      yield* page;
      if (page.length < REPLAY_PAGE) return;
      from = page[page.length - 1].parentSeq!;
    }
  }

  /** When the task's last stored event was written (null without events). */
  async function lastAt(taskId: string): Promise<number | null> {
    const value = (await sql.rows('SELECT max(at) FROM task_events WHERE task_id = ?', [taskId]))[0]?.[0];
    return value === null || value === undefined ? null : Number(value);
  }

  /** The seq of the task's last stored event (0 without events). */
  async function lastSeq(taskId: string): Promise<number> {
    return Number((await sql.rows('SELECT max(seq) FROM task_events WHERE task_id = ?', [taskId]))[0]?.[0] ?? 0);
  }

  return { read, readParent, readParentKey, replay, replayParent, lastAt, lastSeq };
}

export type EventReader = ReturnType<typeof createEventReader>;
