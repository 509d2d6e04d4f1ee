import { pooledCalls, type FileCalls } from './file-calls.ts';
import path from 'node:path';

export type PathRefusal =
  | 'outside_workspace'
  | 'invalid_path'
  | 'name_too_long'
  | 'not_found'
  | 'not_a_regular_file'
  | 'is_a_directory'
  /** a task folder the file tools may not write (a skill's) */
  | 'read_only'
  /** a write would take a task folder past its bound (MEMORY_MAX_BYTES) */
  | 'folder_full';

/** Longest name of one file or folder (Linux's NAME_MAX, in bytes). */
export const MAX_NAME_BYTES = 255;

/** A path the model asked for that the guard refused; its message is written for the model. */
export class PathError extends Error {
  constructor(
    readonly reason: PathRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'PathError';
  }
}

export interface ResolvedPath {
  /** Real path of the folder tree the path lies in: the workspace's root, or a task folder's (`.memory`, `.skills/<name>`). */
  root: string;
  /** Absolute path inside that tree, as the model named it (links not followed). */
  absolute: string;
  /** Path relative to the workspace root, `.` for the root itself. */
  relative: string;
  /** The real path (links followed), or for a missing target its real parent joined with the rest. */
  real: string;
  exists: boolean;
  /** The task folder the path lies in (task-folders.ts); absent for a path of the workspace itself. */
  folder?: { at: string; writable: boolean; maxBytes?: number };
}

const MAX_PATH_LENGTH = 4096;

/** True when `child` is `root` or lies below it (both absolute and normalised). */
export function isInside(root: string, child: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Resolves a model-supplied path against a workspace root whose real path is `realRoot` (a
 * relative one from `base`, the task's working folder inside it: the root unless `options.cwd`).
 * Lexically the path must stay inside; then the real path of the target (or, for a target that
 * does not exist yet, of its nearest existing ancestor) must stay inside too, so a symbolic link
 * can never lead out. A dangling link is refused: writing through it would create a file outside.
 * `calls`: how its lookups are made (the workspace's, `Workspace.calls`); `shown`: the path as
 * messages name it (the input itself unless a caller mapped it, task-folders.ts).
 */
export async function resolveWorkspacePath(
  realRoot: string,
  input: string,
  opts: { mustExist: boolean },
  base = realRoot,
  calls: FileCalls = pooledCalls,
  shown = input,
): Promise<ResolvedPath> {
  checkPathInput(input);
  const absolute = path.resolve(base, input === '' ? '.' : input);
  if (!isInside(realRoot, absolute)) {
    throw new PathError('outside_workspace', `path "${shown}" is outside the workspace`);
  }

  let real: string;
  let exists = true;
  try {
    real = await calls.realpath(absolute);
  } catch (err) {
    if (!isMissing(err)) throw new PathError('invalid_path', `path "${shown}" cannot be resolved (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    if (await isDanglingLink(absolute, calls)) {
      throw new PathError('outside_workspace', `path "${shown}" is a symbolic link whose target does not exist; refused`);
    }
    exists = false;
    real = await realMissing(realRoot, absolute, calls);
  }
  if (!isInside(realRoot, real)) {
    throw new PathError('outside_workspace', `path "${shown}" leads outside the workspace through a symbolic link`);
  }
  if (!exists && opts.mustExist) throw new PathError('not_found', `path "${shown}" does not exist`);
  return { root: realRoot, absolute, relative: path.relative(realRoot, absolute) || '.', real, exists };
}

/** What a path must be before it is looked at: a string, no NUL, no backslash, no `~`, no name past NAME_MAX. */
export function checkPathInput(input: string): void {
  if (typeof input !== 'string') throw new PathError('invalid_path', 'path must be a string');
  if (input.includes('\0')) throw new PathError('invalid_path', 'path contains a NUL byte');
  if (input.length > MAX_PATH_LENGTH) throw new PathError('invalid_path', `path longer than ${MAX_PATH_LENGTH} characters`);
  if (input.includes('\\')) throw new PathError('invalid_path', `path "${input}" contains a backslash; use "/" separators`);
  if (input.startsWith('~'))
    throw new PathError('invalid_path', `path "${input}" starts with "~"; home folders are not available, use a workspace-relative path`);
  // Said before the file system says it (with the host path in its message).
  if (input.split('/').some((name) => Buffer.byteLength(name) > MAX_NAME_BYTES)) {
    throw new PathError('name_too_long', `a name in path "${input.slice(0, 300)}" is longer than ${MAX_NAME_BYTES} bytes`);
  }
}

/** Real path of the nearest existing ancestor, joined with the missing remainder. */
async function realMissing(realRoot: string, absolute: string, calls: FileCalls): Promise<string> {
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    const parent = path.dirname(current);
    rest.unshift(path.basename(current));
    if (parent === current) return absolute;
    try {
      const realParent = await calls.realpath(parent);
      return path.join(realParent, ...rest);
    } catch (err) {
      if (!isMissing(err)) throw new PathError('invalid_path', `cannot resolve "${path.relative(realRoot, parent)}"`);
      if (await isDanglingLink(parent, calls)) {
        throw new PathError('outside_workspace', `"${path.relative(realRoot, parent)}" is a dangling symbolic link; refused`);
      }
      current = parent;
    }
  }
}

async function isDanglingLink(p: string, calls: FileCalls): Promise<boolean> {
  try {
    return (await calls.lstat(p))?.isSymbolicLink() ?? false;
  } catch {
    return false;
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
