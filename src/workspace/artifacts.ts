import path from 'node:path';
import type { Artifact, SkippedPath } from '../shapes/artifact.ts';
import { isInside, PathError } from './path-guard.ts';
import { openInside } from './safe-open.ts';
import type { Workspace } from './workspace.ts';

/**
 * Checks the paths a subagent handed over: each must be a regular file or a folder inside the
 * workspace once links are resolved. Its size, type and time come from the opened descriptor.
 * Passing ones become artifacts (absolute and relative path, size, type, time, url); the rest are skipped with a
 * reason (`not_found`, `outside_workspace`, `not_a_regular_file` for a FIFO, socket or device, ...).
 * Duplicates are reported once.
 */
export async function checkArtifacts(workspace: Workspace, paths: string[]): Promise<{ artifacts: Artifact[]; skipped: SkippedPath[] }> {
  const artifacts: Artifact[] = [];
  const skipped: SkippedPath[] = [];
  const seen = new Set<string>();
  for (const p of paths) {
    try {
      const target = await workspace.resolve(p, { mustExist: true });
      if (seen.has(target.absolute)) continue;
      seen.add(target.absolute);
      const opened = await openInside(workspace.root, target.real, p, 'any', workspace.calls).catch((err: Error) => {
        throw err instanceof PathError ? err : new PathError('not_a_regular_file', err.message);
      });
      await opened.handle.close();
      // Named through a link inside the workspace: reported as the link it is (only the type).
      const named = await lstatOrNothing(workspace, target.absolute);
      artifacts.push({
        path: target.absolute,
        relativePath: target.relative,
        size: opened.stat.size,
        fsType: named?.isSymbolicLink() ? 'symlink' : opened.stat.isDirectory() ? 'directory' : 'file',
        modifiedAt: opened.stat.mtime.toISOString(),
        url: workspace.urlOf(target.relative),
      });
    } catch (err) {
      if (seen.has(`skip:${p}`)) continue;
      seen.add(`skip:${p}`);
      skipped.push({ path: p, relativePath: relativeOf(workspace.root, workspace.cwd, p), reason: skipReason(err) });
    }
  }
  return { artifacts, skipped };
}

/** A handed-over path (relative to the working folder `cwd`) relative to the workspace root, lexically; null when it does not lie inside. */
function relativeOf(root: string, cwd: string, p: string): string | null {
  if (typeof p !== 'string' || p.includes('\0')) return null;
  const absolute = path.resolve(cwd, p);
  return isInside(root, absolute) ? path.relative(root, absolute) || '.' : null;
}

/** Why a handed-over path was skipped: `is_a_directory` cannot come from an `any` open. */
function skipReason(err: unknown): SkippedPath['reason'] {
  if (!(err instanceof PathError)) return 'unreadable';
  if (err.reason === 'is_a_directory') return 'not_a_regular_file';
  if (err.reason === 'name_too_long' || err.reason === 'read_only' || err.reason === 'folder_full') return 'invalid_path';
  return err.reason;
}

/** `lstat` of a handed-over path, or nothing when it cannot be read (the artifact is still reported, by its descriptor). */
async function lstatOrNothing(workspace: Workspace, p: string) {
  try {
    return await workspace.calls.lstat(p);
  } catch {
    return undefined;
  }
}
