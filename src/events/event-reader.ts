import { createEventStore } from '../store/event-store.ts';
import type { SqlClient } from '../store/sql-client.ts';
import type { StoredEvent } from './event-types.ts';
import { parentKey, storedOf, type ParentKey } from './event-rows.ts';

/** Events read per query when a reader replays the store. */
export const REPLAY_PAGE = 500;

/** Reads of the stored events: a task's by `seq`, a parent's by `parentSeq`, and paged replays of either. */
export function createEventReader(sql: SqlClient) {
  const store = createEventStore(sql);
  /** Stored events of a task with `seq > after`, in order. */
  async function read(taskId: string, after = 0, limit = 10_000): Promise<StoredEvent[]> {
    return (await store.byTask(taskId, after, limit)).map(storedOf);
  }

  /** Stored events of every task of a parent (by its key, `<parentTaskId>@<tenant>`) with `parentSeq > after`, in the order they were written. */
  async function readParentKey(key: string, after = 0, limit = 10_000): Promise<StoredEvent[]> {
    return (await store.byParent(key, after, limit)).map(storedOf);
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

  return { read, readParent, readParentKey, replay, replayParent, lastAt: store.lastAt, lastSeq: store.lastSeq };
}

export type EventReader = ReturnType<typeof createEventReader>;
