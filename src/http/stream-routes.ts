import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EventLog, ParentKey } from '../events/event-log.ts';
import type { StoredEvent } from '../events/event-types.ts';
import { createSocketFeed } from '../events/socket-feed.ts';
import type { TaskStore } from '../store/task-store.ts';
import { contextIdSchema, taskIdParamsSchema } from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { AppError } from '../errors/app-error.ts';
import { errors, websocketExtension } from './openapi.ts';

export interface StreamRoutesOptions {
  tasks: TaskService;
  store: TaskStore;
  events: EventLog;
  heartbeatMs: number;
  pingMs: number;
  maxBufferedBytes: number;
}

const REPLAY_PAGE = 500;

/** `?after=`: a plain decimal number (no sign, no spaces, no hex, no empty value), or absent. */
const cursorSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,14})$/, 'must be a whole number of 0 or more, in plain decimal')
  .optional()
  .transform((v) => (v === undefined ? undefined : Number(v)));
/** A task stream's `?after=`: 0 when absent. */
const afterSchema = cursorSchema.transform((v) => v ?? 0);

/** A plain HTTP request on a WebSocket route gets a contract error, not an empty 404. */
async function upgradeRequired(): Promise<never> {
  throw new AppError(426, 'upgrade_required', 'this route is a WebSocket: connect with an Upgrade: websocket request', undefined, {
    upgrade: 'websocket',
  });
}

/** A parent's stored events after the cursor `after`, page by page. */
async function* storedParentEvents(events: EventLog, key: ParentKey, after: number): AsyncGenerator<StoredEvent> {
  for (let from = after; ; ) {
    const page = await events.readParent(key, from, REPLAY_PAGE);
    yield* page;
    if (page.length < REPLAY_PAGE) return;
    from = page[page.length - 1].parentSeq!;
  }
}

/** A task's stored events after `after`, read page by page as the consumer advances. */
async function* storedEvents(events: EventLog, taskId: string, after: number): AsyncGenerator<StoredEvent> {
  for (let from = after; ; ) {
    const page = await events.read(taskId, from, REPLAY_PAGE);
    yield* page;
    if (page.length < REPLAY_PAGE) return;
    from = page[page.length - 1].seq;
  }
}

export const streamRoutes: FastifyPluginAsyncZod<StreamRoutesOptions> = async (app, opts) => {
  const { tasks, store, events } = opts;
  const feedOptions = { heartbeatMs: opts.heartbeatMs, pingMs: opts.pingMs, maxBufferedBytes: opts.maxBufferedBytes };

  app.route({
    method: 'GET',
    url: '/tasks/:id/stream',
    config: { acceptsQueryToken: true },
    handler: upgradeRequired,
    schema: {
      operationId: 'streamTask',
      summary: 'Progress events of one task (WebSocket)',
      description:
        'Replays every stored event with seq > after, then live events; heartbeats while idle; closes with 1000 after task.finished.',
      params: taskIdParamsSchema,
      querystring: z.object({ after: afterSchema }),
      response: errors(400, 404, 426),
      ...websocketExtension,
    },
    // Refuse an unknown (or another tenant's) task with a 404 before the upgrade.
    preHandler: async (request) => {
      await tasks.get(request.tenant, (request.params as { id: string }).id);
    },
    wsHandler: async (socket, request) => {
      const { id } = request.params as { id: string };
      const { after } = request.query as { after: number };
      const feed = createSocketFeed({ socket, taskId: id, closeOnFinish: true, progress: () => tasks.progress(id), ...feedOptions });
      feed.onStop(events.subscribe(id, (event) => feed.send(event)));
      await feed.replay(storedEvents(events, id, after));
    },
  });

  app.route({
    method: 'GET',
    url: '/stream',
    config: { acceptsQueryToken: true },
    handler: upgradeRequired,
    schema: {
      operationId: 'streamParent',
      summary: 'Progress events of every task of a parent task (WebSocket)',
      description:
        "Events of every task of the parent, each with its own task's seq and with parentSeq, its place among the " +
        'parent\'s events. With ?after=<parentSeq> it replays every stored event after that cursor (finished tasks ' +
        "included), so a reader that reconnects misses nothing; without it, the stored events of the parent's " +
        'unfinished tasks. Then live events. Stays open until the client closes it.',
      querystring: z.object({ parentTaskId: contextIdSchema, after: cursorSchema }),
      response: errors(400, 426),
      ...websocketExtension,
    },
    wsHandler: async (socket, request) => {
      const { parentTaskId, after } = request.query as { parentTaskId: string; after?: number };
      const key = { tenant: request.tenant, parentTaskId };
      const feed = createSocketFeed({ socket, ...feedOptions });
      feed.onStop(events.subscribeParent(key, (event) => feed.send(event)));
      await feed.replay(
        after !== undefined
          ? storedParentEvents(events, key, after)
          : (async function* () {
              for (const task of await store.unfinishedOfParent(request.tenant, parentTaskId)) yield* storedEvents(events, task.id, 0);
            })(),
      );
    },
  });
};
