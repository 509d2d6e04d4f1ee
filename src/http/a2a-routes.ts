import { A2A_VERSION_HEADER, AGENT_CARD_PATH, formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { A2A_PATH, agentCardJson, agentCardOf, LEGACY_VERSION } from '../a2a/card.ts';
import { CALL_STATE, createA2aHandler, type A2aHandlerDeps, type CallState } from '../a2a/handler.ts';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { errors } from './openapi.ts';

export interface A2aRoutesOptions extends Omit<A2aHandlerDeps, 'card'> {
  registry: AgentRegistry;
  authRequired: boolean;
  /** PUBLIC_URL: the origin clients reach the service at; else taken from each request. */
  publicUrl: string | undefined;
  version: string;
}

/**
 * The Agent2Agent protocol: the agent card at `/.well-known/agent-card.json` and JSON-RPC at
 * `POST /a2a` (v1.0 with an `A2A-Version: 1.0` header; v0.3 method names without one), answered
 * by the official SDK's transport handlers over subagentd's own request handler. Streaming calls
 * answer with server-sent events. Auth and tenants are the service's (the card is public).
 */
export const a2aRoutes: FastifyPluginAsyncZod<A2aRoutesOptions> = async (app, opts) => {
  const agents = () => opts.registry.list();
  const cardJson = (origin: string) => agentCardJson({ origin, agents: agents(), authRequired: opts.authRequired, version: opts.version });
  const handler = createA2aHandler({ ...opts, card: () => agentCardOf(cardJson(opts.publicUrl ?? 'http://localhost')) });
  const v1 = new JsonRpcTransportHandler(handler);
  const v03 = new LegacyJsonRpcTransportHandler(handler);

  app.get(
    `/${AGENT_CARD_PATH}`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'getAgentCard',
        summary: 'The A2A agent card',
        description: 'One skill per subagent type; the JSON-RPC endpoint for A2A v1.0 and v0.3. Public, like /healthz.',
        security: [],
        response: {
          200: { description: 'The agent card (A2A v1.0, with the v0.3 fields too)', content: { 'application/json': { schema: z.looseObject({}) } } },
        },
      },
    },
    async (request, reply) => reply.header('cache-control', 'public, max-age=60').send(cardJson(opts.publicUrl ?? `${request.protocol}://${request.host}`)),
  );

  app.post(
    A2A_PATH,
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'a2aJsonRpc',
        summary: 'A2A JSON-RPC endpoint',
        description:
          'A2A v1.0 (send `A2A-Version: 1.0`; SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, ' +
          'and the TaskPushNotificationConfig methods) or v0.3 (no header; message/send, message/stream, tasks/get, tasks/cancel, ' +
          'tasks/resubscribe, tasks/pushNotificationConfig/*). Streaming methods answer text/event-stream. Errors are JSON-RPC errors (HTTP 200).',
        body: z.looseObject({}).describe('A JSON-RPC 2.0 request'),
        response: {
          200: {
            description: 'A JSON-RPC response, or a text/event-stream of them for the streaming methods',
            content: { 'application/json': { schema: z.looseObject({}) }, 'text/event-stream': { schema: z.string() } },
          },
          ...errors(400, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const requestedVersion = (request.headers[A2A_VERSION_HEADER.toLowerCase()] as string | undefined) || LEGACY_VERSION;
      const legacy = requestedVersion.startsWith(LEGACY_VERSION);
      const gone = new AbortController();
      reply.raw.on('close', () => gone.abort());
      const state: CallState = { tenant: request.tenant, origin: opts.publicUrl ?? `${request.protocol}://${request.host}`, signal: gone.signal };
      const context = new ServerCallContext({ requestedVersion, state: new Map([[CALL_STATE, state]]) });
      const body = request.body as { id?: string | number | null };
      const failure = (err: unknown) => ({
        jsonrpc: '2.0' as const,
        id: body.id ?? null,
        error: legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err) : JsonRpcTransportHandler.mapToJSONRPCError(err),
      });
      let result: Awaited<ReturnType<JsonRpcTransportHandler['handle']>>;
      try {
        validateVersion(requestedVersion, await handler.getAgentCard(), 'JSONRPC');
        result = await (legacy ? v03 : v1).handle(request.body, context);
      } catch (err) {
        return reply.send(failure(err));
      }
      if (!(Symbol.asyncIterator in result)) return reply.send(result);
      // A stream: its first event (or its error) decides between an event stream and one answer.
      const events = result[Symbol.asyncIterator]();
      let first: IteratorResult<unknown>;
      try {
        first = await events.next();
      } catch (err) {
        return reply.send(failure(err));
      }
      reply.hijack();
      reply.raw.writeHead(200, SSE_HEADERS);
      gone.signal.addEventListener('abort', () => void events.return?.(undefined));
      try {
        if (!first.done) reply.raw.write(formatSSEEvent(first.value));
        for (let next = await events.next(); !next.done; next = await events.next()) reply.raw.write(formatSSEEvent(next.value));
      } catch (err) {
        if (!reply.raw.writableEnded) reply.raw.write(formatSSEErrorEvent(failure(err)));
      } finally {
        reply.raw.end();
      }
    },
  );
};
