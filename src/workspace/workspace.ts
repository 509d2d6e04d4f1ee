import { mkdir } from 'node:fs/promises';
import { fileCallsFor, type FileCalls } from './file-calls.ts';
import path from 'node:path';
import { resolveWorkspacePath, type ResolvedPath } from './path-guard.ts';
import { openInside } from './safe-open.ts';

/** The parent task's workspace folder, shared by all its subagents. */
export interface Workspace {
  parentTaskId: string;
  /** Real path of the workspace folder. */
  root: string;
  /** Real path of the task's working folder (`options.cwd`): the root unless set; relative paths resolve from it. */
  cwd: string;
  resolve(input: string, opts: { mustExist: boolean }): Promise<ResolvedPath>;
  /** How its paths are looked up and opened: synchronously on a local file system (file-calls.ts). */
  calls: FileCalls;
  /** The download URL of a file of it, by its path relative to the root. */
  urlOf(relative: string): string;
  /** The task's own folders beside it, seen below its root (`.memory`, `.skills/<name>`: task-folders.ts). */
  folders?: TaskFolder[];
}

/**
 * A folder beside the shared workspace that a task's tools see at a fixed place below its root:
 * its memory at `.memory/`, each of its skills at `.skills/<name>/` (task-folders.ts).
 */
export interface TaskFolder {
  /** Where the tools see it, relative to the workspace root: `.memory` or `.skills/<name>`. */
  at: string;
  /** Its real path on the host. */
  root: string;
  /** The file tools may write it (the memory); a skill's folder is read-only. */
  writable: boolean;
  /** A writable folder's bound (MEMORY_MAX_BYTES): a write that would take it past is refused. */
  maxBytes?: number;
  /** How its paths are looked up (its own file system's, file-calls.ts). */
  calls: FileCalls;
}

/** Where a tenant's workspaces live: `WORKSPACES_DIR` itself, or `WORKSPACES_DIR/@<tenant>` with API keys. */
export type WorkspacesDirOf = (tenant: string) => string;

export function workspaceLayout(workspacesDir: string, multiTenant: boolean): WorkspacesDirOf {
  // `@` cannot occur in a parentTaskId, so a tenant's folder never collides with a workspace.
  return multiTenant ? (tenant) => path.join(workspacesDir, `@${tenant}`) : () => workspacesDir;
}

/** Public download URL of a workspace file. */
export function fileUrl(parentTaskId: string, relative: string): string {
  return `/workspaces/${encodeURIComponent(parentTaskId)}/files/${relative.split('/').map(encodeURIComponent).join('/')}`;
}

/** Path of a parent task's workspace folder (the id is validated before it gets here). */
export function workspacePath(workspacesDir: string, parentTaskId: string): string {
  return path.join(workspacesDir, parentTaskId);
}

/**
 * Creates (if needed) and opens the workspace shared by every subagent of `parentTaskId`, with the
 * calls its file system allows (file-calls.ts; asked each time: a mount may change under a folder).
 */
export async function openWorkspace(workspacesDir: string, parentTaskId: string): Promise<Workspace> {
  const dir = workspacePath(workspacesDir, parentTaskId);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const calls = await fileCallsFor(dir);
  const root = await calls.realpath(dir);
  return {
    parentTaskId,
    root,
    cwd: root,
    calls,
    resolve: (input, opts) => resolveWorkspacePath(root, input, opts, root, calls),
    urlOf: (relative) => fileUrl(parentTaskId, relative),
  };
}

/**
 * The workspace seen from the working folder `input` (`options.cwd`, relative to the root or
 * absolute inside it): confined like any path, created when missing (folder by folder from the
 * root's descriptor, following no link), then relative paths resolve from there.
 */
export async function enterFolder(ws: Workspace, input: string): Promise<Workspace> {
  const target = await ws.resolve(input, { mustExist: false });
  const opened = await openInside(ws.root, target.real, input, 'folder', ws.calls);
  await opened.handle.close();
  const cwd = target.real;
  return { ...ws, cwd, resolve: (p, opts) => resolveWorkspacePath(ws.root, p, opts, cwd, ws.calls) };
}
