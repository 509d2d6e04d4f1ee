import WebSocket from 'ws';

export interface StreamMessage {
  seq?: number;
  parentSeq?: number;
  type: string;
  taskId?: string;
  at: string;
  data: any;
}

export interface StreamClient {
  socket: WebSocket;
  messages: StreamMessage[];
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves once a message matching `pred` has arrived (already or later). */
  waitFor(pred: (m: StreamMessage) => boolean, timeoutMs?: number): Promise<StreamMessage>;
}

/** Opens a progress stream with the `ws` client (Node 20 has no global WebSocket). */
export function openStream(url: string, headers: Record<string, string> = {}): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    const messages: StreamMessage[] = [];
    const waiters: Array<{ pred: (m: StreamMessage) => boolean; resolve: (m: StreamMessage) => void }> = [];
    const closed = new Promise<{ code: number; reason: string }>((r) => socket.on('close', (code, reason) => r({ code, reason: reason.toString() })));
    socket.on('message', (raw) => {
      const m = JSON.parse((raw as Buffer).toString()) as StreamMessage;
      messages.push(m);
      for (const w of [...waiters]) {
        if (w.pred(m)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    });
    socket.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        req.destroy();
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode, body }));
      });
    });
    socket.on('error', reject);
    socket.on('open', () =>
      resolve({
        socket,
        messages,
        closed,
        waitFor(pred, timeoutMs = 10_000) {
          const found = messages.find(pred);
          if (found) return Promise.resolve(found);
          return new Promise((res, rej) => {
            const t = setTimeout(() => rej(new Error('stream message not received in time')), timeoutMs);
            waiters.push({ pred, resolve: (m) => (clearTimeout(t), res(m)) });
          });
        },
      }),
    );
  });
}

/** Asserts the seq of a task's events run 1, 2, 3 ... with no gap and no duplicate. */
export function seqsOf(messages: StreamMessage[], taskId?: string): number[] {
  return messages.filter((m) => m.type !== 'heartbeat' && (!taskId || m.taskId === taskId)).map((m) => m.seq!);
}

export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
