import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentListedSchema } from '../definitions/agent-definition.ts';
import { eventDataSchemas, heartbeatSchema, streamMessageSchema } from '../events/event-types.ts';
import {
  artifactSchema,
  createTaskBodySchema,
  skippedPathSchema,
  taskAcceptedSchema,
  taskContextSchema,
  taskErrorSchema,
  taskListSchema,
  taskOptionsSchema,
  taskOutputSchema,
  modelMessageSchema,
  steeringBodySchema,
  taskMessagesSchema,
  taskBudgetSchema,
  progressSchema,
  pauseSchema,
  resumeBodySchema,
  usageSchema,
} from '../shapes/task.ts';
import { workspaceFileSchema, workspaceListingSchema } from '../shapes/artifact.ts';
import { SERVICE_VERSION } from '../version.ts';
import { usageRecordListSchema, usageRecordSchema, usageReportSchema, usageTotalsSchema } from '../shapes/usage-report.ts';
import { standingBudgetBodySchema, standingBudgetSchema } from '../shapes/budget.ts';
import {
  createdWebhookSchema,
  createWebhookBodySchema,
  deliveryListSchema,
  deliverySchema,
  webhookListSchema,
  webhookPayloadSchema,
  webhookSchema,
} from '../shapes/webhook.ts';
import {
  backgroundStartedSchema,
  childOutputSchema,
  closeAgentInputSchema,
  sendInputInputSchema,
  sendInputResultSchema,
  taskToolInputSchema,
  waitInputSchema,
  waitResultSchema,
} from '../shapes/lead-tools.ts';
import { errorBodySchema } from './error-schema.ts';

/**
 * The schemas the document names (`#/components/schemas/<name>`), so that a generated client gets
 * a type for each instead of an anonymous inline shape. The event schemas are named too: the
 * WebSocket routes point at `StreamMessage` through the `x-websocket` extension.
 */
const apiSchemas = z.registry<{ id: string }>();
const named: Record<string, z.ZodType> = {
  Error: errorBodySchema,
  CreateTaskBody: createTaskBodySchema,
  TaskContext: taskContextSchema,
  TaskOptions: taskOptionsSchema,
  Task: taskOutputSchema,
  TaskAccepted: taskAcceptedSchema,
  TaskList: taskListSchema,
  TaskError: taskErrorSchema,
  TaskMessages: taskMessagesSchema,
  ModelMessage: modelMessageSchema,
  SteeringBody: steeringBodySchema,
  TaskBudget: taskBudgetSchema,
  Progress: progressSchema,
  Pause: pauseSchema,
  ResumeBody: resumeBodySchema,
  StandingBudget: standingBudgetSchema,
  StandingBudgetBody: standingBudgetBodySchema,
  CreateWebhookBody: createWebhookBodySchema,
  Webhook: webhookSchema,
  CreatedWebhook: createdWebhookSchema,
  WebhookList: webhookListSchema,
  WebhookDelivery: deliverySchema,
  WebhookDeliveryList: deliveryListSchema,
  WebhookPayload: webhookPayloadSchema,
  Artifact: artifactSchema,
  WorkspaceFile: workspaceFileSchema,
  WorkspaceListing: workspaceListingSchema,
  SkippedPath: skippedPathSchema,
  Usage: usageSchema,
  UsageTotals: usageTotalsSchema,
  UsageReport: usageReportSchema,
  UsageRecord: usageRecordSchema,
  UsageRecordList: usageRecordListSchema,
  AgentSummary: agentListedSchema,
  StreamMessage: streamMessageSchema,
  Heartbeat: heartbeatSchema,
  TaskStartedData: eventDataSchemas['task.started'],
  StepStartedData: eventDataSchemas['step.started'],
  TextDeltaData: eventDataSchemas['text.delta'],
  ToolCallData: eventDataSchemas['tool.call'],
  ToolResultData: eventDataSchemas['tool.result'],
  StepFinishedData: eventDataSchemas['step.finished'],
  PlanData: eventDataSchemas.plan,
  MessageReceivedData: eventDataSchemas['message.received'],
  ContextCompactedData: eventDataSchemas['context.compacted'],
  TaskResumedData: eventDataSchemas['task.resumed'],
  TaskToolArgs: taskToolInputSchema,
  ChildOutput: childOutputSchema,
  BackgroundStarted: backgroundStartedSchema,
  WaitArgs: waitInputSchema,
  WaitResult: waitResultSchema,
  SendInputArgs: sendInputInputSchema,
  SendInputResult: sendInputResultSchema,
  CloseAgentArgs: closeAgentInputSchema,
};
for (const [id, schema] of Object.entries(named)) apiSchemas.add(schema, { id });

const errorText = {
  400: 'Invalid request: `error.details` names each field and what is wrong with it',
  401: 'Missing or wrong API key (only while API_KEYS is set)',
  403: "Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys",
  404: 'No such task, workspace, file or route for this tenant',
  409: 'This Idempotency-Key was already used with a different body',
  410: 'The worktree copy of the task was removed (applied, or past WORKTREE_TTL_MS)',
  413: 'The body is larger than BODY_LIMIT_BYTES',
  414: 'A segment of the URL, or a name in a workspace path, is too long (uri_too_long)',
  415: 'The body is not application/json',
  426: 'A WebSocket route called without `Upgrade: websocket`',
  429: 'A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds',
  500: 'An unexpected failure of the service',
  503: 'Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds',
  507: 'The disk that holds the database is full',
} as const;
type ErrorStatus = keyof typeof errorText;

/** A JSON response with a description, as a route's `schema.response` entry. */
export function json<T extends z.ZodType>(description: string, schema: T) {
  return { description, content: { 'application/json': { schema } } };
}

/** The contract's error body for each of `statuses`, with what each means. */
export function errors<S extends ErrorStatus>(...statuses: S[]): Record<S, ReturnType<typeof json<typeof errorBodySchema>>> {
  return Object.fromEntries(statuses.map((s) => [s, json(errorText[s], errorBodySchema)])) as Record<S, ReturnType<typeof json<typeof errorBodySchema>>>;
}

/** Marks a route as a WebSocket upgrade: the document describes it with `x-websocket`. */
export const websocketExtension = { 'x-websocket': true };

/**
 * Marks a route whose request body is raw bytes: the document declares it
 * `application/octet-stream` (`format: binary`), so a generated client sends a file as it is
 * instead of JSON-encoding it.
 */
export const binaryBody = (description: string) => ({ 'x-binary-body': description });

/** The document's areas: each operation is tagged by the first segment of its path. */
const TAGS = [
  { name: 'tasks', description: 'Run subagents, follow, steer, cancel and resume them', prefixes: ['/tasks'] },
  { name: 'streams', description: 'Progress events: WebSocket (`x-websocket`) and server-sent events', prefixes: ['/stream', '/events'] },
  { name: 'workspaces', description: "Files of a parent task's workspace", prefixes: ['/workspaces'] },
  { name: 'usage', description: 'Tokens and costs, for billing', prefixes: ['/usage'] },
  { name: 'budgets', description: 'Standing budgets per parent task or user', prefixes: ['/budgets'] },
  { name: 'webhooks', description: 'Signed POSTs of task events to your endpoints', prefixes: ['/webhooks'] },
  { name: 'agents', description: 'The subagent definitions and the skills they preload', prefixes: ['/agents', '/skills'] },
  { name: 'memory', description: "Definitions' memory folders, per user, parent task or definition", prefixes: ['/memory'] },
  { name: 'a2a', description: 'The Agent2Agent (A2A) endpoint and its agent card', prefixes: ['/a2a', '/.well-known'] },
  { name: 'operations', description: 'Health and metrics', prefixes: ['/healthz', '/metrics'] },
] as const;

function tagOf(url: string): string {
  // A task's streams belong with the other streams.
  if (/^\/tasks\/\{id\}\/(stream|events)$/.test(url)) return 'streams';
  const first = `/${url.split('/')[1] ?? ''}`;
  return TAGS.find((t) => (t.prefixes as readonly string[]).includes(first))?.name ?? 'operations';
}

/** What `x-websocket` says of an upgrade route: what the socket carries and how it closes. */
const websocketDescription = {
  description:
    'After the upgrade (101) the server sends one JSON text message per event, each a StreamMessage. Close codes: ' +
    '1000 the task finished (task streams); 1001 the service is shutting down, reconnect with ?after=<last cursor>; ' +
    '1008 the reader fell too far behind (WS_MAX_BUFFERED_BYTES), reconnect with ?after=<last cursor>.',
  message: { $ref: '#/components/schemas/StreamMessage' },
};

interface OperationLike {
  operationId?: string;
  tags?: string[];
  requestBody?: unknown;
  'x-binary-body'?: string;
  responses?: Record<string, unknown>;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  'x-websocket'?: unknown;
}

interface DocumentLike {
  tags?: Array<{ name: string; description: string }>;
  paths?: Record<string, Record<string, OperationLike>>;
  webhooks?: Record<string, unknown>;
  components?: { schemas?: Record<string, unknown> };
  'x-tools'?: unknown;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
/**
 * The `x-tools` extension: the lead tools a task that may start children gives its model (input
 * and what the model reads back), as `tool.call` and `tool.result` events carry them.
 */
const LEAD_TOOLS_EXTENSION = {
  description: "The tools a definition with maxDepth gives its model to lead its children: each one's input and answer",
  task: { input: ref('TaskToolArgs'), output: { oneOf: [ref('ChildOutput'), ref('BackgroundStarted')] } },
  wait: { input: ref('WaitArgs'), output: ref('WaitResult') },
  send_input: { input: ref('SendInputArgs'), output: ref('SendInputResult') },
  close_agent: { input: ref('CloseAgentArgs'), output: ref('ChildOutput') },
};

/**
 * The zod provider names every schema twice, `X` (what the service answers, closed to unknown
 * fields) and `XInput` (what it takes, open). Keep the ones the document uses, and call an
 * `XInput` plain `X` where no answer uses `X`: a client gets `CreateTaskBody`, not two of each.
 */
function pruneSchemas(doc: DocumentLike): DocumentLike {
  const schemas = doc.components?.schemas ?? {};
  const refsIn = (value: unknown) => [...JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
  const used = new Set(refsIn({ ...doc, components: { ...doc.components, schemas: {} } }));
  for (const queue = [...used]; queue.length > 0;) {
    for (const ref of refsIn(schemas[queue.pop()!])) {
      if (used.has(ref)) continue;
      used.add(ref);
      queue.push(ref);
    }
  }
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
  const renames = [...used].filter((n) => n.endsWith('Input') && !used.has(n.slice(0, -5)));
  let json = JSON.stringify(doc);
  for (const n of renames) json = json.replaceAll(`"#/components/schemas/${n}"`, `"#/components/schemas/${n.slice(0, -5)}"`);
  const out = JSON.parse(json) as DocumentLike;
  for (const n of renames) {
    out.components!.schemas![n.slice(0, -5)] = out.components!.schemas![n];
    delete out.components!.schemas![n];
  }
  return out;
}

/** Adds what every route can answer, names the wildcard, marks the public and WebSocket routes. */
function finishDocument(doc: DocumentLike, isPublic: (url: string) => boolean): DocumentLike {
  const paths: Record<string, Record<string, OperationLike>> = {};
  for (const [url, item] of Object.entries(doc.paths ?? {})) {
    // `{*}` is not a name a generated client can use: call the rest of the path `path`.
    const name = url.replace('{*}', '{path}');
    for (const op of Object.values(item)) {
      for (const p of op.parameters ?? []) if (p.in === 'path' && p.name === '*') p.name = 'path';
      const responses = (op.responses ??= {});
      const common: ErrorStatus[] = isPublic(url) ? [500, 503] : [401, 429, 500, 503];
      for (const s of common)
        responses[s] ??= { description: errorText[s], content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      // A body-less answer (204) has no schema to carry its description.
      for (const r of Object.values(responses) as Array<{ description?: string }>) {
        if (r.description === 'Default Response') r.description = 'Done; no content';
      }
      op.tags = [tagOf(name)];
      if (op['x-websocket']) {
        op['x-websocket'] = websocketDescription;
        responses['101'] = { description: 'Switching Protocols: the socket carries StreamMessage texts (see x-websocket)' };
        // No 200 is ever answered: a plain GET gets 426.
        delete responses['200'];
      }
      if (op['x-binary-body']) {
        op.requestBody = {
          required: true,
          description: op['x-binary-body'],
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        };
        delete op['x-binary-body'];
      }
      if (isPublic(url)) op.security = [];
    }
    paths[name] = item;
  }
  doc.paths = paths;
  doc['x-tools'] = LEAD_TOOLS_EXTENSION;
  doc.tags = TAGS.map(({ name, description }) => ({ name, description }));
  // What the service POSTs to registered endpoints (OpenAPI 3.1 `webhooks`).
  doc.webhooks = {
    taskEvent: {
      post: {
        operationId: 'taskEvent',
        summary: 'A task event, POSTed to each endpoint that asked for it',
        description:
          'Standard Webhooks: verify webhook-signature (HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" with the ' +
          'endpoint secret) with any Standard Webhooks library; webhook-id is the same on every retry. Answer 2xx within ' +
          'WEBHOOK_TIMEOUT_MS; anything else is retried with backoff.',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookPayload' } } } },
        responses: { '200': { description: 'Received' } },
      },
    },
  };
  return doc;
}

/**
 * The OpenAPI document (`/docs/json`, `/docs/yaml`) and its UI (`/docs`), generated from the
 * routes' zod schemas. Every operation has an operationId, named schemas and each status it can
 * answer, so `openapi-typescript` + `openapi-fetch` give a typed client with no casts.
 */
export async function registerOpenApi(app: FastifyInstance, opts: { isPublic: (url: string) => boolean }) {
  const transform = createJsonSchemaTransform({ schemaRegistry: apiSchemas });
  const transformObject = createJsonSchemaTransformObject({ schemaRegistry: apiSchemas });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'subagentd',
        description:
          'Runs LLM subagents for orchestrator backends. Send `Authorization: Bearer <key>` when the service has API_KEYS; ' +
          'stream routes take `?access_token=<key>` instead. The WebSocket routes are described with the `x-websocket` ' +
          'extension (each message is a `StreamMessage`); `/tasks/{id}/events` and `/events` carry the same messages as ' +
          'server-sent events.',
        version: SERVICE_VERSION,
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a key of API_KEYS' } } },
      security: [{ bearer: [] }],
    },
    transform,
    transformObject: (input) => pruneSchemas(finishDocument(transformObject(input) as DocumentLike, opts.isPublic)) as ReturnType<typeof transformObject>,
  });
  // The documentation's page, files and document are public: its routes are the plugin's, so they
  // are declared by a hook of the context that registers it.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, access: 'public' };
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
}
