import type { ServerResponse } from 'node:http';
import type { FeedSink } from './feed.ts';

/** Headers of an event stream: never cached or transformed, never buffered by nginx. */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

/**
 * A feed's server-sent-events response: each event as `id:` (its `seq` on a task stream, its
 * `parentSeq` on a parent stream, what `Last-Event-ID` brings back on a reconnection), `event:`
 * (its type) and `data:` (the same JSON a WebSocket reader gets); heartbeats as comments holding
 * the heartbeat's JSON (EventSource ignores them, proxies see traffic, this project's client reads
 * them). An end is a comment with the WebSocket close code and reason, then the end of the
 * response.
 */
export function sseSink(res: ServerResponse, cursor: 'seq' | 'parentSeq'): FeedSink {
  return {
    get open() {
      return !res.writableEnded && !res.destroyed;
    },
    get buffered() {
      return res.writableLength;
    },
    event(event) {
      const id = cursor === 'seq' ? event.seq : event.parentSeq;
      res.write(`id: ${id}\nevent: ${event.type}\ndata: ${event.json}\n\n`);
    },
    heartbeat: (beat) => res.write(`: ${JSON.stringify(beat)}\n\n`),
    close(code, reason) {
      if (!res.writableEnded) res.end(`: close ${code} ${reason.replace(/[\r\n]/g, ' ')}\n\n`);
    },
    onGone(fn) {
      res.once('close', fn);
    },
  };
}
