import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { fileCallsFor } from './file-calls.ts';
import { checkPathInput, PathError, resolveWorkspacePath, type ResolvedPath } from './path-guard.ts';
import { lstatEntry, openInside, openRoot, removeInside, replaceFromStream, walkTree } from './safe-open.ts';
import type { TaskFolder, Workspace } from './workspace.ts';

export type { TaskFolder };

/*
 * Folders beside the shared workspace that a task's tools see at fixed places below its root: its
 * memory at `.memory/` and each of its skills at `.skills/<name>/`. They are not part of the
 * workspace: a path there resolves into the folder's own tree, confined to it as a workspace path
 * is to the workspace (no link leading out, descriptors only), and other tasks of the parent do
 * not see them. Commands see them through read-only binds of the sandbox (sandbox.ts).
 */

/** The names at a workspace's root that belong to task folders, whether a task has them or not. */
export const FOLDER_NAMES: ReadonlySet<string> = new Set(['.memory', '.skills']);

/** A task folder of `at` over the host folder `root` (which exists), with the calls its file system allows. */
export async function taskFolder(at: string, root: string, opts: { writable: boolean; maxBytes?: number }): Promise<TaskFolder> {
  return { at, root, ...opts, calls: await fileCallsFor(root) };
}

/** Entries of a writable folder looked at to sum its size; past them it takes no more writes. */
export const MAX_FOLDER_ENTRIES = 10_000;

/** The bytes of the regular files of a folder tree (links and the like count nothing), and how many entries it has. */
export async function folderUse(root: string): Promise<{ bytes: number; entries: number }> {
  let bytes = 0;
  let entries = 0;
  const handle = await openRoot(root);
  try {
    for await (const entry of walkTree(handle)) {
      if (++entries > MAX_FOLDER_ENTRIES) break;
      if (!entry.dirent.isFile()) continue;
      const stat = await lstatEntry(entry).catch(() => null); // gone since it was listed
      if (stat?.isFile()) bytes += stat.size;
    }
  } finally {
    await handle.close();
  }
  return { bytes, entries };
}

/**
 * Writes `content` to a file of a task folder as one atomic replacement (a new file beside it,
 * renamed over it: a reader, or another task writing the same file at once, never sees half a
 * file), after checking the folder may be written and stays within its bound.
 */
export async function replaceInFolder(target: ResolvedPath, content: string, shown: string): Promise<void> {
  const f = target.folder!;
  if (!f.writable) throw new PathError('read_only', `"${shown}" is in ${f.at}/, which is read-only`);
  const bytes = Buffer.byteLength(content);
  if (f.maxBytes !== undefined) {
    const use = await folderUse(target.root);
    if (use.entries > MAX_FOLDER_ENTRIES)
      throw new PathError('folder_full', `${f.at}/ holds more than ${MAX_FOLDER_ENTRIES} entries: remove some before writing`);
    const before = target.exists ? ((await lstat(target.real).catch(() => null))?.size ?? 0) : 0;
    const after = use.bytes - before + bytes;
    if (after > f.maxBytes) {
      throw new PathError(
        'folder_full',
        `writing ${bytes} bytes to "${shown}" would take ${f.at}/ to ${after} bytes, over its limit of ${f.maxBytes} (MEMORY_MAX_BYTES): shorten or remove files first`,
      );
    }
  }
  const source = (async function* () {
    yield Buffer.from(content);
  })();
  await replaceFromStream(target.root, target.real, shown, source, () => {});
}

/** Why a path under a folder name leads nowhere for this task: a model reads it. */
function notAFolder(ws: Workspace, relative: string, shown: string): PathError {
  const top = relative.split('/')[0];
  if (top === '.memory') return new PathError('not_found', `"${shown}": this task has no memory (its definition sets no \`memory\`)`);
  const skills = (ws.folders ?? []).filter((f) => f.at.startsWith('.skills/')).map((f) => `${f.at}/`);
  if (relative === '.skills') {
    return new PathError('is_a_directory', `".skills" holds this task's skills, one folder each: ${skills.join(', ') || 'none'}`);
  }
  return new PathError('not_found', `"${shown}" is not a skill of this task (its skills: ${skills.join(', ') || 'none'})`);
}

/**
 * The workspace `ws` with its task folders: a path whose first name below the root is `.memory`
 * or `.skills` resolves into the folder it names (or is refused when the task has none there);
 * every other path resolves as before. Applied last, over the working folder and the worktree.
 */
export function withTaskFolders(ws: Workspace, folders: TaskFolder[]): Workspace {
  const inner = (input: string, opts: { mustExist: boolean }) => ws.resolve(input, opts);
  const resolve = async (input: string, opts: { mustExist: boolean }): Promise<ResolvedPath> => {
    checkPathInput(input);
    const absolute = path.resolve(ws.cwd, input === '' ? '.' : input);
    const relative = path.relative(ws.root, absolute).split(path.sep).join('/');
    if (!FOLDER_NAMES.has(relative.split('/')[0])) return inner(input, opts);
    const folder = folders.find((f) => relative === f.at || relative.startsWith(`${f.at}/`));
    if (!folder) throw notAFolder({ ...ws, folders }, relative, input);
    const rest = relative.slice(folder.at.length + 1) || '.';
    const r = await resolveWorkspacePath(folder.root, rest, opts, folder.root, folder.calls, input);
    return { ...r, relative: r.relative === '.' ? folder.at : `${folder.at}/${r.relative}`, folder };
  };
  return { ...ws, folders, resolve };
}

/**
 * What `list_files` shows of a folder the task folders change: at the workspace root, the
 * workspace's own `.memory` and `.skills` (if any) hidden and the task's shown; `.skills` itself
 * is only the task's skills (`virtual`: nothing on disk to list). Null for any other folder.
 */
export function folderEntries(ws: Workspace, input: string): { hide: ReadonlySet<string>; add: string[]; virtual: boolean } | null {
  if (!ws.folders) return null;
  const relative = path.relative(ws.root, path.resolve(ws.cwd, input === '' ? '.' : input));
  if (relative === '') {
    const tops = new Set(ws.folders.map((f) => f.at.split('/')[0]));
    return { hide: FOLDER_NAMES, add: [...tops].map((t) => `${t}/`), virtual: false };
  }
  if (relative !== '.skills') return null;
  return { hide: new Set(), add: ws.folders.filter((f) => f.at.startsWith('.skills/')).map((f) => `${f.at.slice('.skills/'.length)}/`), virtual: true };
}

/**
 * Makes each task folder's place in the workspace a real, empty-looking folder for the sandbox to
 * bind the folder over (bubblewrap needs the mount point, and creates it in the workspace if
 * missing). Whatever else has that name (a link, a file a command left) is removed first: it would
 * make the bind fail, and a link is never followed. The places stay, empty, in the workspace.
 */
export async function prepareMountPoints(ws: Workspace): Promise<void> {
  for (const f of ws.folders ?? []) {
    let at = ws.root;
    for (const name of f.at.split('/')) {
      at = path.join(at, name);
      const shown = path.relative(ws.root, at);
      const found = await ws.calls.lstat(at);
      if (found && !found.isDirectory()) await removeInside(ws.root, at, shown);
      const opened = await openInside(ws.root, at, shown, 'folder', ws.calls);
      await opened.handle.close();
    }
  }
}
