import { mkdir, realpath } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { contextIdSchema } from '../shapes/task.ts';
import { publicMessage } from '../errors/public-message.ts';
import { isInside, PathError, resolveWorkspacePath } from '../workspace/path-guard.ts';
import { openInside, removeInside, replaceFromStream, streamExactly, type Opened } from '../workspace/safe-open.ts';
import { describeFile, listWorkspace } from '../workspace/workspace-files.ts';
import { workspaceFileSchema, workspaceListingSchema } from '../shapes/artifact.ts';
import type { WorkspacesDirOf } from '../workspace/workspace.ts';
import { AppError, notFound } from '../errors/app-error.ts';
import { errorBodySchema } from './error-schema.ts';
import { binaryBody, errors, json } from './openapi.ts';

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

const fileParams = z.object({ parentTaskId: contextIdSchema, '*': z.string().min(1, 'a file path is required') });

/**
 * A write the disk could not take (full, or the user's quota spent): the caller did nothing wrong
 * and may send it again once there is room, so it is told apart from a refused path.
 */
export const workspaceDiskFull = () =>
  new AppError(507, 'storage_full', 'the workspace disk is full; nothing was changed, retry later', undefined, { 'retry-after': '30' });

/** ENOSPC and EDQUOT: no room left on the disk, or in the user's share of it. */
export const isDiskFull = (err: unknown) => ['ENOSPC', 'EDQUOT'].includes((err as NodeJS.ErrnoException)?.code ?? '');

/** A refusal of the path guard or of the descriptor checks, as the contract's error. */
export function pathFailure(err: unknown, filePath: string): AppError {
  if (err instanceof AppError) return err;
  if (isDiskFull(err) || isDiskFull((err as Error)?.cause)) return workspaceDiskFull();
  if (!(err instanceof PathError)) return new AppError(400, 'invalid_path', publicMessage(err as Error));
  switch (err.reason) {
    case 'not_found':
      return notFound(`file ${filePath}`);
    case 'is_a_directory':
      return new AppError(409, 'is_a_directory', err.message);
    case 'not_a_regular_file':
      return new AppError(400, 'not_a_file', err.message);
    case 'name_too_long':
      return new AppError(414, 'uri_too_long', err.message);
    default:
      return new AppError(400, err.reason, err.message);
  }
}

export const workspacesRoutes: FastifyPluginAsyncZod<{ workspacesDirOf: WorkspacesDirOf; maxUploadBytes: number }> = async (
  app,
  { workspacesDirOf, maxUploadBytes },
) => {
  /** The real path of an existing workspace of the caller's tenant; 404 when there is none. */
  async function existingRoot(tenant: string, parentTaskId: string): Promise<string> {
    try {
      return await realpath(path.join(workspacesDirOf(tenant), parentTaskId));
    } catch {
      throw notFound(`workspace ${parentTaskId}`);
    }
  }

  // An upload's body is the file: no parser touches it (any content type is taken as it is) and
  // the route reads the raw request stream itself, so no file is ever held in memory whole.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  app.get(
    '/workspaces/:parentTaskId',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'listWorkspace',
        summary: 'List a workspace',
        description:
          "Every file, folder and link of the parent task's workspace, recursively, with paths relative to it, sorted. " +
          'Links are listed as links and never followed; FIFOs, sockets and devices are left out. At most 10,000 entries (`truncated` says when there were more).',
        params: z.object({ parentTaskId: contextIdSchema }),
        response: { 200: json("The workspace's entries", workspaceListingSchema), ...errors(400, 404, 414) },
      },
    },
    async (request) => {
      const root = await existingRoot(request.tenant, request.params.parentTaskId);
      return listWorkspace(root, request.params.parentTaskId);
    },
  );

  app.put(
    '/workspaces/:parentTaskId/files/*',
    {
      config: { access: 'submit' },
      schema: {
        operationId: 'putWorkspaceFile',
        summary: 'Upload a workspace file',
        description:
          "The raw request body (any content type) becomes the file at that path in the parent task's workspace; the workspace " +
          'and missing folders are created, an existing file is replaced atomically (a reader sees the old file or the new one, never half). ' +
          'Over MAX_UPLOAD_BYTES (default 100 MiB): 413, and nothing is changed. A path through a link leading outside, or at a folder, is refused.',
        params: fileParams,
        ...binaryBody("The file's bytes, as they are (whatever the Content-Type)"),
        response: {
          200: json('An existing file was replaced', workspaceFileSchema),
          201: json('The file was created', workspaceFileSchema),
          ...errors(400, 404, 409, 413, 414),
          507: json('The workspace disk is full (or its quota spent): nothing was changed; retry after Retry-After seconds', errorBodySchema),
        },
      },
    },
    async (request, reply) => {
      const { parentTaskId, '*': filePath } = request.params;
      const declared = Number(request.headers['content-length'] ?? NaN);
      if (declared > maxUploadBytes) throw tooLarge(maxUploadBytes);
      const dir = path.join(workspacesDirOf(request.tenant), parentTaskId);
      await mkdir(dir, { recursive: true, mode: 0o750 }).catch((err: unknown) => {
        throw isDiskFull(err) ? workspaceDiskFull() : err;
      });
      const root = await realpath(dir);
      let received = 0;
      try {
        const target = await resolveWorkspacePath(root, filePath, { mustExist: false });
        // Not destroyed when the write stops early: that would reset the connection under the
        // answer (see below).
        const body = request.raw.iterator({ destroyOnReturn: false });
        const written = await replaceFromStream(root, target.real, filePath, body, (bytes) => {
          received += bytes;
          if (received > maxUploadBytes) throw tooLarge(maxUploadBytes);
        });
        const file = describeFile(parentTaskId, target.relative.split(path.sep).join('/'), written.stat)!;
        return reply
          .code(written.replaced ? 200 : 201)
          .header('location', file.url)
          .send(file);
      } catch (err) {
        const failure = pathFailure(err, filePath);
        // The caller may still be sending a body the service stopped writing (a full disk, a path
        // refused): the rest is read and dropped before the answer, which a caller blocked on its
        // send would otherwise never read, and which closing under its send would reset (EPIPE).
        // One too large, or never ending, is not read on: the connection closes after the answer.
        if (failure.statusCode === 413 || !(await drained(request.raw, maxUploadBytes))) reply.header('connection', 'close');
        throw failure;
      }
    },
  );

  app.delete(
    '/workspaces/:parentTaskId/files/*',
    {
      config: { access: 'admin', audit: 'workspace.file_deleted' },
      schema: {
        operationId: 'deleteWorkspaceFile',
        summary: 'Delete a workspace file or folder',
        description:
          'Removes a file, a link (never what it points to) or a folder with everything in it. A link on the way that leads outside the workspace is refused.',
        params: fileParams,
        response: { 204: z.undefined().describe('Removed'), ...errors(400, 404, 409, 414) },
      },
    },
    async (request, reply) => {
      const { parentTaskId, '*': filePath } = request.params;
      const root = await existingRoot(request.tenant, parentTaskId);
      try {
        // The last name is what goes (a link itself, never what it points at): only the folder
        // that holds it is resolved, and that must lie inside the workspace.
        const absolute = path.resolve(root, filePath);
        if (!isInside(root, absolute)) throw new PathError('outside_workspace', `path "${filePath}" is outside the workspace`);
        if (absolute === root) throw new PathError('is_a_directory', `"${filePath}" is the workspace folder itself, which cannot be removed`);
        const folder = await resolveWorkspacePath(root, path.relative(root, path.dirname(absolute)), { mustExist: true });
        await removeInside(root, path.join(folder.real, path.basename(absolute)), filePath);
      } catch (err) {
        throw pathFailure(err, filePath);
      }
      return reply.code(204).send();
    },
  );

  app.get(
    '/workspaces/:parentTaskId/files/*',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getWorkspaceFile',
        summary: 'Download a workspace file',
        description: "Serves a regular file of the parent task's workspace; nothing outside the workspace is ever served.",
        params: fileParams,
        response: { ...fileResponse, ...errors(400, 404, 414) },
      },
    },
    async (request, reply) => {
      const { parentTaskId, '*': filePath } = request.params;
      return sendFile(reply, await existingRoot(request.tenant, parentTaskId), filePath);
    },
  );
};

/** The download of a file, as GET /workspaces/:id/files/* and GET /tasks/:id/files/* describe it. */
export const fileResponse = {
  200: {
    description: 'The file, with a Content-Type from its extension (application/octet-stream otherwise)',
    content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } },
  },
};

/**
 * Sends the regular file `filePath` of the folder `root`. One descriptor, opened component by
 * component without following links and checked with fstat, is the only thing read: a name swapped
 * for a link, FIFO or device after the check is refused, and exactly the size fstat gave is sent.
 */
export async function sendFile(reply: FastifyReply, root: string, filePath: string): Promise<FastifyReply> {
  let opened: Opened;
  try {
    const real = (await resolveWorkspacePath(root, filePath, { mustExist: true })).real;
    opened = await openInside(root, real, filePath, 'read');
  } catch (err) {
    const failure = pathFailure(err, filePath);
    throw failure.statusCode === 409 ? new AppError(400, 'not_a_file', `"${filePath}" is not a regular file`) : failure;
  }
  return (
    reply
      .header('content-type', contentTypes[path.extname(filePath).toLowerCase()] ?? 'application/octet-stream')
      .header('content-length', opened.stat.size)
      .header('last-modified', opened.stat.mtime.toUTCString())
      .header('x-content-type-options', 'nosniff')
      // Model-written HTML must not run scripts on the service's origin.
      .header('content-security-policy', "sandbox; default-src 'none'")
      .send(streamExactly(opened))
  );
}

/**
 * Reads and drops what is left of a request's body: true once it ended, false past `max` bytes
 * (then it is left unread) or on an error.
 */
export function drained(body: IncomingMessage, max: number): Promise<boolean> {
  if (body.complete || body.readableEnded) return Promise.resolve(true);
  if (body.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    // A body that stops coming is not waited for: the connection closes after the answer.
    const stalled = setTimeout(() => resolve(false), 5000).unref();
    body.once('end', () => clearTimeout(stalled));
    let bytes = 0;
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= max) return;
      body.pause();
      resolve(false);
    });
    body.once('end', () => resolve(true));
    body.once('error', () => resolve(false));
    body.once('close', () => resolve(body.complete));
    body.resume();
  });
}

function tooLarge(max: number): AppError {
  return new AppError(413, 'payload_too_large', `the file is larger than MAX_UPLOAD_BYTES (${max} bytes)`);
}
