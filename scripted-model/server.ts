import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted model server: real HTTP and real SSE streaming of Chat Completions (text deltas,
 * tool-call deltas, a usage chunk), the Responses API, Anthropic's Messages API (`POST
 * /v1/messages`) and the Gemini API (`models/<m>:streamGenerateContent?alt=sse`), each answering
 * the same scripts. The service under test talks to it exactly as it would to OpenAI, vLLM, Ollama,
 * Anthropic or Google; nothing inside the service is mocked.
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
  /**
   * Held until this settles, then `delayMs` (a benchmark starts a thousand streams together once
   * every reader is listening).
   */
  waitFor?: Promise<unknown>;
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
   * sends SSE comments every `chunkDelayMs` and never any content. `failed` (Responses API): the
   * answer fails before any output, with `response.failed` carrying `errorMessage` and the usage.
   */
  fault?: 'cut-after-usage' | 'hold-after-usage' | 'no-finish' | 'html' | 'empty' | 'keepalive-only' | 'failed';
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
  /** Which API was called: Chat Completions, Responses, Anthropic Messages or Gemini. */
  api: 'chat' | 'responses' | 'anthropic' | 'google';
  /**
   * The request body; for the other APIs `messages` is their conversation seen as chat messages
   * (and for Gemini `model` is the one of the URL).
   */
  body: { model: string; messages: ChatMessage[]; tools?: Array<{ function: { name: string } }>; [k: string]: unknown };
  /** `Authorization`, or the key Anthropic (`x-api-key`) and Gemini (`x-goog-api-key`) send instead. */
  authorization: string | undefined;
  headers: IncomingMessage['headers'];
  /** The request body as it was sent. */
  raw: unknown;
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
  const u = step.usage ?? {};
  const usage = {
    input_tokens: u.input ?? 100,
    input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: u.output ?? 20,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
  };
  if (step.fault === 'failed') {
    const error = { code: 'server_error', message: step.errorMessage ?? 'The model failed to generate a response.' };
    event({ type: 'response.failed', sequence_number: 1, response: { id: `resp_${n}`, status: 'failed', error, incomplete_details: null, usage } });
    res.end();
    return;
  }
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
  event({ type: 'response.completed', response: { incomplete_details: null, usage } });
  res.end();
}

type AnthropicBlock = { type?: string; text?: string; tool_use_id?: string; content?: unknown; id?: string; name?: string; input?: unknown };
type AnthropicMessage = { role: string; content: string | AnthropicBlock[] };

/** Anthropic Messages: the turn is the number of assistant messages; tool results are `tool_result` blocks of user messages. */
function anthropicView(body: { messages: AnthropicMessage[] }): ConversationView {
  const blocks = (m: AnthropicMessage): AnthropicBlock[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
  const messages: ChatMessage[] = body.messages.flatMap((m): ChatMessage[] => {
    if (m.role === 'assistant') return [{ role: 'assistant', content: textOf(blocks(m).filter((b) => b.type === 'text')) }];
    const results = blocks(m).filter((b) => b.type === 'tool_result');
    const text = blocks(m).filter((b) => b.type === 'text');
    return [
      ...results.map((b) => ({ role: 'tool', tool_call_id: b.tool_use_id, content: textOf(b.content) })),
      ...(text.length > 0 ? [{ role: 'user', content: textOf(text) }] : []),
    ];
  });
  return chatView({ messages });
}

type GeminiPart = { text?: string; functionCall?: unknown; functionResponse?: { id?: string; name: string; response?: { content?: unknown } } };

/** Gemini: the turn is the number of `model` contents; tool results are `functionResponse` parts. */
function googleView(body: { contents: Array<{ role: string; parts: GeminiPart[] }> }): ConversationView {
  const messages: ChatMessage[] = body.contents.flatMap((c): ChatMessage[] => {
    if (c.role === 'model') return [{ role: 'assistant', content: textOf(c.parts) }];
    const results = c.parts.flatMap((p) => (p.functionResponse ? [p.functionResponse] : []));
    const text = c.parts.filter((p) => p.text !== undefined);
    return [
      ...results.map((r) => {
        const content = r.response?.content;
        return { role: 'tool', tool_call_id: r.id ?? r.name, content: typeof content === 'string' ? content : JSON.stringify(content) };
      }),
      ...(text.length > 0 ? [{ role: 'user', content: textOf(text) }] : []),
    ];
  });
  return chatView({ messages });
}

/** The text chunks of a turn: the live ones first, then `text`. */
const textPieces = (step: ScriptedTurn) => [
  ...Array.from({ length: step.liveChunks?.count ?? 0 }, (_, i) => () => step.liveChunks!.make(i)),
  ...chunks(step.text ?? '', step.chunkSize).map((c) => () => c),
];

/** What a broken answer does once its usage is out: drop the connection, or hold it open. */
async function afterUsage(res: ServerResponse, step: ScriptedTurn, signal: AbortSignal): Promise<boolean> {
  if (step.fault === 'cut-after-usage') {
    await sleep(20);
    res.socket?.destroy();
    return true;
  }
  if (step.fault === 'hold-after-usage') {
    await sleep(3_600_000, signal);
    return true;
  }
  return false;
}

/**
 * Streams one turn as Anthropic Messages events. Usage in the scripts counts cache reads and writes
 * inside `input` (as OpenAI reports it); Anthropic reports them apart from `input_tokens`, in
 * `message_start`, and the output in `message_delta`. `cut-after-usage` drops the connection after
 * `message_start` and the text (no `message_delta`, no `message_stop`).
 */
async function streamAnthropic(res: ServerResponse, step: ScriptedTurn, model: string, n: number, signal: AbortSignal) {
  const event = (data: { type: string } & Record<string, unknown>) => res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
  const u = step.usage ?? {};
  const cached = u.cached ?? 0;
  const written = u.cacheWrite ?? 0;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  event({
    type: 'message_start',
    message: {
      id: `msg_${n}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: Math.max((u.input ?? 100) - cached - written, 0),
        cache_creation_input_tokens: written,
        cache_read_input_tokens: cached,
        output_tokens: 1,
      },
    },
  });
  if (step.fault === 'keepalive-only') {
    while (!signal.aborted) {
      event({ type: 'ping' });
      await sleep(step.chunkDelayMs || 50, signal);
    }
    return;
  }
  let index = 0;
  const text = textPieces(step);
  if (text.length > 0) {
    event({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const piece of text) {
      if (signal.aborted) return;
      event({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece() } });
      await sleep(step.chunkDelayMs ?? 0, signal);
    }
    event({ type: 'content_block_stop', index });
    index++;
  }
  if (step.fault === 'cut-after-usage' || step.fault === 'hold-after-usage') {
    await afterUsage(res, step, signal);
    return;
  }
  for (const [i, call] of (step.toolCalls ?? []).entries()) {
    event({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id ?? `toolu_${n}_${i}`, name: call.name, input: {} } });
    for (const piece of chunks(JSON.stringify(call.args), 24))
      event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
    event({ type: 'content_block_stop', index });
    index++;
  }
  if (step.fault === 'no-finish') {
    res.end();
    return;
  }
  event({
    type: 'message_delta',
    delta: { stop_reason: step.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: u.output ?? 20, ...(u.reasoning && { output_tokens_details: { thinking_tokens: u.reasoning } }) },
  });
  event({ type: 'message_stop' });
  res.end();
}

/**
 * Streams one turn as Gemini `streamGenerateContent` chunks: `usageMetadata` with the prompt's
 * count on the first chunk (as Gemini sends it), the whole count with the finish reason on the
 * last. `promptTokenCount` includes cached tokens; `candidatesTokenCount` excludes the thoughts.
 */
async function streamGoogle(res: ServerResponse, step: ScriptedTurn, model: string, n: number, signal: AbortSignal) {
  const send = (data: Record<string, unknown>) => res.write(`data: ${JSON.stringify({ ...data, modelVersion: model, responseId: `resp_${n}` })}\n\n`);
  const u = step.usage ?? {};
  const input = u.input ?? 100;
  const reasoning = u.reasoning ?? 0;
  const output = u.output ?? 20;
  const promptUsage = { promptTokenCount: input, ...(u.cached && { cachedContentTokenCount: u.cached }) };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const candidate = (parts: GeminiPart[], finishReason?: string) => [{ content: { role: 'model', parts }, index: 0, ...(finishReason && { finishReason }) }];
  if (step.fault === 'keepalive-only') {
    while (!signal.aborted) {
      res.write(': keep-alive\n\n');
      await sleep(step.chunkDelayMs || 50, signal);
    }
    return;
  }
  let first = true;
  for (const piece of textPieces(step)) {
    if (signal.aborted) return;
    send({ candidates: candidate([{ text: piece() }]), usageMetadata: { ...promptUsage, totalTokenCount: input } });
    first = false;
    await sleep(step.chunkDelayMs ?? 0, signal);
  }
  if (step.fault === 'cut-after-usage' || step.fault === 'hold-after-usage') {
    if (first) send({ candidates: candidate([{ text: '' }]), usageMetadata: { ...promptUsage, totalTokenCount: input } });
    await afterUsage(res, step, signal);
    return;
  }
  const calls = (step.toolCalls ?? []).map((call) => ({ functionCall: { ...(call.id && { id: call.id }), name: call.name, args: call.args } }));
  if (step.fault === 'no-finish') {
    if (calls.length > 0) send({ candidates: candidate(calls) });
    res.end();
    return;
  }
  send({
    candidates: candidate(calls, 'STOP'),
    usageMetadata: {
      ...promptUsage,
      candidatesTokenCount: output - reasoning,
      ...(reasoning && { thoughtsTokenCount: reasoning }),
      totalTokenCount: input + output,
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
    const url = req.url ?? '';
    const api = /\/chat\/completions$/.test(url)
      ? 'chat'
      : /\/responses$/.test(url)
        ? 'responses'
        : /\/messages$/.test(url)
          ? 'anthropic'
          : /\/models\/[^/]+:streamGenerateContent(\?|$)/.test(url)
            ? 'google'
            : null;
    if (req.method !== 'POST' || !api) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const parsed = JSON.parse(raw) as { model: string; messages: ChatMessage[]; input: ResponsesItem[] };
    const view =
      api === 'chat'
        ? chatView(parsed)
        : api === 'responses'
          ? responsesView(parsed)
          : api === 'anthropic'
            ? anthropicView(parsed as unknown as Parameters<typeof anthropicView>[0])
            : googleView(parsed as unknown as Parameters<typeof googleView>[0]);
    const model = api === 'google' ? decodeURIComponent(/\/models\/([^/:]+):/.exec(url)![1]) : parsed.model;
    const body = { ...parsed, model, messages: view.messages } as RecordedRequest['body'];
    const key = req.headers['x-api-key'] ?? req.headers['x-goog-api-key'];
    const authorization = req.headers.authorization ?? (typeof key === 'string' ? key : undefined);
    requests.push({ body, authorization, api, headers: req.headers, raw: parsed });
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

    if (step.waitFor) await Promise.race([step.waitFor, new Promise((resolve) => abort.signal.addEventListener('abort', resolve, { once: true }))]);
    await sleep(step.delayMs ?? 0, abort.signal);
    if (abort.signal.aborted) return;
    if (step.status) {
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
      const message = step.errorMessage ?? `scripted error ${step.status}`;
      // Each API's own error body, so each provider package reads its message.
      const error =
        api === 'anthropic'
          ? { type: 'error', error: { type: 'scripted', message } }
          : api === 'google'
            ? { error: { code: step.status, message, status: 'SCRIPTED' } }
            : { error: { message, type: 'scripted' } };
      res.end(JSON.stringify(error));
      return;
    }

    if (api === 'responses') return streamResponses(res, step, body.model, ++counter, abort.signal);
    if (api === 'anthropic' && !step.fault?.match(/^(html|empty)$/)) return streamAnthropic(res, step, body.model, ++counter, abort.signal);
    if (api === 'google' && !step.fault?.match(/^(html|empty)$/)) return streamGoogle(res, step, body.model, ++counter, abort.signal);
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
