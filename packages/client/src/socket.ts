/**
 * A WebSocket read as an async iterator: the global WebSocket (Node 22+, Deno, Bun, browsers) or
 * one given (the `ws` package on Node 20). Only the WHATWG surface (`onopen`, `onmessage`,
 * `onclose`, `onerror`) is used; the key goes in `?access_token=` (browsers cannot set headers).
 */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number, reason?: string): void;
  /** `ws` only: drops the connection at once, without a closing handshake a dead peer never answers. */
  terminate?(): void;
}

/** A WebSocket constructor: the global one, `ws`'s (which also takes headers), or a user's. */
export type SocketConstructor = new (url: string, protocols?: string | string[] | object, options?: object) => SocketLike;

export function socketConstructor(given?: SocketConstructor): SocketConstructor {
  if (given) return given;
  const global = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (global) return global;
  throw new TypeError('no WebSocket on this runtime: pass options.WebSocket (the ws package on Node 20) or use transport: "sse"');
}

export interface SocketEnd {
  /** The close code (1006 when the connection failed or dropped without one). */
  code: number;
  reason: string;
  /** True once the socket had opened. */
  opened: boolean;
}

/** The close code reported for a socket that went quiet for longer than `idleMs` (a silent drop). */
export const IDLE_CLOSE_CODE = 4408;

/**
 * Yields each text message of the socket until it closes, then returns how it closed. Breaking
 * out of the loop, or `signal` firing, closes the socket. With `idleMs`, a socket that brings no
 * message for that long (the server heartbeats while a task is quiet, so that is a connection a
 * proxy or the network dropped without closing) is dropped and reported as closed with
 * IDLE_CLOSE_CODE.
 */
export async function* readSocket(socket: SocketLike, signal?: AbortSignal, idleMs?: () => number | undefined): AsyncGenerator<string, SocketEnd> {
  const queue: string[] = [];
  let end: SocketEnd | null = null;
  let opened = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  socket.onopen = () => {
    opened = true;
  };
  let idle: ReturnType<typeof setTimeout> | undefined;
  // Armed only while the reader waits for the network (connecting included), and read again each
  // time, so an interval the stream taught meanwhile applies at once.
  const watch = () => {
    const ms = idleMs?.();
    if (!ms) return;
    idle = setTimeout(() => {
      end ??= { code: IDLE_CLOSE_CODE, reason: opened ? `no message for ${ms} ms` : `not connected within ${ms} ms`, opened };
      socket.terminate?.();
      poke();
    }, ms);
  };
  socket.onmessage = (ev) => {
    const data = ev.data;
    queue.push(typeof data === 'string' ? data : new TextDecoder().decode(data as Uint8Array));
    poke();
  };
  socket.onerror = () => {
    end ??= { code: 1006, reason: 'connection failed', opened };
    poke();
  };
  socket.onclose = (ev) => {
    // The close that the idle timer's own terminate() brings says less than the timer did.
    if (end?.code !== IDLE_CLOSE_CODE) end = { code: ev.code, reason: ev.reason, opened };
    poke();
  };
  const onAbort = () => {
    end ??= { code: 1000, reason: 'aborted', opened };
    poke();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      while (queue.length > 0) yield queue.shift()!;
      if (end) return end;
      watch();
      await new Promise<void>((resolve) => (wake = resolve));
      clearTimeout(idle);
    }
  } finally {
    clearTimeout(idle);
    signal?.removeEventListener('abort', onAbort);
    socket.onmessage = socket.onopen = null;
    socket.onerror = () => {}; // a late error after close must not go unhandled
    try {
      socket.close(1000);
    } catch {
      // already closed
    }
  }
}
