import { constants, type Dirent, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { lstat, open, opendir, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pooledCalls, type FileCalls } from './file-calls.ts';
import { isInside, PathError } from './path-guard.ts';

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

/*
 * Workspace files are opened one path component at a time, each relative to the descriptor of the
 * folder before it (`/proc/self/fd/<fd>/<name>` is Linux's openat for a process that has no openat
 * call), and no component is followed if it is a symbolic link. A command in the workspace that
 * swaps a file or folder for a link, a FIFO or a device between the service's check and its use
 * therefore gets a refusal, never a file outside: what is opened is verified on the descriptor, and
 * only the descriptor is used afterwards. Every open is non-blocking, so a FIFO cannot pin a
 * thread of libuv's pool.
 *
 * The folders on the way are opened, created and closed through `FileCalls` (file-calls.ts):
 * synchronous system calls on a local file system, each reading no file's content, and through
 * libuv's pool on any other. What holds content (the file itself, its reads and writes, a
 * folder's listing) is always asynchronous, as nginx, which also opens files on its event loop,
 * leaves reads to its threads.
 */
const at = (dir: FileHandle | number, name: string) => `/proc/self/fd/${typeof dir === 'number' ? dir : dir.fd}/${name}`;

export type OpenMode =
  /** a regular file, for reading */
  | 'read'
  /** a regular file, for writing; missing folders and the file are created */
  | 'write'
  /** an existing regular file, for reading and then replacing */
  | 'update'
  /** a folder */
  | 'dir'
  /** a folder, created (with missing folders on its way) when missing */
  | 'folder'
  /** a regular file or a folder; anything else is refused */
  | 'any';

export interface Opened {
  handle: FileHandle;
  /** `fstat` of the descriptor: what was really opened. */
  stat: Stats;
}

const finalFlags: Record<OpenMode, number> = {
  read: O_RDONLY | O_NOFOLLOW | O_NONBLOCK,
  write: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK,
  update: O_RDWR | O_NOFOLLOW | O_NONBLOCK,
  dir: O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK,
  folder: O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK,
  any: O_RDONLY | O_NOFOLLOW | O_NONBLOCK,
};
const DIR_FLAGS = finalFlags.dir;

function refusal(err: unknown, shown: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') {
    return new PathError(
      'outside_workspace',
      `path "${shown}" changed while it was being opened: a symbolic link took the place of a file or folder on it, which could lead outside the workspace; refused`,
    );
  }
  if (code === 'ENOENT') return new PathError('not_found', `path "${shown}" does not exist`);
  if (code === 'ENOTDIR') return new PathError('not_found', `path "${shown}" does not exist (a part of it is not a folder)`);
  if (code === 'EISDIR') return new PathError('is_a_directory', `"${shown}" is a directory`);
  if (code === 'ENXIO') return new PathError('not_a_regular_file', `"${shown}" is not a regular file`);
  if (code === 'ENAMETOOLONG') return new PathError('name_too_long', `a name in path "${shown}" is too long`);
  // Any other system error: its code, never its message (which names the host path). The error
  // stays as the cause, so a full disk (ENOSPC) can still be told from a bad path by the caller.
  if (typeof code === 'string' && (err as NodeJS.ErrnoException).syscall) {
    return Object.assign(new PathError('invalid_path', `path "${shown}" cannot be used (${code})`), { cause: err });
  }
  return err as Error;
}

/** Opens the workspace root itself (a real path the service made). */
export function openRoot(root: string): Promise<FileHandle> {
  return open(root, DIR_FLAGS);
}

/** Linux answers ENOTDIR rather than ELOOP for a link opened with O_DIRECTORY | O_NOFOLLOW: a link is reported as ELOOP either way. */
async function linkAsLoop(err: unknown, dir: FileHandle | number, name: string, calls: FileCalls): Promise<unknown> {
  if ((err as NodeJS.ErrnoException).code === 'ENOTDIR' && (await calls.lstat(at(dir, name)))?.isSymbolicLink()) {
    return Object.assign(new Error('symbolic link'), { code: 'ELOOP' });
  }
  return err;
}

/** Opens a folder below `dir` without following a link. */
async function openDirAt(dir: FileHandle | number, name: string, calls: FileCalls = pooledCalls): Promise<FileHandle> {
  try {
    return await open(at(dir, name), DIR_FLAGS);
  } catch (err) {
    throw await linkAsLoop(err, dir, name, calls);
  }
}

/** Opens the folder `name` of the folder `dir` (a descriptor), creating it first when asked and missing. */
async function openChildDir(dir: number, name: string, create: boolean, calls: FileCalls): Promise<number> {
  try {
    return await calls.open(at(dir, name), DIR_FLAGS);
  } catch (err) {
    if (!create || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw await linkAsLoop(err, dir, name, calls);
    await makeDirAt(dir, name, calls);
    try {
      return await calls.open(at(dir, name), DIR_FLAGS);
    } catch (again) {
      throw await linkAsLoop(again, dir, name, calls);
    }
  }
}

/** Creates the folder `name` in `dir` unless something has that name (mkdir never follows a link in its last component). */
async function makeDirAt(dir: number, name: string, calls: FileCalls): Promise<void> {
  try {
    await calls.mkdir(at(dir, name), { mode: 0o755 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** The components of `real` below `root` (empty for the root itself). */
function partsOf(root: string, real: string): string[] {
  return path
    .relative(root, real)
    .split(path.sep)
    .filter((p) => p !== '' && p !== '.');
}

/**
 * Opens the folder `root/parts...` one component at a time, creating missing ones when asked, and
 * returns its descriptor, which the caller closes (`calls.close`).
 */
async function openFolders(root: string, parts: string[], create: boolean, calls: FileCalls): Promise<number> {
  let dir = await calls.open(root, DIR_FLAGS);
  try {
    for (const part of parts) {
      const next = await openChildDir(dir, part, create, calls);
      await calls.close(dir);
      dir = next;
    }
    return dir;
  } catch (err) {
    await closeQuietly(dir, calls);
    throw err;
  }
}

/** Closes a folder's descriptor whose failure to close must not hide the error being thrown. */
async function closeQuietly(fd: number, calls: FileCalls): Promise<void> {
  try {
    await calls.close(fd);
  } catch {
    // The descriptor is released whatever close answers (Linux frees it even on EINTR or EIO).
  }
}

function describe(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Opens `real` (a path the guard resolved, inside `root`) from the root's descriptor, component by
 * component, following no link, and checks with `fstat` that it is what `mode` asks for. `shown` is
 * the path as the caller named it, for messages. The caller owns the returned handle. `calls`: how
 * the folders on the way are opened (the workspace's, `Workspace.calls`).
 */
export async function openInside(root: string, real: string, shown: string, mode: OpenMode, calls: FileCalls = pooledCalls): Promise<Opened> {
  if (!isInside(root, real)) throw new PathError('outside_workspace', `path "${shown}" is outside the workspace`);
  const parts = partsOf(root, real);
  const last = parts.pop();
  let dir: number | undefined;
  try {
    dir = await openFolders(root, parts, mode === 'write' || mode === 'folder', calls);
    let handle: FileHandle;
    if (last === undefined) {
      if (mode !== 'dir' && mode !== 'any' && mode !== 'folder') throw new PathError('is_a_directory', `"${shown}" is a directory`);
      handle = await open(at(dir, '.'), DIR_FLAGS);
    } else if (mode === 'dir' || mode === 'folder') {
      if (mode === 'folder') await makeDirAt(dir, last, calls);
      handle = await openDirAt(dir, last, calls).catch((err: NodeJS.ErrnoException) => {
        throw err.code === 'ENOTDIR' && mode === 'dir' ? new Error(`"${shown}" is not a folder`) : err;
      });
    } else {
      handle = await open(at(dir, last), finalFlags[mode], 0o644);
    }
    const stat = await calls.fstat(handle.fd);
    const wanted = mode === 'dir' || mode === 'folder' ? stat.isDirectory() : mode === 'any' ? stat.isFile() || stat.isDirectory() : stat.isFile();
    if (!wanted) {
      await handle.close();
      if (mode === 'dir' || mode === 'folder') throw new Error(`"${shown}" is not a folder`);
      if (stat.isDirectory()) throw new PathError('is_a_directory', `"${shown}" is a directory`);
      throw new PathError('not_a_regular_file', `"${shown}" is ${describe(stat)}, not a regular file`);
    }
    return { handle, stat };
  } catch (err) {
    throw refusal(err, shown);
  } finally {
    if (dir !== undefined) await closeQuietly(dir, calls);
  }
}

/** Reads at most `max` bytes from the start of an opened regular file. */
export async function readHead(opened: Opened, max: number): Promise<Buffer> {
  const buf = Buffer.alloc(Math.min(opened.stat.size, max));
  let filled = 0;
  while (filled < buf.length) {
    const { bytesRead } = await opened.handle.read(buf, filled, buf.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buf.subarray(0, filled);
}

/**
 * Replaces an opened file's content (the handle comes from `openInside(..., 'write' | 'update')`).
 * The file is cut at the new content's end after the write, unless it was empty when opened
 * ('write' opens it so): one call instead of two for a new or rewritten file.
 */
export async function replaceContent(opened: Opened, content: string): Promise<void> {
  const { bytesWritten } = await opened.handle.write(content, 0, 'utf8');
  if (opened.stat.size > 0) await opened.handle.truncate(bytesWritten);
}

/** The entries of an opened folder, read through its descriptor (so a swapped name cannot redirect it). */
export async function* entriesOf(dir: FileHandle): AsyncGenerator<Dirent> {
  const d = await opendir(`/proc/self/fd/${dir.fd}`, { bufferSize: 64 });
  // for-await closes the Dir when the loop ends or the consumer stops early.
  for await (const entry of d) yield entry;
}

export interface TreeEntry {
  /** Path relative to the folder the walk started from, `/`-separated. */
  relative: string;
  dirent: Dirent;
  /** The open folder that holds the entry, valid until the walk goes on. */
  parent: FileHandle;
}

export interface WalkOptions {
  /** Folder names never descended into (their entries are not reported); `skipTop`: the first folder's entries left out whole. */
  skip?: ReadonlySet<string>;
  skipTop?: ReadonlySet<string>;
  maxDepth?: number;
  signal?: AbortSignal;
}

/**
 * Every entry below the opened folder `dir`, depth first. Sub-folders are opened through their
 * parent's descriptor without following links, so a folder swapped for a link mid-walk is skipped
 * and nothing outside is ever listed. The caller stops whenever it likes (`break`).
 */
export async function* walkTree(dir: FileHandle, opts: WalkOptions = {}, prefix = '', depth = 0): AsyncGenerator<TreeEntry> {
  for await (const dirent of entriesOf(dir)) {
    if (opts.signal?.aborted) return;
    if (depth === 0 && opts.skipTop?.has(dirent.name)) continue;
    const relative = prefix ? `${prefix}/${dirent.name}` : dirent.name;
    yield { relative, dirent, parent: dir };
    if (!dirent.isDirectory() || opts.skip?.has(dirent.name) || depth >= (opts.maxDepth ?? 64)) continue;
    let child: FileHandle;
    try {
      child = await open(at(dir, dirent.name), DIR_FLAGS);
    } catch {
      continue; // gone, or swapped for a link or a file since it was listed
    }
    try {
      yield* walkTree(child, opts, relative, depth + 1);
    } finally {
      await child.close();
    }
  }
}

/** Opens an entry the walk reported, for reading, if it is (still) a regular file. */
export async function openEntry(entry: TreeEntry): Promise<Opened | null> {
  let handle: FileHandle;
  try {
    handle = await open(at(entry.parent, entry.dirent.name), finalFlags.read);
  } catch {
    return null;
  }
  const stat = await handle.stat();
  if (stat.isFile()) return { handle, stat };
  await handle.close();
  return null;
}

/**
 * A stream of exactly `stat.size` bytes of an opened regular file, from its descriptor. A file
 * that grows meanwhile is cut at that size; one that shrinks ends the stream with an error, so an
 * HTTP response never carries more or fewer bytes than its content-length says.
 */
export function streamExactly(opened: Opened, chunk = 64 * 1024): Readable {
  const size = opened.stat.size;
  let position = 0;
  return new Readable({
    highWaterMark: chunk,
    read() {
      if (position >= size) {
        this.push(null);
        return;
      }
      const buf = Buffer.allocUnsafe(Math.min(chunk, size - position));
      opened.handle.read(buf, 0, buf.length, position).then(
        ({ bytesRead }) => {
          if (bytesRead === 0) return this.destroy(new Error('the file shrank while it was being sent'));
          position += bytesRead;
          this.push(buf.subarray(0, bytesRead));
        },
        (err: Error) => this.destroy(err),
      );
    },
    destroy(err, callback) {
      opened.handle.close().then(
        () => callback(err),
        () => callback(err),
      );
    },
  });
}

/** `lstat` of an entry the walk reported (a link is described as the link it is). */
export function lstatEntry(entry: TreeEntry): Promise<Stats> {
  return lstat(at(entry.parent, entry.dirent.name));
}

export interface Replaced {
  /** `fstat` of the written file, before it was renamed into place. */
  stat: Stats;
  /** True when a file of that name was there before (and was replaced). */
  replaced: boolean;
}

/**
 * Writes `source` to a new file beside `real` and renames it over `real` once complete, so a
 * reader never sees half a file and a failed upload leaves the old one whole. Folders are created
 * and the temporary file opened through descriptors (`O_EXCL | O_NOFOLLOW`), and the rename
 * happens inside the folder's descriptor: a name on the way swapped for a link makes it fail,
 * and a link at the final name is replaced, never followed. `onChunk` may throw to stop the copy
 * (a size limit); the temporary file is removed then. The stat returned is the descriptor's; the
 * file gets `mode` (0644 unless given).
 */
export async function replaceFromStream(
  root: string,
  real: string,
  shown: string,
  source: AsyncIterable<Buffer>,
  onChunk: (bytes: number) => void,
  mode = 0o644,
): Promise<Replaced> {
  if (!isInside(root, real)) throw new PathError('outside_workspace', `path "${shown}" is outside the workspace`);
  const parts = partsOf(root, real);
  const name = parts.pop();
  if (name === undefined) throw new PathError('is_a_directory', `"${shown}" is the workspace folder itself`);
  let dir: number | undefined;
  let temp: string | undefined;
  try {
    dir = await openFolders(root, parts, true, pooledCalls);
    temp = `.${name.slice(0, 200)}.upload-${randomBytes(6).toString('hex')}`;
    const handle = await open(at(dir, temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o600);
    let stat: Stats;
    try {
      let position = 0;
      for await (const chunk of source) {
        onChunk(chunk.length);
        for (let off = 0; off < chunk.length;) {
          const { bytesWritten } = await handle.write(chunk, off, chunk.length - off, position);
          off += bytesWritten;
          position += bytesWritten;
        }
      }
      // The mode exactly (the umask does not apply to chmod), set on the descriptor.
      await handle.chmod(mode);
      await handle.sync();
      stat = await handle.stat();
    } finally {
      await handle.close();
    }
    const existing = await lstat(at(dir, name)).catch(() => null);
    if (existing?.isDirectory()) throw new PathError('is_a_directory', `"${shown}" is a directory`);
    await rename(at(dir, temp), at(dir, name));
    temp = undefined;
    return { stat, replaced: existing !== null };
  } catch (err) {
    throw refusal(err, shown);
  } finally {
    if (dir !== undefined && temp) await unlink(at(dir, temp)).catch(() => {});
    if (dir !== undefined) await closeQuietly(dir, pooledCalls);
  }
}

/**
 * Removes a file, a link (not what it points to) or a whole folder inside the workspace. A folder
 * is emptied through its own descriptor: each sub-folder is opened from its parent's descriptor
 * without following links, and every unlink names an entry of a descriptor, so a folder swapped
 * for a link halfway cannot make it delete anything outside.
 */
export async function removeInside(root: string, real: string, shown: string): Promise<void> {
  if (!isInside(root, real)) throw new PathError('outside_workspace', `path "${shown}" is outside the workspace`);
  const parts = partsOf(root, real);
  const name = parts.pop();
  if (name === undefined) throw new PathError('is_a_directory', `"${shown}" is the workspace folder itself, which cannot be removed`);
  let dir: number | undefined;
  try {
    dir = await openFolders(root, parts, false, pooledCalls);
    await removeEntry(dir, name);
  } catch (err) {
    throw refusal(err, shown);
  } finally {
    if (dir !== undefined) await closeQuietly(dir, pooledCalls);
  }
}

/** Folders held open at once while removing; a deeper one is moved up (see removeEntry). */
const MAX_REMOVE_DEPTH = 64;

/**
 * Removes `name` of `dir`, whatever its depth, with at most MAX_REMOVE_DEPTH descriptors open: a
 * folder met at that depth is renamed (descriptor to descriptor, never following a link) into the
 * folder being removed (`top`), whose loop reads it again as one of its own entries.
 */
async function removeEntry(dir: FileHandle | number, name: string, depth = 0, top?: FileHandle): Promise<void> {
  const stat = await lstat(at(dir, name));
  if (!stat.isDirectory()) return unlink(at(dir, name));
  if (top && depth >= MAX_REMOVE_DEPTH) {
    await rename(at(dir, name), at(top, `.removing-${randomBytes(6).toString('hex')}`));
    return;
  }
  const child = await openDirAt(dir, name);
  try {
    // A batch of names at a time, so a folder of millions never sits in memory at once; each batch
    // reads the folder again, so folders moved up into it are removed too.
    for (;;) {
      const batch: string[] = [];
      for await (const entry of entriesOf(child)) if (batch.push(entry.name) >= 1000) break;
      if (batch.length === 0) break;
      for (const n of batch) await removeEntry(child, n, depth + 1, top ?? child);
    }
  } finally {
    await child.close();
  }
  await rmdir(at(dir, name));
}
