/** One block of a `text/event-stream` body: an event (`id`, `event`, `data`) or a comment. */
export interface SseBlock {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/**
 * Reads a `text/event-stream` response block by block as the server writes it, independently of
 * the service's own client (the wire format is what is under test).
 */
export async function* sseBlocks(res: Response): AsyncGenerator<SseBlock> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block: SseBlock = {};
        for (const line of buffer.slice(0, end).split('\n')) {
          if (line.startsWith(':')) block.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon) as 'id' | 'event' | 'data' | 'retry';
            if (field !== 'retry') block[field] = line.slice(colon + 1).replace(/^ /, '');
          }
        }
        buffer = buffer.slice(end + 2);
        if (Object.keys(block).length > 0) yield block;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Every block of a stream that ends by itself (a task stream), read to its end. */
export async function allBlocks(res: Response): Promise<SseBlock[]> {
  const blocks: SseBlock[] = [];
  for await (const block of sseBlocks(res)) blocks.push(block);
  return blocks;
}
