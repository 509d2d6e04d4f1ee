import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { replayBodySchema, taskAcceptedSchema, taskIdParamsSchema } from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { errors, json } from './openapi.ts';

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
      const row = await tasks.replay(request.tenant, request.params.id, request.body);
      return reply
        .status(202)
        .header('location', `/tasks/${row.id}`)
        .send({ id: row.id, status: row.status, streamUrl: `/tasks/${row.id}/stream` });
    },
  );
};
