import { randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { MemoryScope } from '../shapes/memory.ts';
import { openInside, readHead } from './safe-open.ts';
import type { Workspace } from './workspace.ts';

/*
 * Memory folders (a definition's `memory`): one per (tenant, scope, key, type), kept beside the
 * tenant's workspaces under `#memory/<scope>/<key>/<type>/` (a name no parent task id can take),
 * so instances that share WORKSPACES_DIR share them, and commands never see them but through a
 * task's read-only bind. Keys are user ids and parent task ids (`[A-Za-z0-9._:-]`, never `.` or
 * `..`) or `-`; types are definition names: each a plain name of one folder.
 */

/** The folder of a tenant's workspaces that holds its memories. */
export const MEMORY_FOLDER = '#memory';
/** The file whose first lines go into the system prompt. */
export const MEMORY_INDEX = 'MEMORY.md';
/** Lines of MEMORY.md a system prompt carries. */
export const MAX_MEMORY_INDEX_LINES = 200;
/** And at most this many bytes of them. */
export const MAX_MEMORY_INDEX_BYTES = 32 * 1024;

export interface MemoryRef {
  scope: MemoryScope;
  key: string;
  type: string;
}

/** Where a memory lives below a tenant's workspaces folder (`tenantDir`). */
export function memoryPath(tenantDir: string, ref: MemoryRef): string {
  return path.join(tenantDir, MEMORY_FOLDER, ref.scope, ref.key, ref.type);
}

/** Creates (if needed) a memory folder and answers its real path. */
export async function openMemory(tenantDir: string, ref: MemoryRef): Promise<string> {
  const dir = memoryPath(tenantDir, ref);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  return realpath(dir);
}

/** A memory folder's real path, or null when it was never written. */
export async function existingMemory(tenantDir: string, ref: MemoryRef): Promise<string | null> {
  try {
    const dir = memoryPath(tenantDir, ref);
    return (await lstat(dir)).isDirectory() ? await realpath(dir) : null;
  } catch {
    return null;
  }
}

export interface MemoryIndex {
  text: string;
  /** Lines or bytes were left out. */
  cut: boolean;
}

/**
 * The first MAX_MEMORY_INDEX_LINES lines (at most MAX_MEMORY_INDEX_BYTES) of the task's
 * `.memory/MEMORY.md`, read as the file tools read it; null when there is none or it is no text.
 */
export async function readMemoryIndex(ws: Workspace): Promise<MemoryIndex | null> {
  const folder = ws.folders?.find((f) => f.at === '.memory');
  if (!folder) return null;
  try {
    const opened = await openInside(folder.root, path.join(folder.root, MEMORY_INDEX), `.memory/${MEMORY_INDEX}`, 'read', folder.calls);
    try {
      const bytes = await readHead(opened, MAX_MEMORY_INDEX_BYTES + 1);
      if (bytes.includes(0)) return null;
      const lines = bytes.subarray(0, MAX_MEMORY_INDEX_BYTES).toString('utf8').split('\n');
      // A line cut by the byte bound is left out whole.
      if (bytes.length > MAX_MEMORY_INDEX_BYTES) lines.pop();
      const shown = lines.slice(0, MAX_MEMORY_INDEX_LINES);
      const cut = bytes.length > MAX_MEMORY_INDEX_BYTES || lines.length > MAX_MEMORY_INDEX_LINES;
      const text = shown.join('\n').trimEnd();
      return text ? { text, cut } : null;
    } finally {
      await opened.handle.close();
    }
  } catch {
    // Missing, a folder, a link: no index. Memory is a help, never a reason for a task to fail.
    return null;
  }
}

/** Removes a folder: renamed away first (atomically), so a task that opens it meanwhile gets a fresh one. */
async function removeFolder(dir: string): Promise<void> {
  // `#` is in no key or type: the name cannot be taken, and the sweeps pass it by.
  const away = path.join(path.dirname(dir), `#removing-${randomUUID()}`);
  await rename(dir, away);
  await rm(away, { recursive: true, force: true });
}

/** Erases every memory of a user (each definition's): answers how many folders were removed. */
export async function eraseUserMemories(tenantDir: string, userId: string): Promise<number> {
  const dir = path.join(tenantDir, MEMORY_FOLDER, 'user', userId);
  let types: string[];
  try {
    types = await folderNames(dir);
    if (types.length === 0 && !(await lstat(dir)).isDirectory()) return 0;
  } catch {
    return 0;
  }
  await removeFolder(dir);
  return types.length;
}

/** The newest modification time in a folder tree (links not followed), or null past `max` entries. */
export async function newestIn(dir: string, max = 10_000): Promise<number | null> {
  let newest = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop()!;
    const st = await lstat(d);
    newest = Math.max(newest, st.mtimeMs);
    if (!st.isDirectory()) continue;
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (++seen > max) return null;
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else newest = Math.max(newest, (await lstat(p)).mtimeMs);
    }
  }
  return newest;
}

/**
 * Removes the memories of a tenant's workspaces folder that match: `scope` and `key` (a parent's
 * memories once its workspace is gone), or every memory nothing was written to since `cutoff`
 * (MEMORY_RETENTION_DAYS). Answers how many folders were removed.
 */
export async function removeMemories(tenantDir: string, opts: { scope?: MemoryScope; key?: string; untouchedSince?: number }): Promise<number> {
  const scopes: MemoryScope[] = opts.scope ? [opts.scope] : ['user', 'parent', 'definition'];
  let removed = 0;
  for (const scope of scopes) {
    const scopeDir = path.join(tenantDir, MEMORY_FOLDER, scope);
    const keys = opts.key !== undefined ? [opts.key] : await folderNames(scopeDir);
    for (const key of keys) {
      for (const type of await folderNames(path.join(scopeDir, key))) {
        const dir = path.join(scopeDir, key, type);
        if (opts.untouchedSince !== undefined) {
          const newest = await newestIn(dir).catch(() => null);
          if (newest === null || newest >= opts.untouchedSince) continue;
        }
        await removeFolder(dir);
        removed++;
      }
    }
  }
  return removed;
}

/** The sub-folders of a folder (none when it is missing), leaving out those being removed (`#removing-`). */
async function folderNames(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && !e.name.startsWith('#')).map((e) => e.name);
  } catch {
    return [];
  }
}

/** Removes one memory folder whole: false when there was none. */
export async function removeMemory(tenantDir: string, ref: MemoryRef): Promise<boolean> {
  const dir = memoryPath(tenantDir, ref);
  if (!(await lstat(dir).catch(() => null))?.isDirectory()) return false;
  await removeFolder(dir);
  return true;
}
