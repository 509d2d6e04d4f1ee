import { lstat } from 'node:fs/promises';
import type { Artifact, SkippedPath } from '../tasks/task-schemas';
import { PathError } from './path-guard';
import type { Workspace } from './tool-types';

/** Public download URL of a workspace file. */
export function fileUrl(parentTaskId: string, relative: string): string {
  return `/workspaces/${encodeURIComponent(parentTaskId)}/files/${relative.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * Checks the paths a subagent handed over: each must exist inside the workspace once links are
 * resolved. Passing ones become artifacts (absolute path, size, type, time, url), the rest are
 * skipped with a reason. Duplicates are reported once.
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
      const stat = await lstat(target.absolute);
      artifacts.push({
        path: target.absolute,
        size: stat.size,
        fsType: stat.isSymbolicLink() ? 'symlink' : stat.isDirectory() ? 'directory' : 'file',
        modifiedAt: stat.mtime.toISOString(),
        url: fileUrl(workspace.parentTaskId, target.relative),
      });
    } catch (err) {
      if (seen.has(`skip:${p}`)) continue;
      seen.add(`skip:${p}`);
      skipped.push({ path: p, reason: err instanceof PathError ? err.reason : 'unreadable' });
    }
  }
  return { artifacts, skipped };
}
