import path from 'node:path';
import { openInside, readHead } from './safe-open.ts';
import type { Workspace } from './workspace.ts';

/** The file a team writes its conventions in, at the workspace root or in the task's working folder. */
export const PROJECT_INSTRUCTIONS_FILE = 'AGENTS.md';
/** Most of it that goes into a system prompt; the rest is cut, and the prompt says so. */
export const MAX_PROJECT_INSTRUCTIONS_BYTES = 32 * 1024;

export interface ProjectInstructions {
  /** Workspace-relative path of the file read. */
  path: string;
  text: string;
  /** The file was longer than MAX_PROJECT_INSTRUCTIONS_BYTES. */
  cut: boolean;
}

/**
 * `AGENTS.md` of the task's working folder, else of the workspace root: read as the file tools
 * read (resolved inside the workspace, opened through descriptors, a regular file only), its first
 * 32 KiB. Null when there is none, or it is not a readable text file: project instructions are a
 * help, never a reason for a task to fail.
 */
export async function readProjectInstructions(ws: Workspace): Promise<ProjectInstructions | null> {
  const folders = ws.cwd === ws.root ? [ws.cwd] : [ws.cwd, ws.root];
  for (const folder of folders) {
    const shown = path.relative(ws.root, path.join(folder, PROJECT_INSTRUCTIONS_FILE));
    try {
      const target = await ws.resolve(path.join(folder, PROJECT_INSTRUCTIONS_FILE), { mustExist: true });
      const opened = await openInside(ws.root, target.real, shown, 'read', ws.calls);
      try {
        const bytes = await readHead(opened, MAX_PROJECT_INSTRUCTIONS_BYTES + 1);
        if (bytes.includes(0)) return null;
        const cut = bytes.length > MAX_PROJECT_INSTRUCTIONS_BYTES;
        const text = bytes.subarray(0, MAX_PROJECT_INSTRUCTIONS_BYTES).toString('utf8').trim();
        return text ? { path: shown, text, cut } : null;
      } finally {
        await opened.handle.close();
      }
    } catch {
      // Missing, a folder, a link leading out, a FIFO: the next place, or none.
    }
  }
  return null;
}
