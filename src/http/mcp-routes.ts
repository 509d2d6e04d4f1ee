import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { AppError } from '../errors/app-error.ts';
import type { EventLog } from '../events/event-log.ts';
import { createSessionTable, type HeldSession, type McpSessionLimits } from '../mcp/mcp-sessions.ts';
import { createTaskBodySchema, type ApprovalPause } from '../shapes/task.ts';
import type { TaskRow } from '../store/schema.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { compactOutput } from '../tasks/writes/task-output.ts';
import { createTicker } from '../util/ticker.ts';
import { SERVICE_VERSION } from '../version.ts';

/** The SDK's parts this server uses. */
async function loadSdk() {
  const [{ McpServer }, { StreamableHTTPServerTransport }, { isInitializeRequest }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { McpServer, StreamableHTTPServerTransport, isInitializeRequest };
}
type McpSdk = Awaited<ReturnType<typeof loadSdk>>;

const TOOL_DESCRIPTION =
  'Launch a subagent to handle a self-contained task in the shared workspace of parentTaskId. It starts with no memory of ' +
  'this conversation: the prompt is all it sees. It ends with a summary and the paths of the files it delivered (relative ' +
  'to the workspace); read those files when you need their content. Several calls run in parallel.';

interface Session extends HeldSession {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
}

export interface McpRoutesOptions {
  tasks: TaskService;
  events: EventLog;
  registry: AgentRegistry;
  logger: Logger;
  /** MCP_MAX_SESSIONS, MCP_SESSIONS_PER_TENANT, MCP_SESSIONS_PER_KEY, MCP_SESSION_IDLE_MS. */
  limits: McpSessionLimits;
}

/**
 * The service as an MCP server (`POST /mcp`, Streamable HTTP, the official SDK, with sessions so a
 * host's `notifications/cancelled` reaches the call it cancels): one tool, `task`, which runs a
 * subagent as `POST /tasks` does and answers its compact TaskOutput. Same API keys and tenants as
 * every route: a session belongs to the tenant whose key opened it. One tenant (or one key) may
 * hold only its share of the instance's sessions, so it cannot lock the others out.
 */
export const mcpRoutes: FastifyPluginAsync<McpRoutesOptions> = async (app, { tasks, events, registry, logger, limits }) => {
  const sessions = createSessionTable<Session>({ limits, now: Date.now, end: (s) => void s.transport.close().catch(() => {}) });
  // Loaded by the first MCP request: a process no MCP host talks to never holds the SDK.
  let sdk: Promise<McpSdk> | null = null;
  const sweeper = createTicker({ everyMs: Math.min(60_000, limits.idleMs), tick: () => sessions.sweep() });
  sweeper.start();
  app.addHook('onClose', async () => {
    sweeper.stop();
    await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
  });

  /** A new session's MCP server, whose `task` tool runs subagents for `tenant`. */
  function serverFor({ McpServer }: McpSdk, tenant: string): McpServer {
    const server = new McpServer({ name: 'subagentd', version: SERVICE_VERSION }, { capabilities: { tools: {} } });
    const types = registry.list().filter((d) => d.type !== 'fork');
    const names = types.map((d) => d.type) as [string, ...string[]];
    server.registerTool(
      'task',
      {
        title: 'Run a subagent',
        description: `${TOOL_DESCRIPTION}\n\nSubagent types:\n${types.map((d) => `- ${d.type}: ${d.description}`).join('\n')}`,
        inputSchema: {
          subagent_type: z.enum(names).describe('The type of subagent'),
          description: z.string().min(1).max(80).describe('Short label (3-7 words) for logs and UIs; not the task itself'),
          prompt: z.string().min(1).describe('Self-contained task: goal, all the context it needs, expected files, scope (for shell: the command)'),
          task_id: z.string().optional().describe('Continue an earlier finished task of the same type (its task_id): it keeps its conversation'),
          parentTaskId: z.string().optional().describe('The workspace (and the parent task) the subagent works for; default: the X-Parent-Task-Id header'),
          userId: z.string().optional().describe('Who is billed; default: the X-User-Id header'),
        },
      },
      async (args, extra) => {
        const header = (name: string) => {
          const v = extra.requestInfo?.headers[name];
          return Array.isArray(v) ? v[0] : v;
        };
        const parentTaskId = args.parentTaskId ?? header('x-parent-task-id');
        const userId = args.userId ?? header('x-user-id');
        if (!parentTaskId || !userId) {
          return failure('parentTaskId and userId are required: as arguments of the call, or as the X-Parent-Task-Id and X-User-Id headers');
        }
        const shell = types.find((d) => d.type === args.subagent_type)?.kind === 'shell';
        const body = createTaskBodySchema.safeParse({
          subagent_type: args.subagent_type,
          description: args.description,
          ...(shell ? { command: args.prompt } : { prompt: args.prompt }),
          ...(args.task_id && { task_id: args.task_id }),
          context: { parentTaskId, userId, toolCallId: `mcp:${String(extra.requestId)}` },
        });
        if (!body.success) return failure(body.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; '));
        let submitted: { row: TaskRow; ended?: Promise<TaskRow> };
        try {
          submitted = await tasks.submit(tenant, body.data, { waiting: true });
        } catch (err) {
          if (err instanceof AppError) return failure(`${err.code}: ${err.message}`);
          throw err;
        }
        const id = submitted.row.id;
        // Progress while it runs (if the host asked for it): each step, each tool call.
        const token = extra._meta?.progressToken;
        let progress = 0;
        const unsubscribe =
          token === undefined
            ? () => {}
            : events.subscribe(id, (e) => {
                const message = progressMessage(e.type, e.json);
                if (!message) return;
                void extra
                  .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } })
                  .catch(() => {});
              });
        // The host cancelled the call (notifications/cancelled) or its session ended: the task goes too.
        const cancel = () => void tasks.cancel(tenant, id).catch((err: unknown) => logger.warn({ err, taskId: id }, 'could not cancel an MCP task'));
        extra.signal.addEventListener('abort', cancel, { once: true });
        try {
          let ended = await (submitted.ended ?? tasks.waitForEnd(id));
          // Approvals, asked of the host's user through MCP elicitation when the host offers it.
          while (ended.status === 'paused' && server.server.getClientCapabilities()?.elicitation && !extra.signal.aborted) {
            const pause = ended.pause as ApprovalPause | null;
            const asked = (pause?.pending ?? []).filter((p) => p.kind === 'approval' && !p.answer);
            if (asked.length === 0) break; // a budget, or caller-run tools: answered as paused
            for (const p of asked) {
              const reply = await server.server.elicitInput(
                {
                  mode: 'form',
                  message: `The subagent wants to run ${p.toolName} with ${JSON.stringify(p.input).slice(0, 2000)}. Allow it?`,
                  requestedSchema: {
                    type: 'object',
                    properties: {
                      decision: { type: 'string', enum: ['allow', 'deny'], description: 'allow runs the call; deny tells the subagent no' },
                      message: { type: 'string', description: 'what the subagent reads when denied' },
                    },
                    required: ['decision'],
                  },
                },
                { relatedRequestId: extra.requestId, signal: extra.signal },
              );
              const allowed = reply.action === 'accept' && reply.content?.decision === 'allow';
              const message = typeof reply.content?.message === 'string' ? reply.content.message.slice(0, 4000) : undefined;
              await tasks
                .answerApproval(tenant, id, p.requestId, { decision: allowed ? 'allow' : 'deny', ...(message && { message }) })
                .catch((err: unknown) => {
                  // Answered meanwhile (another route, the timeout): that answer stands.
                  if (!(err instanceof AppError && err.statusCode === 409)) throw err;
                });
            }
            ended = await tasks.waitForEnd(id);
          }
          const compact = compactOutput(ended);
          return {
            content: [{ type: 'text', text: JSON.stringify(compact) }],
            structuredContent: compact,
            isError: ended.status === 'error' || ended.status === 'aborted',
          } satisfies CallToolResult;
        } finally {
          unsubscribe();
          extra.signal.removeEventListener('abort', cancel);
        }
      },
    );
    return server;
  }

  /** The session a request names (404, as the transport specification says, when unknown or another tenant's). */
  function sessionOf(request: FastifyRequest): Session | null {
    const id = request.headers['mcp-session-id'];
    if (typeof id !== 'string') return null;
    const s = sessions.get(id);
    if (!s || s.tenant !== request.tenant)
      throw new AppError(404, 'not_found', `MCP session ${id} not found (it ended, or was never opened); initialize again`);
    return s;
  }

  /** Hands the request to the session's transport; the session is in use until the answer ends. */
  async function handle(session: Session, request: FastifyRequest, reply: FastifyReply, body?: unknown): Promise<void> {
    reply.hijack();
    reply.raw.once('close', sessions.begin(session));
    await session.transport.handleRequest(request.raw, reply.raw, body);
  }

  app.post(
    '/mcp',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'mcp',
        summary: 'MCP (Streamable HTTP): the `task` tool',
        description:
          'The service as an MCP server: `initialize` opens a session (`Mcp-Session-Id`), then `tools/list` shows one tool, `task`, ' +
          "whose input is the task tool's (`subagent_type` among GET /agents' types, `description`, `prompt`, `task_id`) plus " +
          '`parentTaskId` and `userId` (or the X-Parent-Task-Id and X-User-Id headers). A call runs the subagent and answers its ' +
          'compact TaskOutput; progress notifications while it runs; `notifications/cancelled` cancels it.',
      },
    },
    async (request, reply) => {
      let session = sessionOf(request);
      if (!session) {
        const loaded = await (sdk ??= loadSdk());
        const { StreamableHTTPServerTransport, isInitializeRequest } = loaded;
        if (!isInitializeRequest(request.body)) {
          throw new AppError(400, 'invalid_request', 'an MCP request without an Mcp-Session-Id header must be an initialize request');
        }
        const refused = sessions.refusal(request.tenant, request.keyFingerprint);
        if (refused) throw new AppError(refused.status, refused.code, refused.message, undefined, { 'retry-after': String(refused.retryAfterS) });
        const tenant = request.tenant;
        const server = serverFor(loaded, tenant);
        // The id is known before the initialize is answered, so the session's place is taken
        // now: concurrent initializes cannot all pass the caps before any of them is counted.
        const id = randomUUID();
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id });
        const opened: Session = { transport, server, tenant, key: request.keyFingerprint, lastSeen: Date.now(), open: 0 };
        sessions.add(id, opened);
        transport.onclose = () => {
          sessions.remove(id);
          void server.close().catch(() => {});
        };
        // An initialize the SDK refused opened no session: its place is given back.
        reply.raw.once('close', () => {
          if (transport.sessionId === undefined) void transport.close().catch(() => {});
        });
        await server.connect(transport);
        session = opened;
      }
      await handle(session, request, reply, request.body);
    },
  );

  // The session's own stream (server-to-client messages outside a call) and its end.
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      // Any key reads the stream; ending a session is a write, as calling a tool is.
      config: { access: method === 'GET' ? 'read' : 'submit' },
      schema: {
        operationId: method === 'GET' ? 'mcpStream' : 'mcpEndSession',
        summary: method === 'GET' ? "MCP: a session's server-to-client stream (SSE)" : 'MCP: end a session',
      },
      handler: async (request, reply) => {
        const session = sessionOf(request);
        if (!session) throw new AppError(400, 'invalid_request', 'the Mcp-Session-Id header is required');
        await handle(session, request, reply);
      },
    });
  }
};

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** What a progress notification says of a task's event (its wire form: `{ type, data, ... }`); null for events not worth one. */
function progressMessage(type: string, json: string): string | null {
  const data = () => (JSON.parse(json) as { data: { step?: number; toolName?: string } }).data;
  if (type === 'step.started') return `step ${data().step}`;
  if (type === 'tool.call') return `running ${data().toolName}`;
  if (type === 'task.paused') return 'paused';
  if (type === 'task.resumed') return 'resumed';
  return null;
}
