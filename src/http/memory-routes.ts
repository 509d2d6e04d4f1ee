import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../errors/app-error.ts';
import { workspaceFileSchema } from '../shapes/artifact.ts';
import { memoryScopeSchema, memoryUrl } from '../shapes/memory.ts';
import { contextIdSchema } from '../shapes/task.ts';
import { existingMemory, openMemory, removeMemory, type MemoryRef } from '../workspace/memory.ts';
import { isInside, PathError, resolveWorkspacePath } from '../workspace/path-guard.ts';
import { removeInside, replaceFromStream } from '../workspace/safe-open.ts';
import { folderUse, MAX_FOLDER_ENTRIES } from '../workspace/task-folders.ts';
import { listWorkspace } from '../workspace/workspace-files.ts';
import type { WorkspacesDirOf } from '../workspace/workspace.ts';
import { errorBodySchema } from './error-schema.ts';
import { binaryBody, errors, json } from './openapi.ts';
import { drained, fileResponse, isDiskFull, pathFailure, sendFile, workspaceDiskFull } from './workspaces-routes.ts';

const memoryParams = z
  .object({
    scope: memoryScopeSchema,
    key: contextIdSchema.describe('the user id (user), the parent task id (parent), or "-" (definition)'),
    type: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a subagent type'),
    '*': z.string().describe('a path inside the memory folder; empty: the folder itself'),
  })
  .refine((p) => p.scope !== 'definition' || p.key === '-', { path: ['key'], message: 'must be "-" for scope definition' });

const memoryListingSchema = z.object({
  files: z.array(workspaceFileSchema),
  truncated: z.boolean().describe('True when the folder holds more than the 10,000 entries listed'),
  bytes: z.number().int().describe('the bytes of its files, against MEMORY_MAX_BYTES'),
});

const refOf = (p: z.infer<typeof memoryParams>): MemoryRef => ({ scope: p.scope, key: p.key, type: p.type });

/**
 * Definitions' memory folders over HTTP (the caller's tenant only): list, read, write and delete
 * the files a definition's tasks keep at `.memory/`. Writes are atomic and bounded as the tools'.
 */
export const memoryRoutes: FastifyPluginAsyncZod<{ workspacesDirOf: WorkspacesDirOf; maxUploadBytes: number; memoryMaxBytes: number }> = async (
  app,
  { workspacesDirOf, maxUploadBytes, memoryMaxBytes },
) => {
  // An upload's body is the file, read from the raw request stream (as the workspace routes do).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  /** The real path of an existing memory of the caller's tenant; 404 when it was never written. */
  async function existingRoot(tenant: string, ref: MemoryRef): Promise<string> {
    const root = await existingMemory(workspacesDirOf(tenant), ref);
    if (!root) throw notFound(`memory ${ref.scope}/${ref.key}/${ref.type}`);
    return root;
  }

  app.get(
    '/memory/:scope/:key/:type/files/*',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getMemoryFile',
        summary: "Read a memory folder's file, or list the folder (empty path)",
        description:
          'The memory a definition with `memory: user | parent | definition` keeps for that user, parent task or itself (in ' +
          'the caller\u2019s tenant). With an empty path: every file and folder of it, as JSON, and its size. Otherwise the file, ' +
          'served as workspace files are (a link, FIFO or folder is refused). 404 for a memory never written.',
        params: memoryParams,
        response: {
          200: {
            description: 'The file (its Content-Type from its extension), or for an empty path the listing, as JSON',
            content: { ...fileResponse[200].content, ...json('', memoryListingSchema).content },
          },
          ...errors(400, 404, 414),
        },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params);
      const root = await existingRoot(request.tenant, ref);
      const filePath = request.params['*'];
      if (filePath === '' || filePath === '/') {
        const listing = await listWorkspace(root, '-');
        const base = memoryUrl(ref);
        const { bytes } = await folderUse(root);
        return {
          files: listing.files.map((f) => ({ ...f, url: `${base}${f.path.split('/').map(encodeURIComponent).join('/')}` })),
          truncated: listing.truncated,
          bytes,
        };
      }
      return sendFile(reply, root, filePath);
    },
  );

  app.put(
    '/memory/:scope/:key/:type/files/*',
    {
      config: { access: 'submit', audit: 'memory.file_written' },
      schema: {
        operationId: 'putMemoryFile',
        summary: 'Write a file of a memory folder',
        description:
          'The raw body becomes the file (folders are made), replacing one there atomically: the tasks of that memory see the ' +
          'old file or the new one, never half. 413 when the folder would hold more than MEMORY_MAX_BYTES (or the body is over ' +
          'MAX_UPLOAD_BYTES); nothing is changed then.',
        params: memoryParams,
        ...binaryBody("The file's bytes, as they are"),
        response: {
          200: json('An existing file was replaced', workspaceFileSchema),
          201: json('The file was created', workspaceFileSchema),
          ...errors(400, 403, 413, 414),
          507: json('The disk is full: nothing was changed; retry after Retry-After seconds', errorBodySchema),
        },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params);
      const filePath = request.params['*'];
      const cap = Math.min(maxUploadBytes, memoryMaxBytes);
      try {
        if (filePath === '' || filePath.endsWith('/')) throw new PathError('is_a_directory', `"${filePath}" names a folder: name a file`);
        if (Number(request.headers['content-length'] ?? NaN) > cap) throw tooLarge(cap, memoryMaxBytes);
        const root = await openMemory(workspacesDirOf(request.tenant), ref).catch((err: unknown) => {
          throw isDiskFull(err) ? workspaceDiskFull() : err;
        });
        const target = await resolveWorkspacePath(root, filePath, { mustExist: false });
        // What the folder holds besides the file replaced: the body may take the rest of the bound.
        const use = await folderUse(root);
        if (use.entries > MAX_FOLDER_ENTRIES) throw new AppError(413, 'memory_full', `the memory holds more than ${MAX_FOLDER_ENTRIES} entries`);
        const existing = target.exists ? ((await lstat(target.real).catch(() => null))?.size ?? 0) : 0;
        const room = Math.min(cap, memoryMaxBytes - (use.bytes - existing));
        let received = 0;
        const body = request.raw.iterator({ destroyOnReturn: false });
        const written = await replaceFromStream(root, target.real, filePath, body, (bytes) => {
          received += bytes;
          if (received > room) throw tooLarge(cap, memoryMaxBytes);
        });
        const relative = target.relative.split(path.sep).join('/');
        const file = {
          path: relative,
          relativePath: relative,
          size: written.stat.size,
          fsType: 'file' as const,
          modifiedAt: written.stat.mtime.toISOString(),
          url: `${memoryUrl(ref)}${relative.split('/').map(encodeURIComponent).join('/')}`,
        };
        return reply.code(written.replaced ? 200 : 201).send(file);
      } catch (err) {
        const failure = pathFailure(err, filePath);
        if (failure.statusCode === 413 || !(await drained(request.raw, cap))) reply.header('connection', 'close');
        throw failure;
      }
    },
  );

  app.delete(
    '/memory/:scope/:key/:type/files/*',
    {
      config: { access: 'admin', audit: 'memory.file_deleted' },
      schema: {
        operationId: 'deleteMemoryFile',
        summary: 'Delete a file or folder of a memory folder, or the whole memory (empty path) (admin)',
        params: memoryParams,
        response: { 204: z.undefined().describe('Removed'), ...errors(400, 403, 404, 414) },
      },
    },
    async (request, reply) => {
      const ref = refOf(request.params);
      const filePath = request.params['*'];
      if (filePath === '' || filePath === '/') {
        if (!(await removeMemory(workspacesDirOf(request.tenant), ref))) throw notFound(`memory ${ref.scope}/${ref.key}/${ref.type}`);
        return reply.code(204).send();
      }
      const root = await existingRoot(request.tenant, ref);
      try {
        // The last name is what goes (a link itself, never what it points at).
        const absolute = path.resolve(root, filePath);
        if (!isInside(root, absolute) || absolute === root) throw new PathError('outside_workspace', `path "${filePath}" is outside the memory folder`);
        const folder = await resolveWorkspacePath(root, path.relative(root, path.dirname(absolute)), { mustExist: true });
        await removeInside(root, path.join(folder.real, path.basename(absolute)), filePath);
      } catch (err) {
        throw pathFailure(err, filePath);
      }
      return reply.code(204).send();
    },
  );
};

function tooLarge(cap: number, memoryMaxBytes: number): AppError {
  return new AppError(413, 'memory_full', `the file does not fit: a memory holds at most MEMORY_MAX_BYTES (${memoryMaxBytes} bytes), an upload at most ${cap}`);
}
