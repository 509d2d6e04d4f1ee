import { z } from 'zod';
import { errorOf, SubagentApiError } from './errors.ts';
import { backoffMs, retryAfterMs, sleep, type RetryOptions } from './retry.ts';
import { readEventStream } from './event-stream.ts';
import { IDLE_CLOSE_CODE, readSocket, socketConstructor, type SocketConstructor, type SocketEnd } from './socket.ts';
import type {
  AgentSummary,
  MemoryListing,
  MemoryScope,
  SkillSummary,
  ApprovalDecision,
  AuditPage,
  CreateKeyBody,
  CreatedKey,
  ErasedUser,
  KeyList,
  CreatedWebhook,
  CreateTaskBody,
  CreateWebhookBody,
  DeliveryList,
  ListTasksQuery,
  ModelMessage,
  StandingBudget,
  StandingBudgetBody,
  StreamMessage,
  TaskAccepted,
  TaskEvent,
  TaskBudget,
  TaskList,
  TaskOutput,
  TaskStatus,
  ToolResult,
  UsageQuery,
  UsageRecordList,
  UsageRecordsQuery,
  UsageReport,
  WebhookList,
  WorkspaceFile,
  WorkspaceListing,
} from './types.ts';

export interface SubagentClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` (and on streams the same header, or `?access_token=`). */
  apiKey?: string;
  /** A fetch to use instead of the global one (tests, proxies, instrumentation). */
  fetch?: typeof fetch;
  /**
   * A WebSocket constructor instead of the global one (Node 22+, browsers, Deno, Bun); on Node 20
   * pass `ws`'s to stream over WebSockets there.
   */
  WebSocket?: SocketConstructor;
  /**
   * How streams are read: `websocket` (`/tasks/:id/stream`, `/stream`) or `sse` (server-sent
   * events, `/tasks/:id/events`, `/events`: plain HTTP, through proxies that do not pass
   * WebSockets). Default: `websocket` where a WebSocket constructor is at hand, else `sse`.
   */
  transport?: 'websocket' | 'sse';
  retry?: RetryOptions;
  /**
   * A stream that brings no message for this long, or a connection that brings no answer for this
   * long, is taken for a dropped connection (a proxy or a load balancer that stopped forwarding
   * without closing) and reconnected from the last seq. Default: three of the service's heartbeat
   * intervals (each heartbeat says its HEARTBEAT_MS), at least 1 s; 45 s until a heartbeat has
   * been seen.
   */
  streamIdleTimeoutMs?: number;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface CreateTaskOptions extends RequestOptions {
  /**
   * Makes a retried create return the first task instead of starting a second. Defaults to one
   * derived from `context.parentTaskId` and `context.toolCallId` when the body has a tool call id,
   * so a retried tool call never runs its subagent twice.
   */
  idempotencyKey?: string;
  /** W3C `traceparent` of the caller's span: the task's trace becomes its child. */
  traceparent?: string;
}

export interface StreamOptions extends RequestOptions {
  /**
   * Start after this cursor: a task's seq (default 0: every stored event first, then the live
   * ones), or a parent's parentSeq (default: the stored events of its unfinished tasks).
   */
  after?: number;
  /** Yield heartbeats too (default true). */
  heartbeats?: boolean;
  /** Reconnect attempts in a row that get no message before giving up (default 10). */
  maxReconnects?: number;
  /** This stream's `streamIdleTimeoutMs` (see SubagentClientOptions). */
  idleTimeoutMs?: number;
}

/**
 * A stream's function as callers see it: with `heartbeats: false` it yields no heartbeat, and its
 * type says so.
 */
export interface StreamFunction {
  (id: string, o: StreamOptions & { heartbeats: false }): AsyncGenerator<TaskEvent>;
  (id: string, o?: StreamOptions): AsyncGenerator<StreamMessage>;
}
const typedStream = (f: (id: string, o: StreamOptions) => AsyncGenerator<StreamMessage>): StreamFunction =>
  ((id: string, o: StreamOptions = {}) => f(id, o)) as StreamFunction;

export interface WaitOptions extends RequestOptions {
  /** Return when the task pauses at a budget, instead of waiting for a resume (default false). */
  returnOnPause?: boolean;
}

/** `options.outputSchema` as JSON Schema, or as a zod schema (sent as its JSON Schema). */
export type OutputSchema = z.ZodType | Record<string, unknown>;

/** A create body whose `options.outputSchema` may be a zod schema. */
export type CreateTaskInput<S extends OutputSchema = Record<string, unknown>> = Omit<CreateTaskBody, 'options'> & {
  options?: Omit<NonNullable<CreateTaskBody['options']>, 'outputSchema'> & { outputSchema?: S };
};

/** The TaskOutput, with `output` typed by a zod `outputSchema` (and parsed with it). */
export type TypedTaskOutput<S extends OutputSchema> = S extends z.ZodType ? Omit<TaskOutput, 'output'> & { output: z.output<S> | null } : TaskOutput;

const isZod = (schema: unknown): schema is z.ZodType => typeof schema === 'object' && schema !== null && '_zod' in schema;

/** The body as the service takes it: a zod output schema becomes its JSON Schema. */
function wireBody(body: CreateTaskInput<OutputSchema>): CreateTaskBody {
  const schema = body.options?.outputSchema;
  if (!isZod(schema)) return body as CreateTaskBody;
  return { ...body, options: { ...body.options, outputSchema: z.toJSONSchema(schema, { io: 'input' }) } };
}

/** Parses a completed task's output with the zod schema it was asked for (defaults, transforms). */
function typedOutput<S extends OutputSchema>(task: TaskOutput, schema: S | undefined): TypedTaskOutput<S> {
  if (!isZod(schema) || task.status !== 'completed' || task.output == null) return task as TypedTaskOutput<S>;
  const parsed = schema.safeParse(task.output);
  if (!parsed.success) throw new SubagentApiError(0, 'invalid_output', `task ${task.id}: its output does not match the schema: ${parsed.error.message}`);
  return { ...task, output: parsed.data } as TypedTaskOutput<S>;
}

export type UploadBody = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

const ENDED: ReadonlySet<TaskStatus> = new Set(['completed', 'aborted', 'error']);
export const isEnded = (status: TaskStatus) => ENDED.has(status);

/** Fixed parts of a request: method, path (already encoded), query, body, headers. */
interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  body?: UploadBody;
  headers?: Record<string, string>;
  /** Safe to send again after a network failure (the service may have acted on the first). */
  idempotent: boolean;
  signal?: AbortSignal;
}

const seg = encodeURIComponent;

/** A stream's idle limit before the service told its heartbeat interval: three default heartbeats. */
const DEFAULT_IDLE_MS = 45_000;
/** Never less, however short the heartbeats: a busy machine's pauses are not dead connections. */
const MIN_IDLE_MS = 1_000;
const filePath = (p: string) => p.split('/').filter(Boolean).map(seg).join('/');
/** The files route of a memory folder, without its trailing slash. */
const memoryRoute = (scope: string, key: string, type: string) => `/memory/${seg(scope)}/${seg(key)}/${seg(type)}/files`;

/**
 * A typed client of subagentd's HTTP API. Every method answers the route's body, typed from the
 * schemas the service itself validates with, or throws a `SubagentApiError` with the contract's
 * error code. Requests the service turned away (429, 503) are retried after `Retry-After`;
 * network failures are retried for requests that are safe to repeat.
 */
export function createSubagentClient(options: SubagentClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const retry = { retries: 5, baseDelayMs: 500, maxDelayMs: 60_000, ...options.retry };
  const auth: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  /** The service's HEARTBEAT_MS, as its last heartbeat said: one service, one interval for every stream. */
  let heartbeatMs: number | undefined;

  function urlOf(path: string, query?: Call['query']): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const q = params.toString();
    return `${baseUrl}${path}${q ? `?${q}` : ''}`;
  }

  async function send(call: Call): Promise<Response> {
    const streamed = typeof ReadableStream !== 'undefined' && call.body instanceof ReadableStream;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await doFetch(urlOf(call.path, call.query), {
          method: call.method,
          headers: { ...auth, ...(call.json !== undefined ? { 'content-type': 'application/json' } : {}), ...call.headers },
          body: call.json !== undefined ? JSON.stringify(call.json) : (call.body as RequestInit['body']),
          signal: call.signal,
          ...(streamed ? { duplex: 'half' } : {}),
        });
      } catch (err) {
        if (call.signal?.aborted) throw err;
        // A stream body is spent after one try; anything else not idempotent may have been acted on.
        if (!call.idempotent || streamed || attempt >= retry.retries) {
          throw new SubagentApiError(0, 'unreachable', `${call.method} ${call.path}: ${(err as Error).message}`);
        }
        await sleep(backoffMs(attempt, retry), call.signal);
        continue;
      }
      if (res.ok) return res;
      // 429 and 503 mean the service did nothing with the request: always safe to send again.
      if ((res.status === 429 || res.status === 503) && !streamed && attempt < retry.retries) {
        await res.body?.cancel();
        const asked = retryAfterMs(res.headers.get('retry-after'));
        await sleep(Math.min(retry.maxDelayMs, asked ?? backoffMs(attempt, retry)), call.signal);
        continue;
      }
      throw await errorOf(res);
    }
  }

  async function json<T>(call: Call): Promise<T> {
    const res = await send(call);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }

  const get = <T>(path: string, query?: Call['query'], o?: RequestOptions) => json<T>({ method: 'GET', path, query, idempotent: true, signal: o?.signal });

  const tasks = {
    /** `POST /tasks`: starts a subagent; `{ id, status, streamUrl }` (the first task again for a repeated key). */
    create<S extends OutputSchema>(body: CreateTaskInput<S>, o: CreateTaskOptions = {}): Promise<TaskAccepted> {
      const key = o.idempotencyKey ?? (body.context.toolCallId ? `tool-call:${body.context.parentTaskId}:${body.context.toolCallId}` : undefined);
      const headers: Record<string, string> = {};
      if (key) headers['idempotency-key'] = key;
      if (o.traceparent) headers.traceparent = o.traceparent;
      return json({ method: 'POST', path: '/tasks', json: wireBody(body), headers, idempotent: key !== undefined, signal: o.signal });
    },
    /**
     * Creates a task and waits for its end in one call (`create` then `wait`: it follows the
     * stream rather than holding one request open). With a zod `options.outputSchema`, `output`
     * comes back typed and parsed by it.
     */
    async run<S extends OutputSchema = Record<string, unknown>>(
      body: CreateTaskInput<S>,
      o: CreateTaskOptions & WaitOptions = {},
    ): Promise<TypedTaskOutput<S>> {
      const { id } = await tasks.create(body, o);
      return typedOutput(await tasks.wait(id, o), body.options?.outputSchema);
    },
    get: (id: string, o?: RequestOptions) => get<TaskOutput>(`/tasks/${seg(id)}`, undefined, o),
    list: (query: ListTasksQuery = {}, o?: RequestOptions) => get<TaskList>('/tasks', query, o),
    /** `POST /tasks/:id/cancel` (idempotent): the task as it is; it ends `aborted`/`cancelled`. */
    cancel: (id: string, o?: RequestOptions) => json<TaskOutput>({ method: 'POST', path: `/tasks/${seg(id)}/cancel`, idempotent: true, signal: o?.signal }),
    /** `POST /tasks/:id/resume`, optionally raising the task's own budget. */
    resume: (id: string, budget?: TaskBudget, o?: RequestOptions) =>
      json<TaskOutput>({ method: 'POST', path: `/tasks/${seg(id)}/resume`, json: budget ? { budget } : {}, idempotent: false, signal: o?.signal }),
    /**
     * Answers approval request `requestId` (`POST /tasks/:id/approvals/:requestId`): `'allow'`,
     * `'deny'`, or `{ decision, message?, input? }`. The same answer again is fine (so it is retried
     * safely); a different one is a 409 `approval_answered`.
     */
    approve: (id: string, requestId: string, decision: ApprovalDecision | ApprovalDecision['decision'], o?: RequestOptions) =>
      json<TaskOutput>({
        method: 'POST',
        path: `/tasks/${seg(id)}/approvals/${seg(requestId)}`,
        json: typeof decision === 'string' ? { decision } : decision,
        idempotent: true,
        signal: o?.signal,
      }),
    /**
     * Posts the result of a caller-run tool's call (`POST /tasks/:id/tool-results/:requestId`):
     * `{ output }` or `{ error }`. The same result again is fine; a different one is a 409
     * `tool_result_submitted`.
     */
    submitToolResult: (id: string, requestId: string, result: ToolResult, o?: RequestOptions) =>
      json<TaskOutput>({ method: 'POST', path: `/tasks/${seg(id)}/tool-results/${seg(requestId)}`, json: result, idempotent: true, signal: o?.signal }),
    /**
     * Writes a worktree task's changes (`options.isolation: "worktree"`) into the shared workspace
     * (`POST /tasks/:id/apply`); the paths written or removed. A 409 `conflict` names the paths
     * (`error.details.paths`) that changed there meanwhile: nothing was written. Not retried on a
     * lost connection: a second apply answers 409 `already_applied`.
     */
    apply: async (id: string, o?: RequestOptions) =>
      (await json<{ applied: string[] }>({ method: 'POST', path: `/tasks/${seg(id)}/apply`, idempotent: false, signal: o?.signal })).applied,
    /** A worktree task's changes as a unified diff against the shared workspace as it is now (`GET /tasks/:id/changes.diff`). */
    changesDiff: async (id: string, o?: RequestOptions) =>
      (await send({ method: 'GET', path: `/tasks/${seg(id)}/changes.diff`, idempotent: true, signal: o?.signal })).text(),
    /**
     * Purges a finished task's content (`DELETE /tasks/:id`, an admin key): prompt, conversation,
     * events, summary, output; its usage stays. The task as it is now (`purged: true`).
     */
    purge: (id: string, o?: RequestOptions) => json<TaskOutput>({ method: 'DELETE', path: `/tasks/${seg(id)}`, idempotent: true, signal: o?.signal }),
    /** The conversation as the model saw it (`GET /tasks/:id/messages`). */
    messages: async (id: string, o?: RequestOptions) => (await get<{ messages: ModelMessage[] }>(`/tasks/${seg(id)}/messages`, undefined, o)).messages,
    /** A steering message, given to the model before its next step (`POST /tasks/:id/messages`). */
    steer: (id: string, prompt: string, o?: RequestOptions) =>
      json<{ accepted: true }>({ method: 'POST', path: `/tasks/${seg(id)}/messages`, json: { prompt }, idempotent: false, signal: o?.signal }),
    stream: typedStream(streamTask),
    /**
     * The TaskOutput once the task has ended, however long that takes: it follows the task's
     * stream (reconnecting by itself) instead of holding one request open.
     */
    async wait(id: string, o: WaitOptions = {}): Promise<TaskOutput> {
      const now = await tasks.get(id, o);
      if (isEnded(now.status) || (o.returnOnPause && now.status === 'paused')) return now;
      for await (const m of streamTask(id, { signal: o.signal, heartbeats: false })) {
        if (m.type === 'task.finished') return m.data;
        if (m.type === 'task.paused' && o.returnOnPause) {
          const t = await tasks.get(id, o);
          if (t.status === 'paused' || isEnded(t.status)) return t; // else an earlier pause, since resumed
        }
      }
      o.signal?.throwIfAborted();
      return tasks.get(id, o);
    },
  };

  /** The stream route of each transport, and what in a message is its cursor there. */
  interface Route {
    websocket: string;
    sse: string;
    query: Record<string, string>;
    cursor: (m: TaskEvent) => number | undefined;
    /** Asked when a stream is refused before it opens: throws the service's error, if it has one. */
    check: () => Promise<unknown>;
  }

  const transport = () =>
    (options.transport ?? (options.WebSocket || (globalThis as { WebSocket?: unknown }).WebSocket ? 'websocket' : 'sse')) === 'websocket'
      ? socketConstructor(options.WebSocket)
      : null;

  /**
   * How long a stream may bring nothing before it counts as dead: what the caller set, else three
   * heartbeats (the service sends one whenever a stream was quiet that long), else a fixed guess.
   */
  const idleMsOf = (o: StreamOptions) => () =>
    o.idleTimeoutMs ?? options.streamIdleTimeoutMs ?? (heartbeatMs ? Math.max(3 * heartbeatMs, MIN_IDLE_MS) : DEFAULT_IDLE_MS);

  /** One connection's messages (JSON texts) and how it ended; `null` for a 204 (nothing follows). */
  async function connect(route: Route, after: number | undefined, o: StreamOptions): Promise<AsyncGenerator<string, SocketEnd> | null> {
    const idleMs = idleMsOf(o);
    const query = { ...route.query, ...(after !== undefined && { after: String(after) }) };
    const ws = transport();
    if (ws) {
      const url = new URL(urlOf(route.websocket, query));
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      if (options.apiKey) url.searchParams.set('access_token', options.apiKey);
      const socket = new ws(url.href);
      return readSocket(socket, o.signal, idleMs);
    }
    const controller = new AbortController();
    const stop = () => controller.abort();
    o.signal?.addEventListener('abort', stop, { once: true });
    let res: Response;
    // A connection that never answers (a proxy that stopped forwarding) is as dead as a quiet one.
    const waitMs = idleMs();
    let unanswered = false;
    const answer = setTimeout(() => {
      unanswered = true;
      controller.abort();
    }, waitMs);
    try {
      res = await doFetch(urlOf(route.sse, query), { headers: { ...auth, accept: 'text/event-stream' }, signal: controller.signal });
    } catch (err) {
      o.signal?.removeEventListener('abort', stop);
      if (o.signal?.aborted) throw err;
      if (unanswered) return ended({ code: IDLE_CLOSE_CODE, reason: `no answer within ${waitMs} ms`, opened: false });
      return ended({ code: 1006, reason: (err as Error).message, opened: false });
    } finally {
      clearTimeout(answer);
    }
    if (res.status === 204) return null;
    if (!res.ok) {
      o.signal?.removeEventListener('abort', stop);
      // Turned away for now (429, 503): reconnect later; anything else is the caller's to know.
      if (res.status !== 429 && res.status < 500) throw await errorOf(res);
      await res.body?.cancel();
      return ended({ code: 1013, reason: `HTTP ${res.status}`, opened: true });
    }
    const messages = readEventStream(res, controller, idleMs);
    return (async function* () {
      try {
        return yield* messages;
      } finally {
        o.signal?.removeEventListener('abort', stop);
      }
    })();
  }

  /**
   * A stream as an async iterator: stored events after the cursor, then live ones. A dropped
   * connection, a restart of the service or a slow-reader close is followed by a reconnect from the
   * last cursor seen, so no event is missed or repeated. A task stream ends after `task.finished`.
   */
  async function* follow(route: Route, o: StreamOptions): AsyncGenerator<StreamMessage> {
    let after = o.after;
    let failures = 0;
    const maxReconnects = o.maxReconnects ?? 10;
    for (;;) {
      o.signal?.throwIfAborted();
      const reader = await connect(route, after, o);
      if (!reader) return;
      let step: IteratorResult<string, SocketEnd>;
      // The connection closes however the loop ends: here, or a consumer that stops reading.
      try {
        step = await reader.next();
        while (!step.done) {
          const message = JSON.parse(step.value) as StreamMessage;
          failures = 0;
          if (message.type === 'heartbeat' && (message.data.intervalMs ?? 0) > 0) heartbeatMs = message.data.intervalMs;
          if (message.type !== 'heartbeat') after = route.cursor(message) ?? after;
          if (message.type !== 'heartbeat' || o.heartbeats !== false) yield message;
          if (message.type === 'task.finished' && route.query.parentTaskId === undefined) return;
          step = await reader.next();
        }
      } finally {
        await reader.return(undefined as never);
      }
      // Stopped by its caller: the `for await` ends with the signal's reason (an AbortError).
      o.signal?.throwIfAborted();
      // It closed before it was done: a refused upgrade (unknown task, bad key) is told apart
      // from a dropped connection by asking over HTTP, which throws the contract's error.
      // A connection that timed out is no refusal, and asking would wait on the same dead path.
      if (!step.value.opened && step.value.code !== IDLE_CLOSE_CODE) await route.check();
      if (++failures > maxReconnects) {
        throw new SubagentApiError(0, 'stream_lost', `the stream closed ${failures} times in a row (last: ${step.value.code} ${step.value.reason})`);
      }
      await sleep(backoffMs(failures - 1, { ...retry, baseDelayMs: 250, maxDelayMs: 10_000 }), o.signal);
    }
  }

  function streamTask(id: string, o: StreamOptions): AsyncGenerator<StreamMessage> {
    const route: Route = {
      websocket: `/tasks/${seg(id)}/stream`,
      sse: `/tasks/${seg(id)}/events`,
      query: {},
      cursor: (m) => m.seq,
      check: () => tasks.get(id, { signal: o.signal }),
    };
    return follow(route, { ...o, after: o.after ?? 0 });
  }

  /**
   * Every task of a parent task, as one stream (`/stream`, `/events`), until `signal` fires or the
   * loop is left. Messages carry their task's `taskId` and `seq`, and `parentSeq`, the cursor a
   * reconnection resumes from.
   */
  function streamParent(parentTaskId: string, o: StreamOptions = {}): AsyncGenerator<StreamMessage> {
    const route: Route = {
      websocket: '/stream',
      sse: '/events',
      query: { parentTaskId },
      cursor: (m) => m.parentSeq,
      check: () => get('/tasks', { parentTaskId, limit: 1 }, o),
    };
    return follow(route, o);
  }

  return {
    tasks,
    parents: {
      /** Every task of a parent task as one stream of events (see `streamParent`). */
      stream: typedStream(streamParent),
    },
    agents: {
      list: async (o?: RequestOptions) => (await get<{ agents: AgentSummary[] }>('/agents', undefined, o)).agents,
    },
    skills: {
      /** `GET /skills`: the skills definitions may preload, by name. */
      list: async (o?: RequestOptions) => (await get<{ skills: SkillSummary[] }>('/skills', undefined, o)).skills,
    },
    /**
     * A definition's memory folder (`/memory/:scope/:key/:type/files/*`): `key` is the user id, the
     * parent task id, or `-` for scope `definition`; `type` the subagent type.
     */
    memory: {
      /** Its files, and its size against MEMORY_MAX_BYTES. */
      list: (scope: MemoryScope, key: string, type: string, o?: RequestOptions) => get<MemoryListing>(`${memoryRoute(scope, key, type)}/`, undefined, o),
      /** A file: the answer, to read as text, bytes or a stream. */
      get: (scope: MemoryScope, key: string, type: string, path: string, o?: RequestOptions) =>
        send({ method: 'GET', path: `${memoryRoute(scope, key, type)}/${filePath(path)}`, idempotent: true, signal: o?.signal }),
      /** Writes a file atomically (created or replaced; 413 past MEMORY_MAX_BYTES). */
      put: (scope: MemoryScope, key: string, type: string, path: string, body: UploadBody, o?: RequestOptions) =>
        json<WorkspaceFile>({ method: 'PUT', path: `${memoryRoute(scope, key, type)}/${filePath(path)}`, body, idempotent: true, signal: o?.signal }),
      /** Removes a file or folder, or (no path) the whole memory; an admin key. */
      delete: (scope: MemoryScope, key: string, type: string, path = '', o?: RequestOptions) =>
        json<void>({ method: 'DELETE', path: `${memoryRoute(scope, key, type)}/${filePath(path)}`, idempotent: true, signal: o?.signal }),
    },
    workspaces: {
      /** `PUT /workspaces/:parentTaskId/files/*`: the body becomes the file (created or replaced). */
      put: (parentTaskId: string, path: string, body: UploadBody, o?: RequestOptions) =>
        json<WorkspaceFile>({ method: 'PUT', path: `/workspaces/${seg(parentTaskId)}/files/${filePath(path)}`, body, idempotent: true, signal: o?.signal }),
      /** `GET /workspaces/:parentTaskId/files/*`: the answer, to read as text, bytes or a stream. */
      get: (parentTaskId: string, path: string, o?: RequestOptions) =>
        send({ method: 'GET', path: `/workspaces/${seg(parentTaskId)}/files/${filePath(path)}`, idempotent: true, signal: o?.signal }),
      /** `GET /workspaces/:parentTaskId`: every entry, recursively (at most 10,000). */
      list: (parentTaskId: string, o?: RequestOptions) => get<WorkspaceListing>(`/workspaces/${seg(parentTaskId)}`, undefined, o),
      delete: (parentTaskId: string, path: string, o?: RequestOptions) =>
        json<void>({ method: 'DELETE', path: `/workspaces/${seg(parentTaskId)}/files/${filePath(path)}`, idempotent: true, signal: o?.signal }),
    },
    usage: {
      get: (query: UsageQuery = {}, o?: RequestOptions) => get<UsageReport>('/usage', query, o),
      records: (query: UsageRecordsQuery = {}, o?: RequestOptions) => get<UsageRecordList>('/usage/records', query, o),
    },
    budgets: {
      put: (scope: 'parent' | 'user', id: string, body: StandingBudgetBody, o?: RequestOptions) =>
        json<StandingBudget>({ method: 'PUT', path: `/budgets/${scope}/${seg(id)}`, json: body, idempotent: true, signal: o?.signal }),
      get: (scope: 'parent' | 'user', id: string, o?: RequestOptions) => get<StandingBudget>(`/budgets/${scope}/${seg(id)}`, undefined, o),
      delete: (scope: 'parent' | 'user', id: string, o?: RequestOptions) =>
        json<void>({ method: 'DELETE', path: `/budgets/${scope}/${seg(id)}`, idempotent: true, signal: o?.signal }),
    },
    webhooks: {
      create: (body: CreateWebhookBody, o?: RequestOptions) =>
        json<CreatedWebhook>({ method: 'POST', path: '/webhooks', json: body, idempotent: false, signal: o?.signal }),
      list: (o?: RequestOptions) => get<WebhookList>('/webhooks', undefined, o),
      delete: (id: string, o?: RequestOptions) => json<void>({ method: 'DELETE', path: `/webhooks/${seg(id)}`, idempotent: true, signal: o?.signal }),
      deliveries: (id: string, query: { limit?: number; cursor?: string } = {}, o?: RequestOptions) =>
        get<DeliveryList>(`/webhooks/${seg(id)}/deliveries`, query, o),
      retryDelivery: (deliveryId: string, o?: RequestOptions) =>
        json<unknown>({ method: 'POST', path: `/webhooks/deliveries/${seg(deliveryId)}/retry`, idempotent: true, signal: o?.signal }),
    },
    users: {
      /** Erases a user (`DELETE /users/:userId`, an admin key): every task purged, usage kept under `erasedAs`. */
      erase: (userId: string, o?: RequestOptions) => json<ErasedUser>({ method: 'DELETE', path: `/users/${seg(userId)}`, idempotent: true, signal: o?.signal }),
    },
    keys: {
      /** Makes a key of this tenant (`POST /keys`, an admin key): `key` appears in this answer only. */
      create: (body: CreateKeyBody, o?: RequestOptions) =>
        json<CreatedKey>({ method: 'POST', path: '/keys', json: body, idempotent: false, signal: o?.signal }),
      list: async (o?: RequestOptions) => (await get<KeyList>('/keys', undefined, o)).keys,
      revoke: (id: string, o?: RequestOptions) => json<void>({ method: 'DELETE', path: `/keys/${seg(id)}`, idempotent: true, signal: o?.signal }),
    },
    /** Who changed what (`GET /audit`, an admin key), newest first. */
    audit: (query: { limit?: number; cursor?: string } = {}, o?: RequestOptions) => get<AuditPage>('/audit', query, o),
    health: () => get<{ status: string }>('/healthz'),
  };
}

export type SubagentClient = ReturnType<typeof createSubagentClient>;

/** A stream that ends at once with `end`, yielding nothing. */
function ended(end: SocketEnd): AsyncGenerator<string, SocketEnd> {
  // eslint-disable-next-line require-yield
  return (async function* () {
    await Promise.resolve();
    return end;
  })() as AsyncGenerator<string, SocketEnd>;
}
