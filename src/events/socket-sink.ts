import type { WebSocket } from 'ws';
import type { FeedSink } from './feed.ts';

/**
 * A feed's WebSocket: one JSON text message per event or heartbeat. The peer is pinged every
 * `pingMs` and terminated when a pong is missed (a peer that vanished without closing).
 */
export function socketSink(socket: WebSocket, pingMs: number): FeedSink {
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
  }, pingMs);
  const stopPinging = () => clearInterval(pinger);
  socket.once('close', stopPinging);
  return {
    get open() {
      return socket.readyState === socket.OPEN;
    },
    get buffered() {
      return socket.bufferedAmount;
    },
    event: (event) => socket.send(event.json),
    heartbeat: (beat) => socket.send(JSON.stringify(beat)),
    close(code, reason) {
      stopPinging();
      // ws sends the close frame after the frames already queued.
      socket.close(code, reason);
    },
    onGone(fn) {
      socket.once('close', fn);
      socket.once('error', fn);
    },
  };
}
