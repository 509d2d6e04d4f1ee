import { z } from 'zod';
import { entriesOf, openInside } from '../workspace/safe-open.ts';
import { folderEntries } from '../workspace/task-folders.ts';
import { callsOf, defineTool } from './tool-types.ts';

const MAX_ENTRIES = 1000;
/** Entries counted (not kept) past the shown ones, so a folder of millions stays cheap. */
const MAX_COUNTED = 100_000;

export const listFilesTool = defineTool({
  name: 'list_files',
  readOnly: true,
  description: 'List the entries of a workspace folder (default: the working folder). Folders end with "/", links with "@".',
  inputSchema: z.object({
    path: z.string().optional().describe('Folder relative to the working folder'),
  }),
  async execute({ path = '.' }, ctx) {
    // The root shows the task's own folders (`.memory/`, `.skills/`); `.skills` lists its skills.
    const changed = folderEntries(ctx.workspace, path);
    const names: string[] = [...(changed?.add ?? [])];
    let total = names.length;
    if (changed?.virtual) return names.sort().join('\n') || '(empty folder)';
    const target = await ctx.workspace.resolve(path, { mustExist: true });
    const opened = await openInside(target.root, target.real, path, 'dir', callsOf(ctx.workspace, target)).catch((err: Error) => {
      throw /not a folder/.test(err.message) ? new Error(`"${path}" is a file, not a folder`) : err;
    });
    try {
      for await (const e of entriesOf(opened.handle)) {
        if (changed?.hide.has(e.name)) continue;
        if (++total > MAX_COUNTED || ctx.signal.aborted) break;
        if (names.length < MAX_ENTRIES) names.push(e.isDirectory() ? `${e.name}/` : e.isSymbolicLink() ? `${e.name}@` : e.name);
      }
    } finally {
      await opened.handle.close();
    }
    if (names.length === 0) return '(empty folder)';
    names.sort();
    const more = total > MAX_COUNTED ? `more than ${MAX_COUNTED - MAX_ENTRIES}` : String(total - names.length);
    return total > names.length ? `${names.join('\n')}\n[${more} more entries not shown]` : names.join('\n');
  },
});
