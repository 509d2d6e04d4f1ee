import path from 'node:path';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import websocket from '@fastify/websocket';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import {
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import pino, { type Logger } from 'pino';
import { builtinAgents, createAgentRegistry, type AgentRegistry } from './definitions/agent-registry.ts';
import { loadAgentFiles } from './definitions/load-agent-files.ts';
import { createModelProvider, type ModelProvider } from './loop/model-provider.ts';
import type { Config } from './config/config.ts';
import { createEventLog, type EventLog } from './events/event-log.ts';
import { agentsRoutes } from './http/agents-routes.ts';
import { AppError } from './errors/app-error.ts';
import { isPublic, redactUrl, registerAuth } from './http/auth.ts';
import { registerOpenApi } from './http/openapi.ts';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './http/error-handler.ts';
import { streamRoutes } from './http/stream-routes.ts';
import { healthRoutes } from './http/health-routes.ts';
import { tasksRoutes } from './http/tasks-routes.ts';
import { usageRoutes } from './http/usage-routes.ts';
import { workspacesRoutes } from './http/workspaces-routes.ts';
import { createMetrics } from './metrics/metrics.ts';
import type { Db } from './store/database.ts';
import { createTaskStore } from './store/task-store.ts';
import { createSqlReader } from './store/read-worker.ts';
import { createStorageGuard } from './store/storage-guard.ts';
import { createUsageStore } from './store/usage-store.ts';
import { createTaskRunner } from './tasks/task-runner.ts';
import { createTaskService, type TaskService } from './tasks/task-service.ts';
import { createSandbox, type Sandbox } from './tools/sandbox.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  /** Defaults to the OpenAI-compatible provider of the config. */
  modelProvider?: ModelProvider;
  /** Defaults to extra definitions loaded by the caller, on top of the built-ins. */
  agents?: AgentRegistry;
  logger?: Logger;
  now?: () => number;
  /** Defaults to the sandbox BASH_SANDBOX asks for, hiding the service's own folders. */
  sandbox?: Sandbox;
}

export interface App {
  server: FastifyInstance;
  tasks: TaskService;
  events: EventLog;
  registry: AgentRegistry;
  /** Ends or re-queues what a previous process left unfinished. */
  recover(): { interrupted: number; requeued: number };
}

/** The built-in definitions, overridden by type by the valid `AGENTS_DIR/*.md` files. */
function loadRegistry(config: Config, logger: Logger): AgentRegistry {
  const names = { defaultModel: config.defaultModel, smallModel: config.smallModel };
  const loaded = loadAgentFiles(config.agentsDir, names);
  for (const e of loaded.errors) logger.error(e, `skipped subagent definition ${e.file}: ${e.field}: ${e.message}`);
  if (loaded.definitions.length > 0) {
    logger.info({ types: loaded.definitions.map((d) => d.type), dir: config.agentsDir }, 'loaded subagent definitions');
  }
  return createAgentRegistry([...builtinAgents(names), ...loaded.definitions]);
}

/**
 * Builds the service from explicit dependencies: stores over `db`, the event log, the task
 * service and every route. No module-level state, so tests may build as many apps as they like.
 * Tasks a previous process left unfinished are recovered by `recover()`, which the process calls
 * once it listens (so a start that fails, e.g. on a port in use, touches no task).
 */
export async function createApp(deps: AppDeps): Promise<App> {
  const { config, db } = deps;
  const now = deps.now ?? Date.now;
  const logger =
    deps.logger ??
    pino({ level: config.logLevel, redact: ['req.headers.authorization', 'headers.authorization'] });
  const registry = deps.agents ?? loadRegistry(config, logger);
  const modelProvider =
    deps.modelProvider ??
    createModelProvider({
      apiKey: config.openaiApiKey,
      baseURL: config.openaiBaseUrl,
      api: config.openaiApi,
      stallTimeoutMs: config.modelStallTimeoutMs,
      onHttpError: (status) => metrics.providerHttpError(status),
    });
  const workspacesDirOf = (tenant: string) =>
    // With tenants, each gets its own folder; `@` cannot occur in a parentTaskId, so names never collide.
    config.apiKeys ? path.join(config.workspacesDir, `@${tenant}`) : config.workspacesDir;

  const sandbox =
    deps.sandbox ??
    createSandbox({
      mode: config.bashSandbox,
      hide: [process.cwd(), path.dirname(path.resolve(config.databasePath)), config.workspacesDir, config.agentsDir],
      maxProcesses: config.sandboxMaxProcesses,
      maxFileBytes: config.sandboxMaxFileBytes,
      maxMemoryBytes: config.sandboxMaxMemoryBytes,
      tmpBytes: config.sandboxTmpBytes,
    });
  if (sandbox.kind === 'unavailable' && config.bashSandbox === 'bwrap') {
    throw new Error(`BASH_SANDBOX=bwrap but ${sandbox.reason}`);
  }
  if (sandbox.kind === 'unavailable') logger.error({ reason: sandbox.reason }, 'bash and shell tasks are refused');
  if (sandbox.kind === 'none') logger.warn('BASH_SANDBOX=none: commands run without a sandbox, confined only by their working folder');
  if (sandbox.limiter?.reason) {
    logger.warn(
      { reason: sandbox.limiter.reason, pids: sandbox.limiter.pids, memory: sandbox.limiter.memory },
      'commands are capped by ulimit where a cgroup is missing: -u does not bind root, -v counts address space',
    );
  }

  const metrics = createMetrics({ defaultMetrics: true });
  const storage = createStorageGuard({
    probe: () => db.$client.pragma(`user_version = ${db.$client.pragma('user_version', { simple: true }) as number}`),
    onFault: (fault, err) => {
      logger.error({ fault, err }, 'the database cannot be written: new tasks are refused, running ones stopped; retrying every second');
      tasks.storageFailed(fault);
    },
    onRecover: () => {
      logger.warn('the database can be written again: admitting tasks');
      tasks.storageRecovered();
    },
  });
  metrics.watchStorage(() => ({ writable: storage.fault === null, waiting: storage.waiting }));
  const store = createTaskStore(db);
  const reader = createSqlReader(db, config.databasePath);
  const usage = createUsageStore(db, reader);
  const events = createEventLog(db, { now, storage });
  const runner = createTaskRunner({
    store,
    events,
    registry,
    modelProvider,
    metrics,
    logger,
    now,
    workspacesDirOf,
    limits: {
      bashTimeoutMs: config.bashTimeoutMs,
      bashMaxOutputBytes: config.bashMaxOutputBytes,
      modelMaxRetries: config.modelMaxRetries,
      modelStallTimeoutMs: config.modelStallTimeoutMs,
    },
    secrets: config.openaiApiKey ? [config.openaiApiKey] : [],
    sandbox,
    storage,
  });
  const tasks = createTaskService({
    store,
    events,
    registry,
    runner,
    metrics,
    logger,
    now,
    maxConcurrent: config.maxConcurrentTasks,
    maxQueued: config.maxQueuedTasks,
    maxConcurrentPerTenant: config.maxConcurrentPerTenant,
    maxQueuedPerTenant: config.maxQueuedPerTenant,
    taskTimeoutMs: config.taskTimeoutMs,
    storage,
  });

  const server = Fastify({
    loggerInstance: logger.child({}, {
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), ip: req.ip }),
      },
    }) as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    // A client gets REQUEST_TIMEOUT_MS to send its whole request (headers: HEADERS_TIMEOUT_MS), so
    // half-sent requests cannot pile up; a long ?wait=true answer is not limited by either.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: 72_000,
    // How often Node checks those timeouts (its default, 30 s, would let them overrun by as much).
    http: { connectionsCheckingInterval: 2_000 },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Per-request lines only at debug: a task's own start/end lines are what operators read.
    logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
  }).withTypeProvider<ZodTypeProvider>();
  server.server.headersTimeout = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(server);
  server.addHook('onResponse', async (request, reply) => {
    // The route pattern keeps the label set small; unknown routes share one label.
    metrics.httpRequest(request.routeOptions.url ?? 'unmatched', request.method, reply.statusCode, reply.elapsedTime / 1000);
  });
  // Before any hook that can refuse a request: the plugin's own onRequest hook marks upgrade
  // requests, so a refused upgrade's socket is destroyed once the error is answered.
  await server.register(websocket, {
    options: { maxPayload: 64 * 1024 },
    // Readers still open at shutdown (queued or paused tasks, parent streams) learn why, with a
    // code, instead of a bare close (1005): 1001 "going away", resume with ?after=<last seq>.
    preClose(done) {
      for (const client of server.websocketServer.clients) {
        client.close(1001, 'the service is shutting down; reconnect with ?after=<last seq>');
      }
      server.websocketServer.close(() => done());
    },
  });
  metrics.watchSockets(() => server.websocketServer.clients.size);
  registerAuth(server, { apiKeys: config.apiKeys, maxFailuresPerMinute: config.authFailuresPerMinute });
  server.addHook('onRequest', async () => {
    if (tasks.isClosing()) throw new AppError(503, 'shutting_down', 'the service is shutting down; retry shortly', undefined, { 'retry-after': '5' });
  });
  // Per tenant (per client address while auth is off); runs after auth has named the tenant.
  await server.register(rateLimit, {
    max: config.rateLimitPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => (config.apiKeys ? `tenant:${request.tenant}` : `ip:${request.ip}`),
    allowList: (request) => request.url === '/healthz',
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'rate_limited', `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`),
  });
  // Shed load with 503 while the event loop is saturated, instead of answering everything late.
  // (A loop blocked for a whole sample interval counts as saturated.) 0 turns shedding off.
  if (config.maxEventLoopDelayMs > 0) await server.register(underPressure, {
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    retryAfter: 5,
    pressureHandler: (_request, reply, type, value) => {
      reply.header('retry-after', '5');
      throw new AppError(503, 'overloaded', `the service is overloaded (${type}: ${value}); retry shortly`);
    },
  });

  await registerOpenApi(server, { isPublic });

  await server.register(healthRoutes, { metrics, storage });
  await server.register(agentsRoutes, { registry });
  await server.register(tasksRoutes, { tasks, keepAliveMs: config.heartbeatMs });
  await server.register(usageRoutes, { usage });
  await server.register(workspacesRoutes, { workspacesDirOf });
  await server.register(streamRoutes, {
    tasks,
    store,
    events,
    heartbeatMs: config.heartbeatMs,
    pingMs: config.wsPingMs,
    maxBufferedBytes: config.wsMaxBufferedBytes,
  });

  server.addHook('onClose', async () => {
    await tasks.close();
    events.flush();
    await reader.close();
    storage.close();
    sandbox.limiter?.close();
  });

  if (!config.apiKeys) logger.warn('API_KEYS is not set: authentication is off and every caller shares one tenant');
  return {
    server,
    tasks,
    events,
    registry,
    recover() {
      const recovered = tasks.recover();
      if (recovered.interrupted + recovered.requeued > 0) logger.warn(recovered, 'recovered unfinished tasks');
      return recovered;
    },
  };
}
