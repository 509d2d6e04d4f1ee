import { readdir } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool } from './tool-types';

const MAX_ENTRIES = 1000;

export const listFilesTool = defineTool({
  name: 'list_files',
  readOnly: true,
  description: 'List the entries of a workspace folder (default: the root). Folders end with "/", links with "@".',
  inputSchema: z.object({
    path: z.string().optional().describe('Folder relative to the workspace root'),
  }),
  async execute({ path = '.' }, ctx) {
    const target = await ctx.workspace.resolve(path, { mustExist: true });
    const entries = await readdir(target.real, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTDIR') throw new Error(`"${path}" is a file, not a folder`);
      throw err;
    });
    const names = entries
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.isSymbolicLink() ? `${e.name}@` : e.name))
      .sort();
    if (names.length === 0) return '(empty folder)';
    const shown = names.slice(0, MAX_ENTRIES).join('\n');
    return names.length > MAX_ENTRIES ? `${shown}\n[${names.length - MAX_ENTRIES} more entries not shown]` : shown;
  },
});
