/**
 * A `text/event-stream` answer read as messages, on any runtime with fetch: what the client uses
 * for `/tasks/:id/events` and `/events` where no WebSocket is at hand (Node 20) or when asked to.
 * Events yield their `data`; comments that hold JSON (the service's heartbeats) yield it too; the
 * service's closing comment (`: close <code> <reason>`) becomes the end's code and reason.
 */
import type { SocketEnd } from './socket.ts';
import { IDLE_CLOSE_CODE } from './socket.ts';

export async function* readEventStream(res: Response, controller: AbortController, idleMs?: number): AsyncGenerator<string, SocketEnd> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let end: SocketEnd = { code: 1006, reason: 'connection dropped', opened: true };
  let idle: ReturnType<typeof setTimeout> | undefined;
  const watch = () => {
    if (!idleMs) return;
    clearTimeout(idle);
    idle = setTimeout(() => {
      end = { code: IDLE_CLOSE_CODE, reason: `no message for ${idleMs} ms`, opened: true };
      controller.abort();
    }, idleMs);
  };
  watch();
  let buffer = '';
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        return end;
      }
      if (chunk.done) return end;
      watch();
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
