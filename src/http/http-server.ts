import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import websocket from '@fastify/websocket';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError } from '../errors/app-error.ts';
import type { Services } from '../services.ts';
import { a2aRoutes } from './a2a-routes.ts';
import { agentsRoutes } from './agents-routes.ts';
import { budgetsRoutes } from './budgets-routes.ts';
import { webhooksRoutes } from './webhooks-routes.ts';
import { redactUrl, registerAuth } from './auth.ts';
import { declareRouteAccess } from './route-access.ts';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './error-handler.ts';
import { healthRoutes } from './health-routes.ts';
import { registerOpenApi } from './openapi.ts';
import { uiRoutes } from './ui-routes.ts';
import { accessRoutes, registerAudit } from './access-routes.ts';
import { SERVICE_VERSION } from '../version.ts';
import { streamRoutes } from './stream-routes.ts';
import { tasksRoutes } from './tasks-routes.ts';
import { usageRoutes } from './usage-routes.ts';
import { workspacesRoutes } from './workspaces-routes.ts';
import { memoryRoutes } from './memory-routes.ts';
import { mcpRoutes } from './mcp-routes.ts';
import { worktreeRoutes } from './worktree-routes.ts';
import { replayRoutes } from './replay-routes.ts';

/** Trusts the `hops` nearest proxies (proxy-addr's hop index counts from the TCP peer, 0). */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

/**
 * The HTTP layer over the services: limits, auth, rate limits, load shedding, the OpenAPI
 * document and every route. Closing the server closes the services.
 */
export async function createHttpServer(services: Services): Promise<FastifyInstance> {
  const { config, logger, tasks, store, events, metrics, storage, registry, usage, workspacesDirOf } = services;
  const server = Fastify({
    // pino's Logger is a FastifyBaseLogger; said so, the instance keeps Fastify's default logger type.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: logger.child(
      {},
      {
        serializers: {
          req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), ip: req.ip }),
        },
      },
    ) as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    // request.ip (rate limits, the auth lockout) is the client's, not a proxy's (TRUST_PROXY).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
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
  metrics.watchStreams('websocket', () => server.websocketServer.clients.size);
  // Requests that arrive together (a fan-out's thousand submits in one read of the sockets) are
  // taken in turns of the event loop's shared slice: past it, the rest wait for the next turns, in
  // the order they came, while timers, streams and model answers get theirs.
  server.addHook('onRequest', (_request, _reply, done) => {
    const turn = services.slices.requests.enter();
    if (turn) void turn.then(() => done());
    else done();
  });
  // Node's close() waits for a connection that has not sent its first request yet (a client's
  // pre-opened or pooled connection) until the header timeout; there is nothing to finish on one.
  const fresh = new Set<import('node:net').Socket>();
  server.server.on('connection', (socket) => {
    fresh.add(socket);
    socket.once('close', () => fresh.delete(socket));
  });
  server.server.on('request', (request) => fresh.delete(request.socket));
  server.server.on('upgrade', (request) => fresh.delete(request.socket));
  server.addHook('preClose', async () => {
    for (const socket of fresh) socket.destroy();
  });
  // Before any route: each says who may call it, and the server does not start if one does not.
  const access = declareRouteAccess(server);
  registerAuth(server, {
    apiKeys: config.apiKeys,
    metricsToken: config.metricsToken,
    maxFailuresPerMinute: config.authFailuresPerMinute,
    storedKeys: services.access,
  });
  registerAudit(server, services.access, Date.now);
  // Per tenant (per client address while auth is off); runs after auth has named the tenant.
  // Liveness and scrapes are exempt: a monitor must not eat a tenant's share, nor go blind when
  // a tenant (or, with auth off, the address it shares with clients) is at its limit.
  await server.register(rateLimit, {
    max: config.rateLimitPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => (config.apiKeys ? `tenant:${request.tenant}` : `ip:${request.ip}`),
    allowList: (request) => request.routeOptions.url === '/healthz' || request.routeOptions.config.access === 'metrics',
    errorResponseBuilder: (_request, context) =>
      new AppError(429, 'rate_limited', `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`),
  });
  // Shed load with 503 while the event loop is saturated, instead of answering everything late.
  // (A loop blocked for a whole sample interval counts as saturated.) 0 turns shedding off.
  if (config.maxEventLoopDelayMs > 0)
    await server.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      retryAfter: 5,
      pressureHandler: (_request, reply, type, value) => {
        reply.header('retry-after', '5');
        throw new AppError(503, 'overloaded', `the service is overloaded (${type}: ${value}); retry shortly`);
      },
    });

  await registerOpenApi(server, { isPublic: access.isPublicPath });

  await server.register(uiRoutes);
  await server.register(healthRoutes, { metrics, storage, recovered: () => services.recovered });
  await server.register(agentsRoutes, { registry, skills: services.skills });
  await server.register(tasksRoutes, { tasks, keepAliveMs: config.heartbeatMs });
  await server.register(worktreeRoutes, { tasks });
  await server.register(replayRoutes, { tasks });
  await server.register(mcpRoutes, { tasks, events, registry, logger, limits: config.mcp });
  await server.register(usageRoutes, { usage });
  await server.register(budgetsRoutes, { budgets: services.budgets, now: Date.now });
  await server.register(webhooksRoutes, {
    webhooks: services.webhooks,
    allowPrivate: config.webhooks.allowPrivate,
    maxPerTenant: config.webhooks.maxPerTenant,
    now: Date.now,
  });
  await server.register(a2aRoutes, {
    tasks,
    events,
    webhooks: services.webhooks,
    allowPrivateTargets: config.webhooks.allowPrivate,
    now: Date.now,
    registry,
    authRequired: config.apiKeys !== null,
    publicUrl: config.publicUrl,
    version: SERVICE_VERSION,
  });
  await server.register(workspacesRoutes, { workspacesDirOf, maxUploadBytes: config.maxUploadBytes });
  await server.register(memoryRoutes, { workspacesDirOf, maxUploadBytes: config.maxUploadBytes, memoryMaxBytes: config.memoryMaxBytes });
  await server.register(accessRoutes, {
    tasks,
    lifecycle: services.lifecycle,
    access: services.access,
    authRequired: config.apiKeys !== null,
    now: Date.now,
  });
  await server.register(streamRoutes, {
    metrics,
    tasks,
    store,
    events,
    heartbeatMs: config.heartbeatMs,
    pingMs: config.wsPingMs,
    maxBufferedBytes: config.wsMaxBufferedBytes,
  });

  server.addHook('onClose', () => services.close());
  return server;
}
