/**
 * A `text/event-stream` answer read as messages, on any runtime with fetch: what the client uses
 * for `/tasks/:id/events` and `/events` where no WebSocket is at hand (Node 20) or when asked to.
 * Events yield their `data`; comments that hold JSON (the service's heartbeats) yield it too; the
 * service's closing comment (`: close <code> <reason>`) becomes the end's code and reason.
 */
import type { SocketEnd } from './socket.ts';
import { IDLE_CLOSE_CODE } from './socket.ts';

export async function* readEventStream(res: Response, controller: AbortController, idleMs?: () => number | undefined): AsyncGenerator<string, SocketEnd> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let end: SocketEnd = { code: 1006, reason: 'connection dropped', opened: true };
  let idle: ReturnType<typeof setTimeout> | undefined;
  // Armed only while waiting on the network, so a consumer slow to take a message is no silence,
  // and read again each time, so an interval the stream taught meanwhile applies at once.
  const watch = () => {
    const ms = idleMs?.();
    if (!ms) return;
    idle = setTimeout(() => {
      end = { code: IDLE_CLOSE_CODE, reason: `no message for ${ms} ms`, opened: true };
      controller.abort();
    }, ms);
  };
  let buffer = '';
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      watch();
      try {
        chunk = await reader.read();
      } catch {
        return end;
      } finally {
        clearTimeout(idle);
      }
      if (chunk.done) return end;
      buffer += chunk.value.replace(/\r\n?/g, '\n');
      for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(': close ')) {
            const [, code, reason] = /^: close (\d+) ?(.*)$/.exec(line) ?? [];
            if (code) end = { code: Number(code), reason: reason ?? '', opened: true };
          } else if (line.startsWith(': {')) data.push(line.slice(2));
          else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        if (data.length > 0) yield data.join('\n');
      }
    }
  } finally {
    clearTimeout(idle);
    controller.abort();
    await reader.cancel().catch(() => {});
  }
}
