import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { PathError, resolveWorkspacePath } from './path-guard.ts';
import { openInside, streamExactly } from './safe-open.ts';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

/*
 * Applying a worktree task's changes must survive a kill at any instant: the shared workspace ends
 * either as it was or with every change in place, never between. So before the first workspace
 * file is touched, a journal is made durable beside the copy: every change's new content staged in
 * the journal's folder, and for each path the sha256 of the shared file before and after (null:
 * no file). The journal's folder is built under another name and renamed into place (the commit:
 * from then on the apply will happen). Replaying it is idempotent: a path already in its after
 * state is left alone, one still in its before state is written (a temporary file renamed over
 * it), and one that is neither was changed by someone else since and is kept as they made it. A
 * replay cut short leaves only temporary files of names the journal knows, removed by the next.
 *
 * The shared workspace is hostile (commands of other tasks run in it): its folders are opened
 * through descriptors without following links (safe-open.ts) and every file is named relative to
 * its folder's descriptor, as everywhere else.
 */

/** One path of the journal. */
export interface JournalChange {
  path: string;
  /** sha256 (hex) of the shared file when the journal was written; null when there was none. */
  before: string | null;
  /** sha256 of what the apply puts there; null: the file is removed. */
  after: string | null;
  /** The mode bits of the written file. */
  mode: number;
  /** The staged content's file name in the journal's folder (null for a removal). */
  staged: string | null;
}

export interface ApplyJournal {
  /** Names this journal's temporary files in the shared workspace. */
  id: string;
  changes: JournalChange[];
}

const JOURNAL_FILE = 'journal.json';
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;
const tempName = (journal: ApplyJournal, index: number) => `.apply-${journal.id}-${index}`;
/** Errors of the file system (a full disk, an I/O error) carry an errno code; a refusal of the guard does not, or is a PathError. */
const isRefusal = (err: unknown) => err instanceof PathError || typeof (err as NodeJS.ErrnoException).code !== 'string';
const ignoreMissing = (err: NodeJS.ErrnoException) => {
  if (err.code !== 'ENOENT') throw err;
};

/** A path's state in the shared workspace: no file, a regular file's hash and mode, or something else (a folder, a link, a FIFO). */
type FileState = 'absent' | 'other' | { hash: string; mode: number };

async function hashOf(handle: FileHandle): Promise<string> {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(1024 * 1024);
  for (let position = 0; ;) {
    const { bytesRead } = await handle.read(buf, 0, buf.length, position);
    if (bytesRead === 0) return hash.digest('hex');
    hash.update(buf.subarray(0, bytesRead));
    position += bytesRead;
  }
}

/** The state of `name` in the opened folder `folder`, a link never followed and a FIFO never waited on. */
async function stateAt(folder: FileHandle, name: string): Promise<FileState> {
  let handle: FileHandle;
  try {
    handle = await open(at(folder, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'absent';
    if (code === 'ELOOP' || code === 'ENXIO' || code === 'EISDIR') return 'other';
    throw err;
  }
  try {
    const stat = await handle.stat();
    return stat.isFile() ? { hash: await hashOf(handle), mode: stat.mode & 0o777 } : 'other';
  } finally {
    await handle.close();
  }
}

/** The opened folder holding `relative` in the shared workspace and the file's name in it; null when the folder is missing (and not asked for). */
async function folderOf(sharedRoot: string, relative: string, create: boolean): Promise<{ folder: FileHandle; name: string } | null> {
  const target = await resolveWorkspacePath(sharedRoot, relative, { mustExist: false });
  try {
    const opened = await openInside(sharedRoot, path.dirname(target.real), path.dirname(relative), create ? 'folder' : 'dir');
    return { folder: opened.handle, name: path.basename(target.real) };
  } catch (err) {
    if (!create && err instanceof PathError && err.reason === 'not_found') return null;
    throw err;
  }
}

async function sharedState(sharedRoot: string, relative: string): Promise<FileState> {
  const found = await folderOf(sharedRoot, relative, false);
  if (!found) return 'absent';
  try {
    return await stateAt(found.folder, found.name);
  } finally {
    await found.folder.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A file written whole and flushed to disk before it is closed. */
async function writeDurably(file: string, source: AsyncIterable<Buffer> | string): Promise<string> {
  const hash = createHash('sha256');
  const out = await open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600);
  try {
    for await (const chunk of typeof source === 'string' ? [Buffer.from(source)] : source) {
      hash.update(chunk);
      for (let off = 0; off < chunk.length;) off += (await out.write(chunk, off, chunk.length - off)).bytesWritten;
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return hash.digest('hex');
}

/**
 * Builds a journal in `into` (a new folder): the content of each added or modified file, read
 * from the copy through a checked descriptor, and every path's before and after hashes. Nothing
 * is written to the shared workspace. A path that cannot be read there or in the copy throws a
 * PathError with `path` set (a conflict for the caller).
 */
export async function stageJournal(opts: {
  sharedRoot: string;
  copyRoot: string;
  changes: { added: string[]; modified: string[]; deleted: string[] };
  into: string;
}): Promise<ApplyJournal> {
  const { sharedRoot, copyRoot, changes, into } = opts;
  await mkdir(into, { recursive: true, mode: 0o700 });
  const journal: ApplyJournal = { id: randomBytes(6).toString('hex'), changes: [] };
  const writes = new Set([...changes.added, ...changes.modified]);
  for (const p of [...writes, ...changes.deleted]) {
    try {
      const now = await sharedState(sharedRoot, p);
      if (now === 'other') throw new PathError('not_a_regular_file', `"${p}" is no longer a regular file in the shared workspace`);
      const before = now === 'absent' ? null : now.hash;
      if (!writes.has(p)) {
        journal.changes.push({ path: p, before, after: null, mode: 0, staged: null });
        continue;
      }
      const from = await resolveWorkspacePath(copyRoot, p, { mustExist: true });
      const opened = await openInside(copyRoot, from.real, p, 'read');
      const staged = String(journal.changes.length);
      const after = await writeDurably(path.join(into, staged), streamExactly(opened));
      journal.changes.push({ path: p, before, after, mode: opened.stat.mode & 0o777, staged });
    } catch (err) {
      if (err instanceof PathError) throw Object.assign(err, { path: p });
      throw err;
    }
  }
  await writeDurably(path.join(into, JOURNAL_FILE), JSON.stringify(journal));
  await syncDir(into);
  return journal;
}

/**
 * Commits a staged journal: renames its folder to `journalDir` (atomic, and refused when a journal
 * is already there: false then, and the staged one is removed). From here the apply will happen.
 */
export async function commitJournal(staged: string, journalDir: string): Promise<boolean> {
  try {
    await rename(staged, journalDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    await rm(staged, { recursive: true, force: true });
    return false;
  }
  await syncDir(path.dirname(journalDir));
  return true;
}

/** The committed journal in `journalDir`, or null when there is none. */
export async function readJournal(journalDir: string): Promise<ApplyJournal | null> {
  try {
    return JSON.parse(await readFile(path.join(journalDir, JOURNAL_FILE), 'utf8')) as ApplyJournal;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Brings every path of the journal to its after state (idempotent: run it again after a kill and
 * it finishes the work). `applied`: the paths in their after state; `kept`: those someone else
 * changed since the journal was written, or that became a folder or a link, left as they are.
 * `stopped` is asked before each path (a lease lost to another instance): it throws then.
 */
export async function replayJournal(opts: {
  sharedRoot: string;
  journalDir: string;
  journal: ApplyJournal;
  stopped?: () => boolean;
}): Promise<{ applied: string[]; kept: string[] }> {
  const { sharedRoot, journalDir, journal } = opts;
  const applied: string[] = [];
  const kept: string[] = [];
  for (const [index, change] of journal.changes.entries()) {
    if (opts.stopped?.()) throw new Error('the apply was taken over by another instance');
    let done: boolean;
    try {
      done = await replayOne(sharedRoot, journalDir, journal, index, change);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      done = false;
    }
    (done ? applied : kept).push(change.path);
  }
  return { applied: applied.sort(), kept: kept.sort() };
}

async function replayOne(sharedRoot: string, journalDir: string, journal: ApplyJournal, index: number, change: JournalChange): Promise<boolean> {
  const found = await folderOf(sharedRoot, change.path, change.after !== null);
  // No folder: no file to remove, nor a temporary file of an earlier replay.
  if (!found) return change.after === null;
  const { folder, name } = found;
  const temp = tempName(journal, index);
  try {
    // What a replay killed before its rename left.
    await unlink(at(folder, temp)).catch(ignoreMissing);
    const now = await stateAt(folder, name);
    const isAfter = change.after === null ? now === 'absent' : typeof now === 'object' && now.hash === change.after && now.mode === change.mode;
    if (isAfter) return true;
    const isBefore = change.before === null ? now === 'absent' : typeof now === 'object' && now.hash === change.before;
    if (!isBefore) return false;
    if (change.after === null) {
      await unlink(at(folder, name));
    } else {
      await writeTemp(folder, temp, path.join(journalDir, change.staged!), change.mode);
      if ((await lstat(at(folder, name)).catch(() => null))?.isDirectory()) {
        await unlink(at(folder, temp));
        return false;
      }
      await rename(at(folder, temp), at(folder, name));
    }
    await folder.sync();
    return true;
  } finally {
    await folder.close();
  }
}

/** Copies a staged file into a new temporary file of the folder (never following a link at its name), flushed, with `mode`. */
async function writeTemp(folder: FileHandle, temp: string, staged: string, mode: number): Promise<void> {
  const out = await open(at(folder, temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o600);
  try {
    const source = await open(staged, O_RDONLY);
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024);
      for (let position = 0; ;) {
        const { bytesRead } = await source.read(buf, 0, buf.length, position);
        if (bytesRead === 0) break;
        for (let off = 0; off < bytesRead;) off += (await out.write(buf, off, bytesRead - off, position + off)).bytesWritten;
        position += bytesRead;
      }
    } finally {
      await source.close();
    }
    // The mode exactly (the umask does not apply to chmod), set on the descriptor.
    await out.chmod(mode);
    await out.sync();
  } finally {
    await out.close();
  }
}
