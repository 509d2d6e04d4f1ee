import { constants } from 'node:fs';
import { open, readlink, unlink, type FileHandle } from 'node:fs/promises';
import { isInside, PathError } from './path-guard';

// O_NONBLOCK: opening a FIFO the model made must not hang the tool (regular files ignore it).
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Where an open file really is, from the kernel (Linux); null where /proc is not available. */
async function fdPath(handle: FileHandle): Promise<string | null> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return null;
  }
}

async function verify(handle: FileHandle, root: string, shown: string, created: boolean): Promise<FileHandle> {
  const actual = await fdPath(handle);
  if (actual === null || isInside(root, actual)) return handle;
  await handle.close();
  if (created) await unlink(actual).catch(() => {});
  throw new PathError('outside_workspace', `path "${shown}" changed while it was being opened and now leads outside the workspace; refused`);
}

/**
 * Opens a path the guard resolved, closing the gap between check and use: the last component is
 * opened without following links, and the kernel's own record of what was opened must lie inside
 * the workspace. A link swapped in after the check is refused before one byte is read or written.
 * For writing, the file is never truncated through `open` (only after the check), and a file
 * this call created outside is removed again.
 */
export async function openInside(root: string, real: string, shown: string, mode: 'read' | 'write'): Promise<FileHandle> {
  try {
    if (mode === 'read') return await verify(await open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK), root, shown, false);
    try {
      return await verify(await open(real, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o644), root, shown, true);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return await verify(await open(real, O_WRONLY | O_NOFOLLOW | O_NONBLOCK), root, shown, false);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new PathError('outside_workspace', `path "${shown}" became a symbolic link after it was checked; refused`);
    if (code === 'ENOENT') throw new PathError('not_found', `path "${shown}" does not exist`);
    if (code === 'EISDIR') throw new Error(`"${shown}" is a directory`);
    if (code === 'ENXIO') throw new Error(`"${shown}" is not a regular file`);
    throw err;
  }
}

/** Replaces a file's content through a handle opened by `openInside(..., 'write')`. */
export async function overwrite(handle: FileHandle, content: string): Promise<void> {
  try {
    await handle.truncate(0);
    await handle.write(content, 0, 'utf8');
  } finally {
    await handle.close();
  }
}
