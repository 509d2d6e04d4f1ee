import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { contextIdSchema } from '../shapes/task.ts';
import { PathError, resolveWorkspacePath } from '../tools/path-guard.ts';
import { openInside, streamExactly, type Opened } from '../tools/safe-open.ts';
import type { WorkspacesDirOf } from '../tools/workspace.ts';
import { AppError, notFound } from '../errors/app-error.ts';
import { errors } from './openapi.ts';

const contentTypes: Record<string, string> = {
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.log': 'text/plain; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.pdf': 'application/pdf',
};

export const workspacesRoutes: FastifyPluginAsyncZod<{ workspacesDirOf: WorkspacesDirOf }> = async (
  app,
  { workspacesDirOf },
) => {
  app.get(
    '/workspaces/:parentTaskId/files/*',
    {
      schema: {
        operationId: 'getWorkspaceFile',
        summary: 'Download a workspace file',
        description: 'Serves a regular file of the parent task\'s workspace; nothing outside the workspace is ever served.',
        params: z.object({ parentTaskId: contextIdSchema, '*': z.string().min(1, 'a file path is required') }),
        response: {
          200: {
            description: 'The file, with a Content-Type from its extension (application/octet-stream otherwise)',
            content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } },
          },
          ...errors(400, 404),
        },
      },
    },
    async (request, reply) => {
      const { parentTaskId, '*': filePath } = request.params;
      let root: string;
      try {
        root = await realpath(path.join(workspacesDirOf(request.tenant), parentTaskId));
      } catch {
        throw notFound(`workspace ${parentTaskId}`);
      }
      // One descriptor, opened component by component without following links and checked with
      // fstat, is the only thing read: a name swapped for a link, FIFO or device after the check
      // is refused, and exactly the size fstat gave is sent.
      let opened: Opened;
      try {
        const real = (await resolveWorkspacePath(root, filePath, { mustExist: true })).real;
        opened = await openInside(root, real, filePath, 'read');
      } catch (err) {
        if (err instanceof PathError && err.reason === 'not_found') throw notFound(`file ${filePath}`);
        if (err instanceof PathError) throw new AppError(400, err.reason, err.message);
        throw new AppError(400, 'not_a_file', `"${filePath}" is not a regular file`);
      }
      return reply
        .header('content-type', contentTypes[path.extname(filePath).toLowerCase()] ?? 'application/octet-stream')
        .header('content-length', opened.stat.size)
        .header('last-modified', opened.stat.mtime.toUTCString())
        .header('x-content-type-options', 'nosniff')
        // Model-written HTML must not run scripts on the service's origin.
        .header('content-security-policy', "sandbox; default-src 'none'")
        // A stream is sent as it is: the type provider only knows the schema's string.
        .send(streamExactly(opened) as never);
    },
  );
};
