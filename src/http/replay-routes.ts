import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { taskAcceptedSchema, taskIdParamsSchema, taskStatusSchema } from '../shapes/task.ts';
import { replayBatchBodySchema, replayBodySchema, replayStateSchema, replayVariantSchema } from '../shapes/replay.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { errors, json } from './openapi.ts';
import { accepted } from './tasks-routes.ts';

const replayBatchSchema = z.object({
  id: z.string(),
  status: z.enum(['running', 'completed']).describe('running while one of its replays has not ended'),
  createdAt: z.string(),
  rows: z.array(
    z.object({
      taskId: z.string().describe('the task replayed'),
      variant: replayVariantSchema,
      replayTaskId: z.string().nullable().describe('the replay; null when it could not start (see error)'),
      status: z
        .union([taskStatusSchema, z.literal('refused'), z.literal('not_started')])
        .describe("the replay's; refused (see error), or not_started when the service stopped before it"),
      replay: replayStateSchema.nullable().describe("the replay's state, its comparison once it ended"),
      error: z.object({ code: z.string(), message: z.string() }).nullable().describe('why the replay did not start (queue_full, ...)'),
    }),
  ),
});

const replayBatchListSchema = z.object({
  batches: z.array(
    z.object({
      id: z.string(),
      createdAt: z.string(),
      variants: z.array(replayVariantSchema),
      replays: z.number().int().describe('the rows: one per task and variant'),
    }),
  ),
  nextCursor: z.string().nullable(),
});

/** Replays: a finished model task run again on another model or definition, its recorded tool results answering. */
export const replayRoutes: FastifyPluginAsyncZod<{ tasks: TaskService }> = async (app, { tasks }) => {
  app.post(
    '/tasks/:id/replay',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'replayTask',
        summary: 'Run a finished model task again on another model or definition',
        description:
          'A new task (TaskOutput `replayOf`, `replay`) runs the original prompt, with its context, fork messages and earlier ' +
          "conversation, on `model` or `subagent_type` (default: the original's), in a worktree copy of the workspace: nothing it " +
          'runs touches the shared one (POST /tasks/{id}/apply writes its changes back). With `tools: "recorded"` (the default) a call ' +
          "whose name and input equal the original's call at the same position is answered from the original's transcript and not " +
          'run (event `tool.replayed`); the first that differs emits `replay.diverged` and every call from then on runs. Once it ends, ' +
          '`replay.comparison` sets it against the original. 404 unknown task, 409 task_not_finished, 409 task_purged, ' +
          '400 not_replayable (a shell or ACP task).',
        params: taskIdParamsSchema,
        body: replayBodySchema,
        response: {
          202: json('Accepted: the replay, queued or running; follow it on streamUrl', taskAcceptedSchema),
          ...errors(400, 404, 409, 429, 503, 507),
        },
      },
    },
    async (request, reply) => {
      return accepted(reply, await tasks.replays.one(request.tenant, request.params.id, request.body));
    },
  );

  app.post(
    '/replays',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'startReplays',
        summary: 'Replay several finished tasks, each on every variant',
        description:
          "One replay (as POST /tasks/{id}/replay) per task and variant: the tasks named in `taskIds`, or the tenant's finished " +
          'model tasks that match `filter`, oldest first, as many as the batch holds (at most 100 replays in all). Every pair is ' +
          'checked before any starts (404, 409 and 400 as for one replay). Each replay is a task within the queue and the budgets: ' +
          'one the queue has no room for is a row with its refusal. GET /replays/{id} answers the rows.',
        body: replayBatchBodySchema,
        response: { 202: json('Accepted: the batch', z.object({ id: z.string() })), ...errors(400, 404, 409, 503, 507) },
      },
    },
    async (request, reply) => reply.status(202).send({ id: await tasks.replays.start(request.tenant, request.body) }),
  );

  app.get(
    '/replays',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'listReplays',
        summary: "The tenant's batches of replays, newest first",
        description: 'Each batch with its variants and how many replays it holds; GET /replays/{id} answers its rows. Paged as GET /tasks is.',
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z.string().max(64).optional().describe("the last page's nextCursor"),
        }),
        response: { 200: json('A page of batches', replayBatchListSchema), ...errors(400) },
      },
    },
    async (request) => tasks.replays.list(request.tenant, request.query.limit, request.query.cursor),
  );

  app.get(
    '/replays/:id',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getReplays',
        summary: 'A batch of replays: one row per task and variant, with each comparison',
        params: z.object({ id: z.string().min(1).max(256).describe('a batch id (rpb_<ulid>)') }),
        response: {
          200: json('The batch as it is now', replayBatchSchema),
          ...errors(404),
        },
      },
    },
    async (request) => tasks.replays.get(request.tenant, request.params.id),
  );
};
