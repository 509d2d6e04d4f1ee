import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply } from 'fastify';
import type { TaskRow } from '../store/schema.ts';
import { z } from 'zod';
import {
  createTaskBodySchema,
  createTaskQuerySchema,
  listTasksQuerySchema,
  taskAcceptedSchema,
  taskIdParamsSchema,
  taskListSchema,
  taskOutputSchema,
  steeringBodySchema,
  taskMessagesSchema,
  resumeBodySchema,
  approvalBodySchema,
  toolResultBodySchema,
} from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { errors, json } from './openapi.ts';
import { TRACEPARENT } from '../telemetry/tracing.ts';

const idempotencyHeaders = z.object({
  'idempotency-key': z.string().min(1).max(255).optional(),
  traceparent: z.string().max(128).optional().describe('W3C Trace Context: the task span becomes a child of this one (with OpenTelemetry on)'),
});

export interface TasksRoutesOptions {
  tasks: TaskService;
  /** How often a `?wait=true` answer sends a space while the task runs. */
  keepAliveMs: number;
}

export const tasksRoutes: FastifyPluginAsyncZod<TasksRoutesOptions> = async (app, { tasks, keepAliveMs }) => {
  app.post(
    '/tasks',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'createTask',
        summary: 'Run a subagent task',
        description:
          'Answers 202 with the task id and its stream URL; with ?wait=true answers 200 with the TaskOutput once the task ends: ' +
          'the status line and headers (Location, X-Task-Id) go out at once and a space every few seconds keeps the ' +
          'connection alive (JSON allows leading whitespace), so any client can wait however long the task runs. ' +
          'A repeated Idempotency-Key with the same body answers 200 with the first task.',
        body: createTaskBodySchema,
        querystring: createTaskQuerySchema,
        headers: idempotencyHeaders,
        response: {
          200: json('With ?wait=true: the task once it ended. Without: the task an earlier request with this Idempotency-Key created', taskOutputSchema),
          202: json('Accepted: queued or running; follow it on streamUrl or with GET /tasks/{id}', taskAcceptedSchema),
          ...errors(400, 409, 413, 415, 507),
        },
      },
    },
    async (request, reply) => {
      // A malformed traceparent is ignored, as W3C Trace Context asks.
      const traceparent = request.headers.traceparent;
      const parent = typeof traceparent === 'string' && TRACEPARENT.test(traceparent) ? traceparent : undefined;
      const waiting = request.query.wait === 'true';
      const { row, created, ended } = await tasks.submit(request.tenant, request.body, {
        idempotencyKey: request.headers['idempotency-key'],
        traceParent: parent,
        waiting,
      });
      if (waiting) {
        if (row.status !== 'queued' && row.status !== 'running') return reply.status(200).send(tasks.output(row));
        const body = new PassThrough();
        // Headers now: the caller learns the task id even if it gives up waiting.
        reply.status(200).header('content-type', 'application/json; charset=utf-8').header('location', `/tasks/${row.id}`).header('x-task-id', row.id);
        body.write(' ');
        const keepAlive = setInterval(() => body.write(' '), keepAliveMs);
        reply.raw.once('close', () => clearInterval(keepAlive));
        void (ended ?? tasks.waitForEnd(row.id)).then(
          (last) => {
            clearInterval(keepAlive);
            body.end(JSON.stringify(tasks.output(last)));
          },
          // Its end could not be read (the database went away, the process is stopping): the 200 is
          // on its way, so the body says why in the error shape rather than leave the caller waiting.
          (err: unknown) => {
            clearInterval(keepAlive);
            const message = `the task's end could not be read (${err instanceof Error ? err.message : String(err)}); read GET /tasks/${row.id}`;
            body.end(JSON.stringify({ error: { code: 'storage_unavailable', message } }));
          },
        );
        // A stream is sent as it is (the 200 schema describes what it ends with).
        return reply.send(body as never);
      }
      if (!created) return reply.status(200).send(tasks.output(row));
      return accepted(reply, row);
    },
  );

  app.get(
    '/tasks',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'listTasks',
        summary: 'List tasks, newest first',
        querystring: listTasksQuerySchema,
        response: { 200: json('One page of tasks; pass nextCursor as cursor for the next', taskListSchema), ...errors(400) },
      },
    },
    async (request) => {
      const { limit, cursor, ...filter } = request.query;
      const page = await tasks.list(request.tenant, filter, limit, cursor);
      return { tasks: page.rows.map((row) => tasks.output(row)), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/tasks/:id',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getTask',
        summary: 'Get a task',
        params: taskIdParamsSchema,
        response: { 200: json('The task', taskOutputSchema), ...errors(400, 404) },
      },
    },
    async (request) => tasks.output(await tasks.get(request.tenant, request.params.id)),
  );

  app.post(
    '/tasks/:id/cancel',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'cancelTask',
        summary: 'Cancel a task (idempotent)',
        description: 'A queued or running task ends `aborted` with code `cancelled`; a finished one is returned as it is.',
        params: taskIdParamsSchema,
        response: { 202: json('The task: ended `aborted` if it was queued or running, else as it was', taskOutputSchema), ...errors(400, 404, 507) },
      },
    },
    async (request, reply) => reply.status(202).send(tasks.output(await tasks.cancel(request.tenant, request.params.id))),
  );

  app.post(
    '/tasks/:id/messages',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'steerTask',
        summary: 'Steer a queued or running task',
        description:
          'The prompt goes to the model as a user message before its next step (event message.received). Messages wait in ' +
          'memory: one not yet delivered when the service stops is lost. A finished task answers 409 task_finished: ' +
          'continue it with a new task whose task_id is its id.',
        params: taskIdParamsSchema,
        body: steeringBodySchema,
        response: { 202: json('Accepted: delivered before the next step', z.object({ accepted: z.literal(true) })), ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      await tasks.steer(request.tenant, request.params.id, request.body.prompt);
      return reply.status(202).send({ accepted: true });
    },
  );

  app.get(
    '/tasks/:id/messages',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getTaskMessages',
        summary: "A task's conversation as the model saw it",
        description:
          'User, assistant and tool messages (not the system prompt), as stored after each finished step; a follow-up ' +
          'starts with the conversation of the task it continues. Tool results longer than 16 KiB are stored cut.',
        params: taskIdParamsSchema,
        response: { 200: json('The conversation, oldest first', taskMessagesSchema), ...errors(400, 404) },
      },
    },
    async (request) => ({ messages: await tasks.messages(request.tenant, request.params.id) }),
  );

  app.post(
    '/tasks/:id/resume',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'resumeTask',
        summary: 'Resume a task paused at a budget',
        description:
          "Optionally replaces the task's own budget (to raise it), then continues the task from its next step " +
          '(task.resumed). 409 budget_exceeded while a budget is still reached (raise the standing budget first), ' +
          '409 task_not_paused unless the task is paused.',
        params: taskIdParamsSchema,
        // No body at all is fine: the task resumes with the budget it had.
        body: resumeBodySchema.nullish(),
        response: { 202: json('The task, running again (or queued for a slot)', taskOutputSchema), ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => reply.status(202).send(tasks.output(await tasks.resume(request.tenant, request.params.id, request.body?.budget))),
  );

  app.post(
    '/tasks/:id/approvals/:requestId',
    {
      config: { access: 'submit', audit: (r) => ({ action: `approval.${(r.body as { decision: string }).decision}` }) },
      schema: {
        operationId: 'answerApproval',
        summary: 'Answer a tool call waiting for approval',
        description:
          'allow runs the call (with `input` instead of its own when given, checked against the tool); deny gives the model ' +
          'a tool error with `message`. Once every call of the step is answered the task goes on (task.resumed). The same answer again ' +
          'is 200; a different one 409 approval_answered; an unknown request 404.',
        params: taskIdParamsSchema.extend({ requestId: z.string().min(1).max(64) }),
        body: approvalBodySchema,
        response: { 200: json('The task as it is now', taskOutputSchema), ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request) => tasks.output(await tasks.answerApproval(request.tenant, request.params.id, request.params.requestId, request.body)),
  );

  app.post(
    '/tasks/:id/tool-results/:requestId',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'submitToolResult',
        summary: "Post the result of a caller-run tool's call",
        description:
          "`{ output }` is what the model reads as the tool's result, `{ error }` a tool error it reads. Once every request of the step " +
          'is answered the task goes on (task.resumed). The same result again is 200; a different one (or one after the timeout failed ' +
          'the call) 409 tool_result_submitted; an unknown request 404; a task that ended first 409 task_finished.',
        params: taskIdParamsSchema.extend({ requestId: z.string().min(1).max(64) }),
        body: toolResultBodySchema,
        response: { 200: json('The task as it is now', taskOutputSchema), ...errors(400, 404, 409, 413, 415) },
      },
    },
    async (request) => tasks.output(await tasks.submitToolResult(request.tenant, request.params.id, request.params.requestId, request.body)),
  );
};

/** `202 Accepted` for a new task: where to read it (`Location`) and to follow it (`streamUrl`). */
export function accepted(reply: FastifyReply, row: Pick<TaskRow, 'id' | 'status'>) {
  return reply
    .status(202)
    .header('location', `/tasks/${row.id}`)
    .send({ id: row.id, status: row.status, streamUrl: `/tasks/${row.id}/stream` });
}
