import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import { type Dispatcher, fetch as undiciFetch } from 'undici';

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
 * What the SDK sees is what it saw from fetch:
 * - a failure before the answer rejects with `TypeError('fetch failed')` with the cause (the SDK
 *   retries it as a network error), a failure of the body errors it with `TypeError('terminated')`
 *   with the cause, and an abort rejects or errors with the signal's reason;
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
    if (
      url === null ||
      url.username !== '' ||
      url.password !== '' ||
      (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) ||
      (headers != null && Object.getPrototypeOf(headers) !== Object.prototype) ||
      (init.redirect !== undefined && init.redirect !== 'follow')
    )
      return undiciFetch(input as never, { ...(init as object), dispatcher });
    signal?.throwIfAborted();
    let answer: Dispatcher.ResponseData;
    try {
      answer = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: init.method ?? 'GET',
        headers: headers as Record<string, string> | undefined,
        body: body ?? null,
        signal: signal ?? undefined,
      });
    } catch (err) {
      signal?.throwIfAborted();
      throw new TypeError('fetch failed', { cause: err });
    }
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v);
      else if (value !== undefined) responseHeaders.append(name, value);
    }
    const status = answer.statusCode;
    const noBody = NULL_BODY.has(status) || init.method === 'HEAD';
    if (noBody) answer.body.resume();
    return new Response(noBody ? null : webBody(answer.body, signal ?? undefined), {
      status,
      statusText: answer.statusText || STATUS_CODES[status] || '',
      headers: responseHeaders,
    });
  };
}

/**
 * An answer's Node stream as a web stream read as its reader asks: the socket is paused while
 * nobody reads (no chunk piles up in memory), and a cancel destroys it.
 */
function webBody(body: Readable, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body.on('data', (chunk: Buffer) => {
          if (!open) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) body.pause();
        });
        body.once('end', () => {
          if (open) controller.close();
          open = false;
        });
        body.once('error', (err) => {
          if (open) controller.error(signal?.aborted ? signal.reason : new TypeError('terminated', { cause: err }));
          open = false;
        });
        body.pause();
      },
      pull() {
        body.resume();
      },
      cancel() {
        open = false;
        body.on('error', () => undefined).destroy();
      },
    },
    { highWaterMark: 0 },
  );
}
