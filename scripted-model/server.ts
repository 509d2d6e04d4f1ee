import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible model server: real HTTP and real SSE streaming of Chat Completions
 * (text deltas, tool-call deltas, a usage chunk). The service under test talks to it exactly as it
 * would to OpenAI, vLLM or Ollama; nothing inside the service is mocked.
 *
 * A script is chosen by a marker in the first user message (the task's prompt). The turn to answer
 * is the number of assistant messages already in the conversation, so the server is stateless and
 * any number of tasks may run against it at once.
 */

export interface ScriptedToolCall {
  name: string;
  args: unknown;
  id?: string;
}

export interface ScriptedTurn {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: { input?: number; output?: number; cached?: number; reasoning?: number; cacheWrite?: number };
  /** Wait before the first byte of the answer. */
  delayMs?: number;
  /** Wait between streamed chunks. */
  chunkDelayMs?: number;
  /** Characters per streamed text chunk (default 8, about a token or two). */
  chunkSize?: number;
  /** Text chunks made at the moment each is sent (for latency measurements); sent before `text`. */
  liveChunks?: { count: number; make: (index: number) => string };
  /**
   * A broken answer (Chat Completions): `cut-after-usage` drops the connection right after the
   * usage chunk (no [DONE]); `hold-after-usage` sends the usage chunk and then nothing, keeping the
   * connection open; `no-finish` ends cleanly with [DONE] but without a finish reason or usage;
   * `html` and `empty` answer 200 with an HTML page or an empty event stream; `keepalive-only`
   * sends SSE comments every `chunkDelayMs` and never any content.
   */
  fault?: 'cut-after-usage' | 'hold-after-usage' | 'no-finish' | 'html' | 'empty' | 'keepalive-only';
  /** Answer with this HTTP error status instead of a stream. */
  status?: number;
  errorMessage?: string;
  headers?: Record<string, string>;
}

export interface TurnContext {
  turn: number;
  model: string;
  messages: ChatMessage[];
  /** Tool results of the previous turn, in call order. */
  toolResults: Array<{ toolCallId: string; content: string }>;
  /** How many times this script has been asked for this turn (for retry tests). */
  attempt: number;
}

export type Script = ScriptedTurn[] | ((ctx: TurnContext) => ScriptedTurn);

interface ChatMessage {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: unknown[];
}

export interface RecordedRequest {
  /** Which OpenAI API was called: Chat Completions or Responses. */
  api: 'chat' | 'responses';
  /** The request body; for the Responses API, `messages` is its `input` seen as chat messages. */
  body: { model: string; messages: ChatMessage[]; tools?: Array<{ function: { name: string } }>; [k: string]: unknown };
  authorization: string | undefined;
}

export interface ScriptedModel {
  url: string;
  /** Registers a script for prompts containing `marker`. Later registrations win. */
  script(marker: string, script: Script): void;
  requests: RecordedRequest[];
  /**
   * Chat answers whose usage chunk and [DONE] were handed to the socket in full, with when: what
   * the provider "served" and expects to be billed for (crash benchmarks compare it with the records).
   */
  served: Array<{ prompt: string; turn: number; inputTokens: number; at: number; authorization: string | undefined }>;
  /** Each usage chunk once it was handed to the socket (Chat Completions), with when. */
  usageSent: Array<{ prompt: string; turn: number; at: number }>;
  /** Most chat requests that were being answered at the same time. */
  readonly maxInFlight: number;
  close(): Promise<void>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (!ms || signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done);
  });

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? '').join('');
  return '';
}

/** Splits text into chunks of a few characters, as a model streams tokens. */
function chunks(text: string, size = 8): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

interface ConversationView {
  prompt: string;
  turn: number;
  toolResults: TurnContext['toolResults'];
  messages: ChatMessage[];
}

/** Chat Completions: the turn is the number of assistant messages so far. */
function chatView(body: { messages: ChatMessage[] }): ConversationView {
  const lastAssistant = body.messages.map((m) => m.role).lastIndexOf('assistant');
  return {
    prompt: textOf(body.messages.find((m) => m.role === 'user')?.content),
    turn: body.messages.filter((m) => m.role === 'assistant').length,
    toolResults: body.messages
      .slice(lastAssistant + 1)
      .filter((m) => m.role === 'tool')
      .map((m) => ({ toolCallId: m.tool_call_id ?? '', content: textOf(m.content) })),
    messages: body.messages,
  };
}

type ResponsesItem = { role?: string; type?: string; content?: unknown; call_id?: string; output?: unknown; name?: string; arguments?: string };

/**
 * Responses API: `input` holds messages and items; each run of assistant output (message,
 * function_call, or an item_reference to one) is one earlier turn.
 */
function responsesView(body: { input: ResponsesItem[] }): ConversationView {
  const isAssistant = (i: ResponsesItem) => i.role === 'assistant' || i.type === 'function_call' || i.type === 'item_reference';
  let turn = 0;
  let lastAssistant = -1;
  body.input.forEach((item, i) => {
    if (isAssistant(item)) {
      if (i === 0 || !isAssistant(body.input[i - 1])) turn++;
      lastAssistant = i;
    }
  });
  const messages: ChatMessage[] = body.input.map((i) =>
    i.type === 'function_call_output'
      ? { role: 'tool', tool_call_id: i.call_id, content: textOf(i.output) }
      : isAssistant(i)
        ? { role: 'assistant', content: textOf(i.content) }
        : { role: i.role ?? 'user', content: textOf(i.content) },
  );
  return {
    prompt: textOf(body.input.find((i) => i.role === 'user')?.content),
    turn,
    toolResults: body.input
      .slice(lastAssistant + 1)
      .filter((i) => i.type === 'function_call_output')
      .map((i) => ({ toolCallId: i.call_id ?? '', content: typeof i.output === 'string' ? i.output : JSON.stringify(i.output) })),
    messages,
  };
}

/** Streams one turn as Responses API events (text deltas, function-call argument deltas, usage). */
async function streamResponses(res: ServerResponse, step: ScriptedTurn, model: string, n: number, signal: AbortSignal) {
  const event = (data: { type: string } & Record<string, unknown>) => res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  event({ type: 'response.created', response: { id: `resp_${n}`, created_at: Math.floor(Date.now() / 1000), model } });
  let index = 0;
  const text = [
    ...Array.from({ length: step.liveChunks?.count ?? 0 }, (_, i) => () => step.liveChunks!.make(i)),
    ...chunks(step.text ?? '', step.chunkSize).map((c) => () => c),
  ];
  if (text.length > 0) {
    const item = { type: 'message', id: `msg_${n}` };
    event({ type: 'response.output_item.added', output_index: index, item });
    for (const piece of text) {
      if (signal.aborted) return;
      event({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: piece() });
      await sleep(step.chunkDelayMs ?? 0, signal);
    }
    event({ type: 'response.output_item.done', output_index: index, item });
    index++;
  }
  for (const [i, call] of (step.toolCalls ?? []).entries()) {
    const args = JSON.stringify(call.args);
    const item = { type: 'function_call', id: `fc_${n}_${i}`, call_id: call.id ?? `call_${n}_${i}`, name: call.name, arguments: '' };
    event({ type: 'response.output_item.added', output_index: index, item });
    for (const piece of chunks(args, 24)) event({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta: piece });
    event({ type: 'response.output_item.done', output_index: index, item: { ...item, arguments: args, status: 'completed' } });
    index++;
  }
  const u = step.usage ?? {};
  event({
    type: 'response.completed',
    response: {
      incomplete_details: null,
      usage: {
        input_tokens: u.input ?? 100,
        input_tokens_details: { cached_tokens: u.cached ?? 0 },
        output_tokens: u.output ?? 20,
        output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
      },
    },
  });
  res.end();
}

export async function startScriptedModel(opts: { port?: number; host?: string } = {}): Promise<ScriptedModel> {
  const scripts: Array<{ marker: string; script: Script }> = [];
  const attempts = new Map<string, number>();
  const requests: RecordedRequest[] = [];
  const served: ScriptedModel['served'] = [];
  const usageSent: ScriptedModel['usageSent'] = [];
  let counter = 0;
  let inFlight = 0;
  let maxInFlight = 0;

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const api = /\/chat\/completions$/.test(req.url ?? '') ? 'chat' : /\/responses$/.test(req.url ?? '') ? 'responses' : null;
    if (req.method !== 'POST' || !api) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const parsed = JSON.parse(raw) as { model: string; messages: ChatMessage[]; input: ResponsesItem[] };
    const view = api === 'chat' ? chatView(parsed) : responsesView(parsed);
    const body = { ...parsed, messages: view.messages } as RecordedRequest['body'];
    requests.push({ body, authorization: req.headers.authorization, api });
    const prompt = view.prompt;
    const found = [...scripts].reverse().find((s) => prompt.includes(s.marker));
    if (!found) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `scripted model: no script matches prompt "${prompt.slice(0, 80)}"` } }));
      return;
    }
    const { turn, toolResults } = view;
    const attemptKey = `${found.marker}\u0000${prompt}\u0000${turn}`;
    const attempt = (attempts.get(attemptKey) ?? 0) + 1;
    attempts.set(attemptKey, attempt);
    const ctx: TurnContext = { turn, model: body.model, messages: body.messages, toolResults, attempt };
    const step: ScriptedTurn | undefined = typeof found.script === 'function' ? found.script(ctx) : found.script[Math.min(turn, found.script.length - 1)];

    await sleep(step.delayMs ?? 0, abort.signal);
    if (abort.signal.aborted) return;
    if (step.status) {
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
      res.end(JSON.stringify({ error: { message: step.errorMessage ?? `scripted error ${step.status}`, type: 'scripted' } }));
      return;
    }

    if (api === 'responses') return streamResponses(res, step, body.model, ++counter, abort.signal);
    if (step.fault === 'html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      return;
    }
    if (step.fault === 'empty') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end();
      return;
    }

    const id = `chatcmpl-${++counter}`;
    const created = Math.floor(Date.now() / 1000);
    const send = (delta: unknown, finish: string | null = null) =>
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
      );
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    send({ role: 'assistant', content: '' });
    if (step.fault === 'keepalive-only') {
      while (!abort.signal.aborted) {
        res.write(': keep-alive\n\n');
        await sleep(step.chunkDelayMs || 50, abort.signal);
      }
      return;
    }
    for (let i = 0; i < (step.liveChunks?.count ?? 0); i++) {
      if (abort.signal.aborted) return;
      send({ content: step.liveChunks!.make(i) });
      await sleep(step.chunkDelayMs ?? 0, abort.signal);
    }
    for (const piece of chunks(step.text ?? '', step.chunkSize)) {
      if (abort.signal.aborted) return;
      send({ content: piece });
      await sleep(step.chunkDelayMs ?? 0, abort.signal);
    }
    (step.toolCalls ?? []).forEach((call, index) => {
      const args = JSON.stringify(call.args);
      send({
        tool_calls: [{ index, id: call.id ?? `call_${counter}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }],
      });
      for (const piece of chunks(args, 24)) send({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    if (step.fault === 'no-finish') {
      res.end('data: [DONE]\n\n');
      return;
    }
    send({}, step.toolCalls?.length ? 'tool_calls' : 'stop');
    const u = step.usage ?? {};
    const input = u.input ?? 100;
    const output = u.output ?? 20;
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        choices: [],
        usage: {
          prompt_tokens: input,
          completion_tokens: output,
          total_tokens: input + output,
          prompt_tokens_details: { cached_tokens: u.cached ?? 0, ...(u.cacheWrite !== undefined && { cache_write_tokens: u.cacheWrite }) },
          completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
        },
      })}\n\n`,
      () => usageSent.push({ prompt, turn, at: Date.now() }),
    );
    if (step.fault === 'cut-after-usage') {
      // Let the usage chunk leave, then drop the connection as a failing proxy would.
      await sleep(20);
      res.socket?.destroy();
      return;
    }
    if (step.fault === 'hold-after-usage') {
      await sleep(3_600_000, abort.signal);
      return;
    }
    res.end('data: [DONE]\n\n', () => served.push({ prompt, turn, inputTokens: input, at: Date.now(), authorization: req.headers.authorization }));
  }

  const server: Server = createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => inFlight--);
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(err) } }));
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/v1`,
    script: (marker, script) => scripts.push({ marker, script }),
    requests,
    served,
    usageSent,
    get maxInFlight() {
      return maxInFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
