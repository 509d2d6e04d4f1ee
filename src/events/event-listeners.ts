import type { StoredEvent } from './event-types.ts';

export type EventListener = (event: StoredEvent) => void;

/** Live readers by key (a task id, or a parent key), each told of an event once it is stored. */
export function createListeners() {
  const map = new Map<string, Set<EventListener>>();
  return {
    /** Adds `listener` to `key`; the answer removes it (`onLast` runs once `key` has none left). */
    add(key: string, listener: EventListener, onLast: () => void): () => void {
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
    },
    has: (key: string) => map.has(key),
    keys: () => [...map.keys()],
    count: (key: string) => map.get(key)?.size ?? 0,
    /** Tells the listeners of `key`; a reader's failure never reaches the task that produced the event. */
    notify(key: string, event: StoredEvent): void {
      for (const listener of map.get(key) ?? []) {
        try {
          listener(event);
        } catch {
          // The reader's own problem.
        }
      }
    },
  };
}

export type Listeners = ReturnType<typeof createListeners>;
