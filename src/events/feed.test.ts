import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { CLOSE_GAP, createFeed } from './feed.ts';
import { socketSink } from './socket-sink.ts';
import type { StoredEvent } from './event-types.ts';

/** The part of a ws socket the feed uses, recording what it is sent and how it is closed. */
function fakeSocket() {
  const socket = Object.assign(new EventEmitter(), {
    OPEN: 1,
    readyState: 1,
    bufferedAmount: 0,
    sent: [] as string[],
    closedWith: null as null | { code: number; reason: string },
    send(json: string) {
      this.sent.push(json);
    },
    close(code: number, reason: string) {
      this.closedWith = { code, reason };
      this.readyState = 3;
    },
    ping() {},
    terminate() {},
  });
  return socket;
}

const event = (seq: number, type = 'tool.call'): StoredEvent => ({ taskId: 't1', seq, type, json: JSON.stringify({ seq, type }) }) as unknown as StoredEvent;

describe('createFeed', () => {
  it('closes with 1012 rather than skip a seq, so the reader reconnects from the store', async () => {
    const socket = fakeSocket();
    const feed = createFeed({
      sink: socketSink(socket as unknown as WebSocket, 60_000),
      taskId: 't1',
      closeOnFinish: true,
      heartbeatMs: 60_000,
      maxBufferedBytes: 1 << 20,
    });
    await feed.replay([event(1), event(2)]);
    feed.send(event(2));
    feed.send(event(3));
    feed.send(event(7, 'task.finished'));
    expect(socket.sent.map((j) => JSON.parse(j).seq)).toEqual([1, 2, 3]);
    expect(socket.closedWith).toEqual({ code: CLOSE_GAP, reason: 'missed events after seq 3; reconnect with ?after=3' });
    feed.close(1000, 'done');
  });
});
