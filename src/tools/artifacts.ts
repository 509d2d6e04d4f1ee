import { lstat } from 'node:fs/promises';
import type { Artifact, SkippedPath } from '../shapes/artifact.ts';
import { PathError } from './path-guard.ts';
import { openInside } from './safe-open.ts';
import type { Workspace } from './tool-types.ts';

/** Public download URL of a workspace file. */
export function fileUrl(parentTaskId: string, relative: string): string {
  return `/workspaces/${encodeURIComponent(parentTaskId)}/files/${relative.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * Checks the paths a subagent handed over: each must be a regular file or a folder inside the
 * workspace once links are resolved. Its size, type and time come from the opened descriptor.
 * Passing ones become artifacts (absolute path, size, type, time, url); the rest are skipped with a
 * reason (`not_found`, `outside_workspace`, `not_a_regular_file` for a FIFO, socket or device, ...).
 * Duplicates are reported once.
 */
export async function checkArtifacts(
  workspace: Workspace,
  paths: string[],
): Promise<{ artifacts: Artifact[]; skipped: SkippedPath[] }> {
  const artifacts: Artifact[] = [];
  const skipped: SkippedPath[] = [];
  const seen = new Set<string>();
  for (const p of paths) {
    try {
      const target = await workspace.resolve(p, { mustExist: true });
      if (seen.has(target.absolute)) continue;
      seen.add(target.absolute);
      const opened = await openInside(workspace.root, target.real, p, 'any').catch((err: Error) => {
        throw err instanceof PathError ? err : new PathError('not_a_regular_file', err.message);
      });
      await opened.handle.close();
      // Named through a link inside the workspace: reported as the link it is (only the type).
      const named = await lstat(target.absolute).catch(() => null);
      artifacts.push({
        path: target.absolute,
        size: opened.stat.size,
        fsType: named?.isSymbolicLink() ? 'symlink' : opened.stat.isDirectory() ? 'directory' : 'file',
        modifiedAt: opened.stat.mtime.toISOString(),
        url: fileUrl(workspace.parentTaskId, target.relative),
      });
    } catch (err) {
      if (seen.has(`skip:${p}`)) continue;
      seen.add(`skip:${p}`);
      // A folder is an artifact like a file: `is_a_directory` cannot come from an `any` open.
      skipped.push({ path: p, reason: err instanceof PathError ? (err.reason === 'is_a_directory' ? 'not_a_regular_file' : err.reason) : 'unreadable' });
    }
  }
  return { artifacts, skipped };
}
