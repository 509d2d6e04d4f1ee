import type { WebSocket } from 'ws';
import type { Progress } from '../shapes/task.ts';
import type { Heartbeat, StoredEvent } from './event-types.ts';
import { iso } from '../shapes/time.ts';

export interface SocketFeedOptions {
  socket: WebSocket;
  heartbeatMs: number;
  pingMs: number;
  /** Past this many bytes waiting in the socket's send buffer a live reader is too slow: closed with 1013. */
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
 * Sends stored events to one WebSocket.
 * - Replay first, paced by the socket (a large history never floods memory), then live events;
 *   live events that arrive during the replay wait in a bounded queue. Events are de-duplicated per
 *   task by `seq`, so replay and live feed may overlap safely.
 * - A heartbeat goes out whenever nothing was sent for `heartbeatMs`.
 * - The peer is pinged every `pingMs` and terminated when a pong is missed.
 * - A live reader whose send buffer overflows is closed with 1013 rather than holding memory or
 *   slowing the task; the stored events let it catch up with `?after=`.
 */
export function createSocketFeed(opts: SocketFeedOptions) {
  const { socket } = opts;
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
        // The contract's heartbeat data carries the progress fields themselves, next to lastSeq.
        const beat: Heartbeat = { type: 'heartbeat', taskId: opts.taskId, at: iso(now()), data: { lastSeq, ...(progress ?? undefined) } };
        write(JSON.stringify(beat));
      });
  }

  function write(json: string) {
    if (closed || socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > opts.maxBufferedBytes) {
      close(CLOSE_SLOW_READER, 'reader too slow; reconnect with ?after=<last seq>');
      return;
    }
    socket.send(json);
    armHeartbeat();
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
    write(event.json);
    if (opts.closeOnFinish && event.type === 'task.finished') close(CLOSE_DONE, 'task finished');
  }

  let alive = true;
  socket.on('pong', () => {
    alive = true;
  });
  const pinger = setInterval(() => {
    if (!alive) {
      socket.terminate();
      return;
    }
    alive = false;
    socket.ping();
  }, opts.pingMs);

  function close(code: number, reason: string) {
    if (closed) return;
    stop();
    // ws sends the close frame after the frames already queued, so nothing sent is lost.
    socket.close(code, reason);
  }

  function stop() {
    if (closed) return;
    closed = true;
    clearInterval(pinger);
    if (heartbeat) clearTimeout(heartbeat);
    heartbeat = null;
    pending.length = 0;
    for (const c of cleanups.splice(0)) c();
  }
  socket.on('close', stop);
  socket.on('error', stop);
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
     * Sends stored events from `source`, waiting for the socket to drain between them, then the live
     * events that arrived meanwhile (the listener is attached before the replay starts, and events
     * are published only once stored, so no event falls in between; the overlap is sent once).
     */
    async replay(source: AsyncIterable<StoredEvent> | Iterable<StoredEvent>): Promise<void> {
      replaying = true;
      try {
        for await (const event of source) {
          while (!closed && socket.bufferedAmount > opts.maxBufferedBytes / 2) await sleep(5);
          if (closed) return;
          sendOnce(event);
        }
      } finally {
        replaying = false;
      }
      for (const event of pending.splice(0)) sendOnce(event);
    },

    close,

    /** Runs `fn` when the feed stops (socket closed, errored or dropped). */
    onStop(fn: () => void) {
      if (closed) fn();
      else cleanups.push(fn);
    },

    get closed() {
      return closed;
    },
  };
}
