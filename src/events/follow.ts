import type { EventLog } from './event-log.ts';
import { TERMINAL_EVENT, type StreamMessage } from './event-types.ts';

export type TaskEventMessage = Exclude<StreamMessage, { type: 'heartbeat' }>;

/**
 * A task's events after `after` as an async iterator: the stored ones, then live ones, each once
 * and in order (the listener is attached before the store is read, and live events at or below
 * the last replayed seq are dropped). Ends after `task.finished`, when `signal` fires, or when the
 * consumer stops; the listener is removed then.
 */
export async function* followTask(events: EventLog, taskId: string, opts: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<TaskEventMessage> {
  const live: string[] = [];
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  const unsubscribe = events.subscribe(taskId, (event) => {
    live.push(event.json);
    poke();
  });
  opts.signal?.addEventListener('abort', poke, { once: true });
  try {
    let last = opts.after ?? 0;
    for await (const stored of events.replay(taskId, last)) {
      const message = JSON.parse(stored.json) as TaskEventMessage;
      last = message.seq;
      yield message;
      if (message.type === TERMINAL_EVENT) return;
    }
    for (;;) {
      while (live.length > 0) {
        const message = JSON.parse(live.shift()!) as TaskEventMessage;
        if (message.seq <= last) continue;
        last = message.seq;
        yield message;
        if (message.type === TERMINAL_EVENT) return;
      }
      if (opts.signal?.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    unsubscribe();
    opts.signal?.removeEventListener('abort', poke);
  }
}
