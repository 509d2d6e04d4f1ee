import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EventLog } from '../events/event-log.ts';
import { createFeed, type FeedSink } from '../events/feed.ts';
import { socketSink } from '../events/socket-sink.ts';
import { SSE_HEADERS, sseSink } from '../events/sse-sink.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { TaskStore } from '../store/task-store.ts';
import { contextIdSchema, isEndedStatus, taskIdParamsSchema } from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { AppError } from '../errors/app-error.ts';
import { errors, websocketExtension } from './openapi.ts';

export interface StreamRoutesOptions {
  metrics: Metrics;
  tasks: TaskService;
  store: TaskStore;
  events: EventLog;
  heartbeatMs: number;
  pingMs: number;
  maxBufferedBytes: number;
}

const eventStreamResponse = {
  description: 'An event stream: each event `id: <cursor>`, `event: <type>`, `data: <StreamMessage JSON>`',
  content: { 'text/event-stream': { schema: z.string() } },
};

/** `?after=`: a plain decimal number (no sign, no spaces, no hex, no empty value), or absent. */
const cursorSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,14})$/, 'must be a whole number of 0 or more, in plain decimal')
  .optional()
  .transform((v) => (v === undefined ? undefined : Number(v)));
/** A task stream's `?after=`: 0 when absent. */
const afterSchema = cursorSchema.transform((v) => v ?? 0);

/** An event stream's reconnection: `Last-Event-ID` is the last `id:` the reader got, and wins over `?after=`. */
const lastEventIdSchema = z.object({ 'last-event-id': cursorSchema }).describe('Sent by EventSource when it reconnects');

/** A plain HTTP request on a WebSocket route gets a contract error, not an empty 404. */
async function upgradeRequired(): Promise<never> {
  throw new AppError(426, 'upgrade_required', 'this route is a WebSocket: connect with an Upgrade: websocket request', undefined, {
    upgrade: 'websocket',
  });
}

export const streamRoutes: FastifyPluginAsyncZod<StreamRoutesOptions> = async (app, opts) => {
  const { tasks, store, events } = opts;
  const feedOptions = { heartbeatMs: opts.heartbeatMs, maxBufferedBytes: opts.maxBufferedBytes };
  /** Open event-stream responses, ended when the service closes (a server waits for open responses). */
  const open = new Set<FeedSink>();
  opts.metrics.watchStreams('sse', () => open.size);
  app.addHook('preClose', async () => {
    for (const sink of open) sink.close(1001, 'the service is shutting down; reconnect with Last-Event-ID');
  });

  /** A task's feed on `sink`: stored events after `after`, then live ones; ends after task.finished. */
  function feedTask(sink: FeedSink, id: string, after: number) {
    const feed = createFeed({ sink, taskId: id, closeOnFinish: true, progress: () => tasks.progress(id), ...feedOptions });
    feed.onStop(events.subscribe(id, (event) => feed.send(event)));
    return feed.replay(events.replay(id, after));
  }

  /** A parent's feed on `sink`: after the cursor, or the parent's unfinished tasks; stays open. */
  function feedParent(sink: FeedSink, tenant: string, parentTaskId: string, after: number | undefined) {
    const key = { tenant, parentTaskId };
    const feed = createFeed({ sink, ...feedOptions });
    feed.onStop(events.subscribeParent(key, (event) => feed.send(event)));
    return feed.replay(
      after !== undefined
        ? events.replayParent(key, after)
        : (async function* () {
            for (const task of await store.unfinishedOfParent(tenant, parentTaskId)) yield* events.replay(task.id, 0);
          })(),
    );
  }

  /** Takes the response over as an event stream; `retry:` tells EventSource how soon to reconnect. */
  function eventStream(reply: FastifyReply, cursor: 'seq' | 'parentSeq'): FeedSink {
    reply.hijack();
    reply.raw.writeHead(200, SSE_HEADERS);
    reply.raw.write('retry: 1000\n\n');
    const sink = sseSink(reply.raw, cursor);
    open.add(sink);
    sink.onGone(() => open.delete(sink));
    return sink;
  }

  app.route({
    method: 'GET',
    url: '/tasks/:id/stream',
    config: { access: 'read', acceptsQueryToken: 'websocket' },
    handler: upgradeRequired,
    schema: {
      operationId: 'streamTask',
      summary: 'Progress events of one task (WebSocket)',
      description: 'Replays every stored event with seq > after, then live events; heartbeats while idle; closes with 1000 after task.finished.',
      params: taskIdParamsSchema,
      querystring: z.object({ after: afterSchema }),
      response: errors(400, 404, 426),
      ...websocketExtension,
    },
    // Refuse an unknown (or another tenant's) task with a 404 before the upgrade.
    preHandler: async (request) => {
      await tasks.get(request.tenant, request.params.id);
    },
    wsHandler: async (socket, request) => {
      const { id } = request.params;
      const { after } = request.query;
      // An ended task with nothing after the cursor (read to its end, or purged): nothing will come.
      const task = await tasks.get(request.tenant, id);
      if (isEndedStatus(task.status) && (await events.read(id, after, 1)).length === 0) {
        socket.close(1000, 'the task has ended; nothing follows the cursor');
        return;
      }
      await feedTask(socketSink(socket, opts.pingMs), id, after);
    },
  });

  app.route({
    method: 'GET',
    url: '/stream',
    config: { access: 'read', acceptsQueryToken: 'websocket' },
    handler: upgradeRequired,
    schema: {
      operationId: 'streamParent',
      summary: 'Progress events of every task of a parent task (WebSocket)',
      description:
        "Events of every task of the parent, each with its own task's seq and with parentSeq, its place among the " +
        "parent's events. With ?after=<parentSeq> it replays every stored event after that cursor (finished tasks " +
        "included), so a reader that reconnects misses nothing; without it, the stored events of the parent's " +
        'unfinished tasks. Then live events. Stays open until the client closes it.',
      querystring: z.object({ parentTaskId: contextIdSchema, after: cursorSchema }),
      response: errors(400, 426),
      ...websocketExtension,
    },
    wsHandler: async (socket, request) => {
      const { parentTaskId, after } = request.query as { parentTaskId: string; after?: number };
      await feedParent(socketSink(socket, opts.pingMs), request.tenant, parentTaskId, after);
    },
  });

  app.get(
    '/tasks/:id/events',
    {
      config: { access: 'read', acceptsQueryToken: 'always' },
      schema: {
        operationId: 'taskEvents',
        summary: 'Progress events of one task (server-sent events)',
        description:
          'The messages of `/tasks/{id}/stream` as `text/event-stream`: `id:` is the seq, `event:` the type, `data:` the ' +
          'StreamMessage JSON; heartbeats are comments (`: {"type":"heartbeat",...}`). Replays the stored events after ' +
          '`Last-Event-ID` (or `?after=`), then live ones, and ends after task.finished. A finished task with nothing ' +
          'after the cursor answers 204, which tells an EventSource to stop reconnecting. `?access_token=` may stand ' +
          'in for the Authorization header (EventSource cannot set it).',
        params: taskIdParamsSchema,
        querystring: z.object({ after: afterSchema }),
        headers: lastEventIdSchema,
        response: { 200: eventStreamResponse, 204: z.undefined().describe('The task has ended and nothing follows the cursor'), ...errors(400, 404) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const after = request.headers['last-event-id'] ?? request.query.after;
      const task = await tasks.get(request.tenant, id);
      if (isEndedStatus(task.status) && (await events.read(id, after, 1)).length === 0) return reply.code(204).send();
      await feedTask(eventStream(reply, 'seq'), id, after);
    },
  );

  app.get(
    '/events',
    {
      config: { access: 'read', acceptsQueryToken: 'always' },
      schema: {
        operationId: 'parentEvents',
        summary: 'Progress events of every task of a parent task (server-sent events)',
        description:
          "The messages of `/stream` as `text/event-stream`, `id:` being each event's parentSeq, so an EventSource that " +
          "reconnects with `Last-Event-ID` misses nothing. Without a cursor: the stored events of the parent's " +
          'unfinished tasks, then live ones. Stays open until the client closes it.',
        querystring: z.object({ parentTaskId: contextIdSchema, after: cursorSchema }),
        headers: lastEventIdSchema,
        response: { 200: eventStreamResponse, ...errors(400) },
      },
    },
    async (request, reply) => {
      const after = request.headers['last-event-id'] ?? request.query.after;
      await feedParent(eventStream(reply, 'parentSeq'), request.tenant, request.query.parentTaskId, after);
    },
  );
};
