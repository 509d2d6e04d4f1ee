import { commitJournal, readJournal, replayJournal, stageJournal } from './apply-journal.ts';
import { fileCallsFor, type FileCalls } from './file-calls.ts';
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { lstat, mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { formatPatch, structuredPatch } from 'diff';
import type { WorktreeState } from '../shapes/task.ts';
import { PathError, resolveWorkspacePath } from './path-guard.ts';
import { openInside, readHead } from './safe-open.ts';
import type { Workspace } from './workspace.ts';

/*
 * `options.isolation: "worktree"`: a task works on its own copy of the parent's workspace, taken
 * when it starts, beside the workspaces (`<WORKSPACES_DIR>/#worktrees/<taskId>`; `#` never occurs
 * in a parentTaskId). The copy is read from the shared workspace the way every tool reads it:
 * folder by folder through descriptors, no link followed, each file opened non-blocking and
 * checked with fstat before a byte is copied (a FIFO or a link swapped in is skipped, never
 * followed), and copied from that descriptor with copy-on-write clones where the filesystem
 * offers them (FICLONE on btrfs, XFS, bcachefs; a plain copy elsewhere), exactly the size fstat
 * gave (a file that grows meanwhile is cut there). A manifest beside the copy keeps each file's
 * marks (size, inode, mtime and ctime in ns) in the shared workspace and in the copy: the task's
 * changes are the copy's files whose marks moved, and applying refuses a path whose shared file
 * moved since the copy was taken. The copy and the walk of the changes run on a worker thread
 * (worktree-thread.mjs), so the event loop pays nothing per file.
 */

/** A workspace over this many entries is not copied (the task ends `worktree_failed`). */
export const MAX_WORKTREE_ENTRIES = 100_000;
/** Nor one over this many bytes of regular files. */
export const MAX_WORKTREE_BYTES = 4 * 1024 ** 3;
/** A file over this many bytes (or with a NUL byte) is a binary file in the diff. */
const MAX_DIFFED_BYTES = 1024 * 1024;
/** The diff of one request spends at most this long computing (in slices, yielding between files). */
const DIFF_BUDGET_MS = 500;
const MAX_PATCH_CHARS = 16 * 1024 * 1024;

/** What moves when a file's content may have changed. */
interface Mark {
  size: number;
  ino: number;
  mtimeNs: string;
  ctimeNs: string;
}
interface Manifest {
  takenAt: number;
  /** Every regular file copied: its marks in the shared workspace and in the copy. */
  files: Record<string, { shared: Mark; copy: Mark }>;
  /** The candidate whose copy this became (adoptWorktree). */
  adoptedFrom?: string;
}

export class WorktreeError extends Error {
  readonly code = 'worktree_failed';
}

const markOf = (s: BigIntStats): Mark => ({ size: Number(s.size), ino: Number(s.ino), mtimeNs: String(s.mtimeNs), ctimeNs: String(s.ctimeNs) });
const sameMark = (a: Mark, b: Mark) => a.size === b.size && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/** Where a task's copy (and, beside it, its manifest) lives, under a tenant's workspaces folder. */
export function worktreeDir(workspacesDir: string, taskId: string): string {
  return path.join(workspacesDir, '#worktrees', taskId);
}
const manifestPath = (dir: string) => `${dir}.json`;

/** The files URL of a worktree task: its artifacts are served from its copy. */
export function taskFileUrl(taskId: string, relative: string): string {
  return `/tasks/${encodeURIComponent(taskId)}/files/${relative.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * The task's copy of `shared` as its workspace: taken now, or (a resumed task) the one it already
 * has. Relative paths, the sandbox and artifacts then work on the copy; `relativePath`s are the same.
 */
export async function enterWorktree(shared: Workspace, dir: string, taskId: string, now: number): Promise<Workspace> {
  // A candidate's copy being made this one's when the process died: finished first, never copied over.
  await finishAdoption(dir);
  const root = await copyOfFolder(shared.root, dir, now);
  return worktreeWorkspace(shared.parentTaskId, root, taskId, await fileCallsFor(root));
}

/**
 * A copy of the folder `source` in `dir`, with its manifest, taken now unless one is there (a
 * resumed task's): its real root. Its changes, applies and removal are a worktree's.
 */
export async function copyOfFolder(source: string, dir: string, now: number): Promise<string> {
  if (!(await readManifest(dir))) {
    const manifest = await takeCopy(source, dir).catch(async (err: unknown) => {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      if (err instanceof WorktreeError) throw err;
      // Its code, never its message (which names host paths).
      throw new WorktreeError(`the workspace could not be copied (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    });
    const temp = `${manifestPath(dir)}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify({ ...manifest, takenAt: now }), { mode: 0o600 });
    await rename(temp, manifestPath(dir));
  }
  return realRoot(dir);
}

/** Where an attempt of a task with candidates keeps its copy of its memory folder: beside its worktree, removed with it. */
export const memoryCopyOf = (dir: string) => `${dir}.memory`;

/**
 * Puts the changes of the folder copy in `dir` into `target` (a kept attempt's memory), all or
 * nothing across a crash (the apply's journal), then removes the copy. Run again after a crash, it
 * replays the journal it committed, or finds the copy gone: done.
 */
export async function landFolderCopy(target: string, dir: string): Promise<void> {
  const committed = await readJournal(journalDirOf(dir));
  if (committed) await replayJournal({ sharedRoot: target, journalDir: journalDirOf(dir), journal: committed });
  else {
    const changes = await changesOf(dir);
    if (!changes) return;
    await applyChanges(target, dir, changes);
  }
  await removeWorktree(dir);
}

/** The copy as a workspace, with the calls its own file system allows. */
function worktreeWorkspace(parentTaskId: string, root: string, taskId: string, calls: FileCalls): Workspace {
  return {
    parentTaskId,
    root,
    cwd: root,
    calls,
    resolve: (input, opts) => resolveWorkspacePath(root, input, opts, root, calls),
    urlOf: (relative) => taskFileUrl(taskId, relative),
  };
}

const realRoot = (dir: string) => realpath(dir);

/** The copy's root if it is still there (not applied, not expired), else null. */
export async function worktreeRoot(dir: string): Promise<string | null> {
  if (!(await readManifest(dir))) return null;
  return realRoot(dir).catch(() => null);
}

async function readManifest(dir: string): Promise<Manifest | null> {
  try {
    return JSON.parse(await readFile(manifestPath(dir), 'utf8')) as Manifest;
  } catch {
    return null;
  }
}

/** Runs one operation of worktree-thread.mjs on a worker thread of its own. */
function inThread<T>(data: Record<string, unknown>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const worker = new Worker(new URL('./worktree-thread.mjs', import.meta.url), { workerData: data });
    worker.once('message', (m: { ok: boolean; value?: T; limit?: boolean; code?: string | null; message?: string }) => {
      if (m.ok) resolve(m.value as T);
      // A limit says what it is; any other failure only its code (a message would name host paths).
      else
        reject(
          m.limit
            ? new WorktreeError(m.message ?? 'over a limit')
            : Object.assign(new Error(`the workspace could not be walked (${m.code ?? 'error'})`), { code: m.code }),
        );
    });
    worker.once('error', reject);
    worker.once('exit', (code) => code !== 0 && reject(new Error(`the worktree thread exited with code ${code}`)));
  });
}

/** Copies the regular files, folders and links of `sharedRoot` into `dest` (replaced if there). */
async function takeCopy(sharedRoot: string, dest: string): Promise<Omit<Manifest, 'takenAt'>> {
  // What an interrupted copy left (the manifest is written last) goes first.
  await rm(dest, { recursive: true, force: true });
  await mkdir(dest, { recursive: true, mode: 0o750 });
  return inThread({ op: 'copy', root: sharedRoot, dest, maxEntries: MAX_WORKTREE_ENTRIES, maxBytes: MAX_WORKTREE_BYTES });
}

/**
 * A candidate's copy (`options.candidates`), cloned from `snapshotDir`, the copy its task took of the
 * shared workspace: the same walk as a copy of the workspace (clones where the filesystem offers
 * them), each file keeping in the manifest the marks its shared file had when the snapshot was
 * taken, so the candidate's changes and an apply's conflicts are judged against the workspace as
 * the snapshot saw it. A copy already there (a resumed task made it) is kept.
 */
export async function cloneWorktree(snapshotDir: string, dest: string, now: number): Promise<void> {
  if (await readManifest(dest)) return;
  const snapshot = await readManifest(snapshotDir);
  const root = snapshot && (await realRoot(snapshotDir).catch(() => null));
  if (!snapshot || !root) throw new WorktreeError('the snapshot of the workspace is gone');
  const copied = await takeCopy(root, dest).catch(async (err: unknown) => {
    await rm(dest, { recursive: true, force: true }).catch(() => {});
    if (err instanceof WorktreeError) throw err;
    throw new WorktreeError(`the snapshot could not be copied (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  });
  const files: Manifest['files'] = {};
  for (const [p, marks] of Object.entries(copied.files)) {
    const shared = snapshot.files[p]?.shared;
    if (shared) files[p] = { shared, copy: marks.copy };
  }
  const temp = `${manifestPath(dest)}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify({ takenAt: snapshot.takenAt ?? now, files }), { mode: 0o600 });
  await rename(temp, manifestPath(dest));
}

/** Where an adoption under way (adoptWorktree) names the copy it moves onto `dir`: written first, removed last. */
const adoptionPath = (dir: string) => `${dir}.adopting`;

/**
 * Makes the copy in `from` (and its manifest) the copy in `to`, replacing what `to` held (a
 * candidate's copy becomes its task's), all or nothing whatever kills the process: the intent
 * (`<to>.adopting`, naming `from`) is written before anything moves and removed after the last
 * step, and the moved manifest names where it came from. Run again, it finishes an adoption under
 * way (enterWorktree does too, before a resumed task looks at its copy) or finds it done. Throws
 * (WorktreeError) when `from` is gone without having been adopted (removed meanwhile).
 */
export async function adoptWorktree(from: string, to: string): Promise<void> {
  const fromId = path.basename(from);
  if (path.dirname(from) !== path.dirname(to)) throw new Error('a copy is adopted from beside it');
  if (!(await there(adoptionPath(to)))) {
    if ((await readManifest(to))?.adoptedFrom === fromId) return;
    if (!(await readManifest(from))) throw new WorktreeError(`the copy of ${fromId} is gone`);
    const temp = `${adoptionPath(to)}.${process.pid}.tmp`;
    await writeFile(temp, fromId, { mode: 0o600 });
    await rename(temp, adoptionPath(to));
  }
  await finishAdoption(to);
}

const there = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

/** Finishes the adoption onto `to` its intent names, if one is under way (each step can be done again). */
async function finishAdoption(to: string): Promise<void> {
  const fromId = await readFile(adoptionPath(to), 'utf8').catch(() => null);
  if (fromId === null) return;
  if (!fromId || fromId.includes('/') || fromId.startsWith('.')) throw new WorktreeError('an adoption of a copy names no copy');
  const from = path.join(path.dirname(to), fromId);
  const manifest = await readManifest(from);
  if (manifest) {
    // Until the manifest is written below, `to` has none: it is no copy to anyone but this.
    await rm(manifestPath(to), { force: true });
    if (await there(from)) {
      await rm(to, { recursive: true, force: true });
      await rename(from, to);
    }
    const temp = `${manifestPath(to)}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify({ ...manifest, adoptedFrom: fromId }), { mode: 0o600 });
    await rename(temp, manifestPath(to));
    await rm(manifestPath(from), { force: true });
  }
  await rm(adoptionPath(to), { force: true });
}

/** The regular files the task added, modified and deleted in its copy (sorted); null when the copy is gone. */
export async function changesOf(dir: string): Promise<Pick<WorktreeState, 'added' | 'modified' | 'deleted'> | null> {
  const manifest = await readManifest(dir);
  const root = manifest && (await realRoot(dir).catch(() => null));
  if (!manifest || !root) return null;
  return inThread({ op: 'changes', root, maxEntries: MAX_WORKTREE_ENTRIES, files: manifest.files });
}

/** The paths of `changes` whose file in the shared workspace moved since the copy was taken. */
export async function conflictsOf(sharedRoot: string, dir: string, changes: Pick<WorktreeState, 'added' | 'modified' | 'deleted'>): Promise<string[]> {
  const manifest = await readManifest(dir);
  if (!manifest) throw new WorktreeError('the copy is gone');
  const conflicts: string[] = [];
  for (const p of [...changes.added, ...changes.modified, ...changes.deleted]) {
    const now = await sharedMark(sharedRoot, p);
    const before = manifest.files[p]?.shared;
    if (!before) {
      if (now !== 'absent') conflicts.push(p); // added here, and created there meanwhile
    } else if (now === 'absent') {
      if (!changes.deleted.includes(p)) conflicts.push(p); // deleted there meanwhile (a deletion agrees)
    } else if (now === 'other' || !sameMark(before, now)) {
      conflicts.push(p);
    }
  }
  return conflicts.sort();
}

/** A shared file's marks, `absent`, or `other` (a folder, a link, a FIFO ... where a file was). */
async function sharedMark(sharedRoot: string, relative: string): Promise<Mark | 'absent' | 'other'> {
  try {
    const target = await resolveWorkspacePath(sharedRoot, relative, { mustExist: true });
    if ((await lstat(target.absolute)).isSymbolicLink()) return 'other';
    const opened = await openInside(sharedRoot, target.real, relative, 'read');
    try {
      return markOf(await opened.handle.stat({ bigint: true }));
    } finally {
      await opened.handle.close();
    }
  } catch (err) {
    return err instanceof PathError && err.reason === 'not_found' ? 'absent' : 'other';
  }
}

/**
 * Writes the changes into the shared workspace the way an apply does, without its claim in the
 * database (worktree-system.ts): a journal staged and committed beside the copy, then replayed
 * (apply-journal.ts). Returns every path written or removed.
 */
export async function applyChanges(sharedRoot: string, dir: string, changes: Pick<WorktreeState, 'added' | 'modified' | 'deleted'>): Promise<string[]> {
  const staging = path.join(stagingDirOf(dir), randomBytes(6).toString('hex'));
  const journal = await stageJournal({ sharedRoot, copyRoot: await realRoot(dir), changes, into: staging });
  if (!(await commitJournal(staging, journalDirOf(dir)))) throw new WorktreeError('another apply of this copy is under way');
  return (await replayJournal({ sharedRoot, journalDir: journalDirOf(dir), journal })).applied;
}

/** Where the journal of an apply of the copy in `dir` is committed (apply-journal.ts). */
export const journalDirOf = (dir: string) => `${dir}.apply`;
/** Where journals are built before their commit (one folder per attempt, all removed with the copy). */
export const stagingDirOf = (dir: string) => `${dir}.staging`;

/**
 * Removes a task's copy and its manifest (the manifest first: a half-removed copy is no copy), and
 * what its applies left: the journal (only once the apply is recorded) and unfinished stagings.
 */
export async function removeWorktree(dir: string): Promise<void> {
  // The manifest first: without it the copy is no longer one (worktreeRoot), whatever is left.
  await rm(manifestPath(dir), { force: true });
  // An attempt's copy of its memory goes with it (unless landed: then it is gone already).
  if (!dir.endsWith('.memory')) await removeWorktree(memoryCopyOf(dir));
  await rm(adoptionPath(dir), { force: true });
  await rm(dir, { recursive: true, force: true });
  await rm(stagingDirOf(dir), { recursive: true, force: true });
  await rm(journalDirOf(dir), { recursive: true, force: true });
}

/**
 * A unified diff of the changes: the shared workspace as it is now (`a/`) against the copy (`b/`).
 * A file over 1 MiB or with a NUL byte is reported as binary; a diff too costly to compute (the
 * request's 500 ms are spent, or one file's) as too large to show.
 */
export async function patchOf(sharedRoot: string, dir: string, changes: Pick<WorktreeState, 'added' | 'modified' | 'deleted'>): Promise<string> {
  const copyRoot = await realRoot(dir);
  const paths = [...changes.added, ...changes.modified, ...changes.deleted].sort();
  const deadline = Date.now() + DIFF_BUDGET_MS;
  let out = '';
  for (const p of paths) {
    if (out.length > MAX_PATCH_CHARS) {
      out += `# the diff stops here: it is over ${MAX_PATCH_CHARS} characters\n`;
      break;
    }
    const before = await textOf(sharedRoot, p);
    const after = changes.deleted.includes(p) ? ({ kind: 'absent' } as const) : await textOf(copyRoot, p);
    const oldName = before.kind === 'absent' ? '/dev/null' : `a/${p}`;
    const newName = after.kind === 'absent' ? '/dev/null' : `b/${p}`;
    if (before.kind === 'binary' || after.kind === 'binary') {
      out += `diff a/${p} b/${p}\nBinary files ${oldName} and ${newName} differ\n`;
      continue;
    }
    const left = Math.max(0, deadline - Date.now());
    const patch =
      left > 0
        ? structuredPatch(oldName, newName, before.kind === 'text' ? before.text : '', after.kind === 'text' ? after.text : '', undefined, undefined, {
            context: 3,
            timeout: Math.min(left, 100),
          })
        : undefined;
    out += patch
      ? `diff a/${p} b/${p}\n${formatPatch(patch, { includeIndex: false, includeUnderline: false, includeFileHeaders: true })}`
      : `diff a/${p} b/${p}\n# ${p}: the diff is too large to show here\n`;
    await yieldToLoop();
  }
  return out;
}

type Text = { kind: 'absent' } | { kind: 'binary' } | { kind: 'text'; text: string };

async function textOf(root: string, relative: string): Promise<Text> {
  try {
    const target = await resolveWorkspacePath(root, relative, { mustExist: true });
    const opened = await openInside(root, target.real, relative, 'read');
    try {
      if (opened.stat.size > MAX_DIFFED_BYTES) return { kind: 'binary' };
      const buf = await readHead(opened, MAX_DIFFED_BYTES);
      return buf.includes(0) ? { kind: 'binary' } : { kind: 'text', text: buf.toString('utf8') };
    } finally {
      await opened.handle.close();
    }
  } catch (err) {
    if (err instanceof PathError && err.reason === 'not_found') return { kind: 'absent' };
    return { kind: 'binary' };
  }
}
