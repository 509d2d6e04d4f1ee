import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { toTaskOutput } from '../tasks/task-output';
import {
  createTaskBodySchema,
  createTaskQuerySchema,
  listTasksQuerySchema,
  taskAcceptedSchema,
  taskIdParamsSchema,
  taskListSchema,
  taskOutputSchema,
} from '../tasks/task-schemas';
import type { TaskService } from '../tasks/task-service';
import { errorResponses } from './error-schema';

const idempotencyHeaders = z.object({
  'idempotency-key': z.string().min(1).max(255).optional(),
});

export const tasksRoutes: FastifyPluginAsyncZod<{ tasks: TaskService }> = async (app, { tasks }) => {
  app.post(
    '/tasks',
    {
      schema: {
        summary: 'Run a subagent task',
        description:
          'Answers 202 with the task id and its stream URL; with ?wait=true holds the response until the task ends ' +
          'and answers 200 with the TaskOutput. A repeated Idempotency-Key with the same body answers 200 with the first task.',
        body: createTaskBodySchema,
        querystring: createTaskQuerySchema,
        headers: idempotencyHeaders,
        response: { 200: taskOutputSchema, 202: taskAcceptedSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { row, created } = tasks.submit(request.tenant, request.body, request.headers['idempotency-key']);
      if (request.query.wait === 'true') {
        const ended = await tasks.waitForEnd(row.id);
        return reply.status(200).send(toTaskOutput(ended));
      }
      if (!created) return reply.status(200).send(toTaskOutput(row));
      return reply
        .status(202)
        .header('location', `/tasks/${row.id}`)
        .send({ id: row.id, status: row.status, streamUrl: `/tasks/${row.id}/stream` });
    },
  );

  app.get(
    '/tasks',
    {
      schema: {
        summary: 'List tasks, newest first',
        querystring: listTasksQuerySchema,
        response: { 200: taskListSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { limit, cursor, ...filter } = request.query;
      const page = tasks.list(request.tenant, filter, limit, cursor);
      return { tasks: page.rows.map(toTaskOutput), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/tasks/:id',
    {
      schema: {
        summary: 'Get a task',
        params: taskIdParamsSchema,
        response: { 200: taskOutputSchema, ...errorResponses },
      },
    },
    async (request) => toTaskOutput(tasks.get(request.tenant, request.params.id)),
  );

  app.post(
    '/tasks/:id/cancel',
    {
      schema: {
        summary: 'Cancel a task (idempotent)',
        description: 'A queued or running task ends `aborted` with code `cancelled`; a finished one is returned as it is.',
        params: taskIdParamsSchema,
        response: { 202: taskOutputSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.status(202).send(toTaskOutput(tasks.cancel(request.tenant, request.params.id))),
  );
};
