import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../errors/app-error.ts';
import { taskIdParamsSchema } from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { errors, json } from './openapi.ts';
import { fileResponse, sendFile } from './workspaces-routes.ts';

/** A worktree task's changes (options.isolation "worktree"): apply them, read their diff, download its files. */
export const worktreeRoutes: FastifyPluginAsyncZod<{ tasks: TaskService }> = async (app, { tasks }) => {
  app.post(
    '/tasks/:id/apply',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'applyTaskChanges',
        summary: "Write a worktree task's changes into the shared workspace",
        description:
          'Every file the task added or modified in its copy replaces the shared one atomically, every file it deleted is removed; ' +
          'then the copy goes. 409 conflict (`error.details.paths`) when a changed file was changed in the shared workspace since the ' +
          'copy was taken: nothing is written then. 409 already_applied the second time, 409 task_not_finished while it runs, ' +
          '409 not_a_worktree for a task of the shared workspace, 410 worktree_removed once its copy expired (WORKTREE_TTL_MS).',
        params: taskIdParamsSchema,
        response: {
          200: json('Applied: every path written or removed', z.object({ applied: z.array(z.string()) })),
          ...errors(400, 404, 409, 410),
        },
      },
    },
    async (request) => ({ applied: await tasks.worktrees.apply(request.tenant, request.params.id) }),
  );

  app.get(
    '/tasks/:id/changes.diff',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getTaskChangesDiff',
        summary: "A worktree task's changes as a unified diff",
        description:
          "The shared workspace as it is now (`a/`) against the task's copy (`b/`), for the files it changed: what applying would do. " +
          'A file over 1 MiB or with a NUL byte shows as binary; `git apply` and `patch -p1` take it.',
        params: taskIdParamsSchema,
        response: {
          200: { description: 'The diff (text/x-diff)', content: { 'text/x-diff': { schema: z.string() } } },
          ...errors(400, 404, 409, 410),
        },
      },
    },
    async (request, reply) => {
      const patch = await tasks.worktrees.patch(request.tenant, request.params.id);
      return reply.header('content-type', 'text/x-diff; charset=utf-8').header('x-content-type-options', 'nosniff').send(patch);
    },
  );

  app.get(
    '/tasks/:id/files/*',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getTaskFile',
        summary: 'Download a file as a task sees it',
        description:
          "A worktree task's files come from its copy while there is one (its artifacts' `url`s point here); any other task's, " +
          'or one applied, from the shared workspace. Nothing outside is ever served.',
        params: taskIdParamsSchema.extend({ '*': z.string().min(1, 'a file path is required') }),
        response: { ...fileResponse, ...errors(400, 404, 414) },
      },
    },
    async (request, reply) => {
      const root = await tasks.worktrees.filesRoot(request.tenant, request.params.id);
      if (!root) throw notFound(`files of task ${request.params.id}`);
      return sendFile(reply, root, request.params['*']);
    },
  );
};
