import type { Readable } from 'node:stream';
import { type Dispatcher, fetch as undiciFetch } from 'undici';
import { pulledStream, pulledStreamUsed, withPulledStream, type PullSource } from '../util/pulled-stream.ts';

/** Statuses whose response has no body (a Response refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The fetch the SDK's providers call for the model: a request of the common shape (a URL, a
 * string or bytes as body, headers as a plain object: what every provider package sends) goes
 * through undici's `request` on `dispatcher`, and its answer is handed back as a Response whose
 * body reads the socket's chunks as the reader asks. undici's own fetch builds a Request with a
 * web stream of the body, clones it (a tee of that stream, two more), sends the body through an
 * async iterator and pumps the answer through one more stream: about a third of a millisecond of
 * the event loop per model call, on every step. Anything else (Headers, a FormData or a stream
 * as body) goes to undici's fetch on the same dispatcher, as before.
 *
 * Only POST and GET (as the SDK spells them) without a `host` header take this way, and a GET
 * without a body; the rest goes to fetch, which normalises or refuses them. Only the SDK's headers
 * are sent: none of the defaults fetch adds (`accept`, `accept-language`, `sec-fetch-mode`).
 *
 * What the SDK sees is what it saw from fetch:
 * - a failure before the answer rejects with `TypeError('fetch failed')` with the cause (the SDK
 *   retries it as a network error), a request undici will not send with a plain TypeError (not
 *   retried), a failure of the body errors it with `TypeError('terminated')` with the cause, and
 *   an abort rejects or errors with the signal's reason;
 * - the status, its text and the headers as sent.
 * Two differences, both deliberate: a redirect is not followed (the SDK reports its status: a
 * model endpoint has no reason to send the request, its key with it, elsewhere), and no
 * `accept-encoding` is sent, so answers come as they are (fetch asks for them compressed and
 * decodes them).
 */
export function requestFetch(dispatcher: Dispatcher): typeof fetch {
  return async (input: Parameters<typeof fetch>[0], init: RequestInit = {}) => {
    const url = typeof input === 'string' ? URL.parse(input) : input instanceof URL ? input : null;
    const { body, headers, signal } = init;
    const method = init.method ?? 'GET';
    if (
      url === null ||
      (method !== 'POST' && method !== 'GET') ||
      (method === 'GET' && body != null) ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.username !== '' ||
      url.password !== '' ||
      (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) ||
      (headers != null && (Object.getPrototypeOf(headers) !== Object.prototype || Object.keys(headers).some((name) => name.toLowerCase() === 'host'))) ||
      (init.redirect !== undefined && init.redirect !== 'follow')
    )
      return undiciFetch(input as never, { ...(init as object), dispatcher });
    signal?.throwIfAborted();
    let answer: Dispatcher.ResponseData;
    try {
      answer = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        headers: headers as Record<string, string> | undefined,
        body: body ?? null,
        signal: signal ?? undefined,
      });
    } catch (err) {
      signal?.throwIfAborted();
      // A request undici refuses to send (a header with a line break: a key pasted with its
      // newline) is a plain TypeError, as fetch throws it: the SDK does not retry it.
      if ((err as { code?: unknown }).code === 'UND_ERR_INVALID_ARG') throw new TypeError((err as Error).message, { cause: err });
      throw new TypeError('fetch failed', { cause: err });
    }
    try {
      return responseOf(answer, init.method === 'HEAD', signal ?? undefined);
    } catch (err) {
      // An answer no Response can carry (a status past 599): a failed fetch, its socket let go.
      answer.body.on('error', () => undefined).destroy();
      throw new TypeError('fetch failed', { cause: err });
    }
  };
}

/** undici's answer as the Response the SDK reads. */
function responseOf(answer: Dispatcher.ResponseData, head: boolean, signal: AbortSignal | undefined): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.append(name, value);
  }
  const status = answer.statusCode;
  const statusText = answer.statusText ?? '';
  const type = answer.headers['content-type'];
  if (status >= 200 && status < 300 && !NULL_BODY.has(status) && !head && typeof type === 'string' && /^text\/event-stream\b/i.test(type)) {
    return withPulledStream(new EventStreamResponse(null, { status, statusText, headers }), bodySource(answer.body, signal), 'body');
  }
  if (!NULL_BODY.has(status) && !head) return new Response(pulledStream(bodySource(answer.body, signal)), { status, statusText, headers });
  const response = new Response(null, { status, statusText, headers });
  answer.body.resume();
  return response;
}

/**
 * A successful event stream's Response, whose body's web stream is made only when someone asks for
 * `body` (`withPulledStream`): the service's reader of OpenAI's chat answers reads the socket by
 * plain calls (`pulledSourceOf`), and no web stream is made for it at all. Node 20 takes about
 * 10 µs to make one, most of what a Response with a stream costs (13 µs against 2). Read whole (no
 * provider's reader does for a stream, but a Response can be), it is read through a Response of
 * that stream; cloned, through a tee of it, as any.
 */
class EventStreamResponse extends Response {}
const wholeOf = (r: Response) => new Response(r.body, { status: r.status, statusText: r.statusText, headers: r.headers });
for (const name of ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text'].filter((n) => n in Response.prototype)) {
  Object.defineProperty(EventStreamResponse.prototype, name, {
    // As a Response's: a body that cannot be read is a rejected promise, never a throw.
    async value(this: Response) {
      return (wholeOf(this) as unknown as Record<string, () => Promise<unknown>>)[name]();
    },
  });
}
Object.defineProperties(EventStreamResponse.prototype, {
  bodyUsed: {
    // Read, taken by the service's reader or cancelled; asked, it makes no stream.
    get(this: Response) {
      return pulledStreamUsed(this) ?? false;
    },
  },
  clone: {
    value(this: Response) {
      const [mine, theirs] = this.body!.tee();
      Object.defineProperty(this, 'body', { value: mine });
      return new Response(theirs, { status: this.status, statusText: this.statusText, headers: this.headers });
    },
  },
});

/**
 * An answer's Node stream, read as its reader asks. Each read takes everything the stream holds by
 * then, in one chunk, as undici's fetch did: under load the events of an answer that piled up
 * while it waited for its turn go on together (and their text deltas merge). While nobody reads,
 * the stream fills to its high-water mark and the socket is paused (no chunk piles up in memory);
 * a cancel destroys it.
 */
function bodySource(body: Readable, signal: AbortSignal | undefined): PullSource<Uint8Array> {
  let ended = false;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const poke = () => wake?.();
  body.on('readable', poke);
  body.once('end', () => {
    ended = true;
    poke();
  });
  body.once('error', (err) => {
    failure = err;
    poke();
  });
  let cancelled = false;
  /** The wait for bytes, the end or an error, while nothing is there (one per answer at a time). */
  let waiting: Promise<void> | null = null;
  return {
    next() {
      if (cancelled) return null;
      if (failure) throw signal?.aborted ? signal.reason : new TypeError('terminated', { cause: failure });
      const chunk = body.read() as Buffer | null;
      if (chunk !== null) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (ended) return null;
      waiting ??= new Promise<void>((resolve) => {
        wake = () => {
          wake = null;
          waiting = null;
          resolve();
        };
      });
      return waiting;
    },
    async cancel() {
      cancelled = true;
      body.on('error', () => undefined).destroy();
      // A read waiting for bytes ends.
      poke();
    },
  };
}
