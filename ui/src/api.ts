/**
 * The console's one way to the service: its public HTTP API with the signed-in key (kept in this
 * tab's sessionStorage only, never in a cookie or localStorage), and its server-sent events read
 * with fetch (EventSource cannot send the key).
 */
const KEY = 'subagentd.key';

export const key = {
  get: (): string | null => sessionStorage.getItem(KEY),
  set: (k: string) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer in the service's error shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const headers = (extra: Record<string, string> = {}) => ({ ...extra, ...(key.get() ? { authorization: `Bearer ${key.get()}` } : {}) });

/** A JSON request; throws ApiError with the service's code and message. A 401 signs out. */
export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const body = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    if (res.status === 401) key.clear();
    const error = body?.error ?? { code: 'http_error', message: `${res.status} ${res.statusText}` };
    throw new ApiError(res.status, error.code, error.message);
  }
  return body as T;
}

/** A text answer (a diff); throws ApiError as `api` does. */
export async function text(path: string): Promise<string> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw new ApiError(res.status, 'http_error', `${res.status} ${res.statusText}`);
  return res.text();
}

/** A file of the service (an artifact), saved through a link to its bytes. */
export async function download(url: string, name: string): Promise<void> {
  const res = await fetch(url, { headers: headers() });
  if (!res.ok) throw new ApiError(res.status, 'download_failed', `${res.status} ${res.statusText}`);
  const href = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

export interface StreamMessage {
  seq?: number;
  parentSeq?: number;
  type: string;
  taskId?: string;
  at?: string;
  data: any;
}

/**
 * Follows an event stream (`/tasks/:id/events`, or `/events?parentTaskId=` whose cursor is each
 * event's `parentSeq`) from `after` (null: what the stream sends without a cursor): each message to `onMessage`, reconnecting with the last id
 * after a drop until `signal` aborts or the task finishes (the service ends the stream).
 * `onConnect` hears of each connection, the first and every reconnection.
 */
export async function follow(
  path: string,
  after: number | null,
  onMessage: (m: StreamMessage) => void,
  signal: AbortSignal,
  { cursor = 'seq', onConnect }: { cursor?: 'seq' | 'parentSeq'; onConnect?: () => void } = {},
): Promise<void> {
  let last = after;
  while (!signal.aborted) {
    try {
      const from = last === null ? '' : `${path.includes('?') ? '&' : '?'}after=${last}`;
      const res = await fetch(`${path}${from}`, { headers: headers({ accept: 'text/event-stream' }), signal });
      if (!res.ok || !res.body) throw new ApiError(res.status, 'stream_failed', `the stream answered ${res.status}`);
      onConnect?.();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      let finished = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (!data) continue;
          const message = JSON.parse(data) as StreamMessage;
          const at = message[cursor];
          if (typeof at === 'number') last = at;
          if (message.type === 'task.finished') finished = true;
          onMessage(message);
        }
      }
      if (finished) return;
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status >= 400 && err.status < 500) throw err;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
