// A model thread (see model-threads.ts): it sends the provider's HTTP requests and parses their
// answers (the SSE framing, JSON, the provider's schema checks of every chunk) off the service's
// event loop, and posts the parsed stream parts back, those of one turn of its own loop together.
// Plain JavaScript, as sqlite-read-thread.mjs: Node runs it as is, under tsx and built.
//
// From the main thread: { op: 'stream', id, modelId, options } and { op: 'cancel', id }.
// To it, in batches: { id, started: { request, response } }, { id, part }, { id, end: true },
// { id, error } (a failure before or during the answer), and { httpError: status }.
import { parentPort, workerData } from 'node:worker_threads';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError } from '@ai-sdk/provider';
import { Agent, fetch as undiciFetch } from 'undici';

const { apiKey, baseURL, api, stallTimeoutMs } = workerData;
const STALL_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** True when undici's headers or body timer fired somewhere in the error's causes. */
function stalled(err) {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 8; e = e.cause, depth++) if (STALL_CODES.has(e.code)) return true;
  return false;
}

// The same fetch as the main thread's (stall-guard.ts): undici's socket timers cut a silent
// request; silence before the first byte is marked so the main thread ends the call as a stall
// instead of letting the SDK retry it as a network failure.
const dispatcher = stallTimeoutMs ? new Agent({ headersTimeout: stallTimeoutMs, bodyTimeout: stallTimeoutMs, keepAliveTimeout: 10_000 }) : undefined;
async function modelFetch(input, init) {
  let res;
  try {
    res = dispatcher ? await undiciFetch(input, { ...init, dispatcher }) : await fetch(input, init);
  } catch (err) {
    if (dispatcher && stalled(err)) throw Object.assign(new Error('no first byte'), { code: 'MODEL_STALL_FIRST_BYTE' });
    throw err;
  }
  if (res.status >= 400) send({ httpError: res.status });
  return res;
}

const openai = createOpenAI({ apiKey, baseURL, fetch: modelFetch });
const models = new Map();
function modelOf(id) {
  let model = models.get(id);
  if (!model) {
    model = api === 'responses' ? openai.responses(id) : openai.chat(id);
    models.set(id, model);
  }
  return model;
}

/** An error as data the main thread turns back into one (model-threads.ts `errorFromWire`). */
function errorToWire(err, depth = 0) {
  if (!(err instanceof Error)) {
    try {
      return { value: structuredClone(err) };
    } catch {
      return { value: String(err) };
    }
  }
  const e = err;
  const wire = { name: e.name, message: e.message, stack: e.stack };
  if (typeof e.code === 'string') wire.code = e.code;
  if (APICallError.isInstance(e)) {
    Object.assign(wire, {
      apiCall: true,
      url: e.url,
      statusCode: e.statusCode,
      responseHeaders: e.responseHeaders,
      responseBody: e.responseBody,
      isRetryable: e.isRetryable,
    });
    try {
      wire.data = structuredClone(e.data);
    } catch {
      // Data that cannot be cloned stays here; the message says what happened.
    }
  }
  if (e.cause !== undefined && depth < 4) wire.cause = errorToWire(e.cause, depth + 1);
  return wire;
}

function partToWire(part) {
  return part.type === 'error' ? { ...part, error: errorToWire(part.error) } : part;
}

/** Prompt parts carry a file's URL as a URL object, which cannot be posted: its text goes instead. */
function optionsFromWire(options) {
  for (const message of options.prompt ?? []) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (!part?.urlData) continue;
      part.data = new URL(part.data);
      delete part.urlData;
    }
  }
  return options;
}

// One post per turn of this thread's loop, in the order things happened.
let outbox = [];
function flush() {
  const batch = outbox;
  outbox = [];
  parentPort.postMessage(batch);
}
function send(message) {
  if (outbox.length === 0) setImmediate(flush);
  outbox.push(message);
}

const running = new Map();

async function stream(id, modelId, options) {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const result = await modelOf(modelId).doStream({ ...optionsFromWire(options), abortSignal: controller.signal });
    send({ id, started: { request: result.request, response: result.response } });
    const reader = result.stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      send({ id, part: partToWire(value) });
    }
    send({ id, end: true });
  } catch (err) {
    if (!controller.signal.aborted) send({ id, error: errorToWire(err) });
  } finally {
    running.delete(id);
  }
}

parentPort.on('message', (msg) => {
  if (msg.op === 'stream') void stream(msg.id, msg.modelId, msg.options);
  else if (msg.op === 'cancel') running.get(msg.id)?.abort();
});
