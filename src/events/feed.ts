import type { Progress } from '../shapes/task.ts';
import type { Heartbeat, StoredEvent } from './event-types.ts';
import { iso } from '../shapes/time.ts';

/**
 * Where a feed writes: a WebSocket (`socket-sink.ts`) or a server-sent-events response
 * (`sse-sink.ts`). The feed decides what to send and when; the sink only how.
 */
export interface FeedSink {
  readonly open: boolean;
  /** Bytes written and not yet handed to the network. */
  readonly buffered: number;
  event(event: StoredEvent): void;
  heartbeat(beat: Heartbeat): void;
  /** Ends the stream; `code` is a WebSocket close code (an SSE sink writes it as a comment). */
  close(code: number, reason: string): void;
  /** Runs `fn` once when the peer is gone (closed, errored, dropped). */
  onGone(fn: () => void): void;
}

export interface FeedOptions {
  sink: FeedSink;
  heartbeatMs: number;
  /** Past this many bytes waiting in the sink a live reader is too slow: closed with 1013. */
  maxBufferedBytes: number;
  /** Heartbeats name the stream's task (task streams) or are sent without one (parent streams). */
  taskId?: string;
  /** Close with 1000 right after sending `task.finished` (task streams). */
  closeOnFinish?: boolean;
  now?: () => number;
  /** A task stream's heartbeats also say what the task is doing now. */
  progress?: () => Promise<Progress | null> | Progress | null;
}

/**
 * Close codes: 1000 after `task.finished`, 1013 for a reader too far behind, 1012 when a live
 * event would skip a seq (its instance missed events of the task: lost its database or its
 * notifications, or the task moved); after either, the reader reconnects with `?after=` and gets
 * the stored events, gap-free.
 */
export const CLOSE_DONE = 1000;
export const CLOSE_SLOW_READER = 1013;
export const CLOSE_GAP = 1012;

/** Live events held back while a replay is being sent; more than this and the reader is dropped. */
const MAX_PENDING = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends stored events to one reader.
 * - Replay first, paced by the sink (a large history never floods memory), then live events;
 *   live events that arrive during the replay wait in a bounded queue. Events are de-duplicated per
 *   task by `seq`, so replay and live feed may overlap safely.
 * - A heartbeat goes out whenever nothing was sent for `heartbeatMs`.
 * - A live reader whose send buffer overflows is closed with 1013 rather than holding memory or
 *   slowing the task; the stored events let it catch up with `?after=`.
 */
export function createFeed(opts: FeedOptions) {
  const { sink } = opts;
  const now = opts.now ?? Date.now;
  const lastSent = new Map<string, number>();
  let lastSeq = 0;
  let closed = false;
  let replaying = false;
  const pending: StoredEvent[] = [];
  let heartbeat: NodeJS.Timeout | null = null;
  const cleanups: Array<() => void> = [];

  function armHeartbeat() {
    if (closed) return;
    if (heartbeat) heartbeat.refresh();
    else heartbeat = setTimeout(sendHeartbeat, opts.heartbeatMs);
  }

  function sendHeartbeat() {
    heartbeat = null;
    if (closed) return;
    void Promise.resolve(opts.progress?.())
      .catch(() => null)
      .then((progress) => {
        // The contract's heartbeat data carries the progress fields themselves, next to lastSeq, and
        // the interval, from which a reader sizes its idle timer (a fixed guess is wrong whenever
        // HEARTBEAT_MS is not the default).
        const data = { lastSeq, intervalMs: opts.heartbeatMs, ...(progress ?? undefined) };
        const beat: Heartbeat = { type: 'heartbeat', taskId: opts.taskId, at: iso(now()), data };
        if (writable()) sink.heartbeat(beat);
        armHeartbeat();
      });
  }

  function writable(): boolean {
    if (closed || !sink.open) return false;
    if (sink.buffered > opts.maxBufferedBytes) {
      close(CLOSE_SLOW_READER, 'reader too slow; reconnect with ?after=<last seq>');
      return false;
    }
    return true;
  }

  function sendOnce(event: StoredEvent) {
    const last = lastSent.get(event.taskId);
    if ((last ?? 0) >= event.seq) return;
    // Never a gap: the reader is told to read what it missed from the store instead.
    if (last !== undefined && event.seq > last + 1) {
      close(CLOSE_GAP, `missed events after seq ${last}; reconnect with ?after=${last}`);
      return;
    }
    lastSent.set(event.taskId, event.seq);
    lastSeq = event.seq;
    if (!writable()) return;
    sink.event(event);
    armHeartbeat();
    if (opts.closeOnFinish && event.type === 'task.finished') close(CLOSE_DONE, 'task finished');
  }

  function close(code: number, reason: string) {
    if (closed) return;
    stop();
    // Both sinks send the end after what is already queued, so nothing sent is lost.
    sink.close(code, reason);
  }

  function stop() {
    if (closed) return;
    closed = true;
    if (heartbeat) clearTimeout(heartbeat);
    heartbeat = null;
    pending.length = 0;
    for (const c of cleanups.splice(0)) c();
  }
  sink.onGone(stop);
  armHeartbeat();

  return {
    /** A live event: sent now, or after the replay in progress. */
    send(event: StoredEvent): void {
      if (closed) return;
      if (!replaying) return sendOnce(event);
      if (pending.length >= MAX_PENDING) close(CLOSE_SLOW_READER, 'reader too slow; reconnect with ?after=<last seq>');
      else pending.push(event);
    },

    /**
     * Sends stored events from `source`, waiting for the sink to drain between them, then the live
     * events that arrived meanwhile (the listener is attached before the replay starts, and events
     * are published only once stored, so no event falls in between; the overlap is sent once).
     */
    async replay(source: AsyncIterable<StoredEvent> | Iterable<StoredEvent>): Promise<void> {
      replaying = true;
      try {
        for await (const event of source) {
          while (!closed && sink.buffered > opts.maxBufferedBytes / 2) await sleep(5);
          if (closed) return;
          sendOnce(event);
        }
      } finally {
        replaying = false;
      }
      for (const event of pending.splice(0)) sendOnce(event);
    },

    close,

    /** Runs `fn` when the feed stops (ended, or its peer gone). */
    onStop(fn: () => void) {
      if (closed) fn();
      else cleanups.push(fn);
    },

    get closed() {
      return closed;
    },
  };
}
