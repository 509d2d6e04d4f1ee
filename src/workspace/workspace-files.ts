import type { Stats } from 'node:fs';
import type { WorkspaceFile, WorkspaceListing } from '../shapes/artifact.ts';
import { fileUrl } from './workspace.ts';
import { lstatEntry, openRoot, walkTree } from './safe-open.ts';

export const MAX_LISTED_ENTRIES = 10_000;

/** How a workspace route describes a file, folder or link (`relative` is `/`-separated). */
export function describeFile(parentTaskId: string, relative: string, stat: Stats): WorkspaceFile | null {
  const fsType = stat.isSymbolicLink() ? 'symlink' : stat.isDirectory() ? 'directory' : stat.isFile() ? 'file' : null;
  if (!fsType) return null; // FIFOs, sockets and devices are nothing an orchestrator can fetch
  return { path: relative, relativePath: relative, size: stat.size, fsType, modifiedAt: stat.mtime.toISOString(), url: fileUrl(parentTaskId, relative) };
}

/**
 * Every file, folder and link below a workspace's (real) root, depth first from the root's
 * descriptor, links reported and never followed, at most `MAX_LISTED_ENTRIES`, sorted by path.
 */
export async function listWorkspace(root: string, parentTaskId: string, signal?: AbortSignal): Promise<WorkspaceListing> {
  const files: WorkspaceFile[] = [];
  let truncated = false;
  const handle = await openRoot(root);
  try {
    for await (const entry of walkTree(handle, { signal })) {
      if (files.length >= MAX_LISTED_ENTRIES) {
        truncated = true;
        break;
      }
      const stat = await lstatEntry(entry).catch(() => null); // gone since it was listed
      const file = stat && describeFile(parentTaskId, entry.relative, stat);
      if (file) files.push(file);
    }
  } finally {
    await handle.close();
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, truncated };
}
