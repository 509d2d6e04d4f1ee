import { z } from 'zod';
import { openInside, readHead, replaceContent } from '../workspace/safe-open.ts';
import { replaceInFolder } from '../workspace/task-folders.ts';
import { callsOf, defineTool, MAX_LOADED_BYTES } from './tool-types.ts';

export const editFileTool = defineTool({
  name: 'edit_file',
  readOnly: false,
  description: 'Replace an exact string in a workspace file. oldString must occur exactly once unless replaceAll is true.',
  inputSchema: z.object({
    path: z.string().describe('Path relative to the working folder'),
    oldString: z.string().min(1).describe('Exact text to replace'),
    newString: z.string().describe('Replacement text'),
    replaceAll: z.boolean().optional().describe('Replace every occurrence'),
  }),
  async execute({ path, oldString, newString, replaceAll }, ctx) {
    if (oldString === newString) throw new Error('oldString and newString are the same');
    const target = await ctx.workspace.resolve(path, { mustExist: true });
    ctx.checkPath?.('edit_file', path, target.real);
    if (target.folder && !target.folder.writable) throw new Error(`"${path}" is in ${target.folder.at}/, which is read-only`);
    // One descriptor for reading and replacing: what was read is what gets replaced. In a task
    // folder (`.memory/`) the new text replaces the file atomically instead (task-folders.ts).
    const opened = await openInside(target.root, target.real, path, target.folder ? 'read' : 'update', callsOf(ctx.workspace, target));
    try {
      if (opened.stat.size > MAX_LOADED_BYTES) {
        throw new Error(`"${path}" has ${opened.stat.size} bytes, over the edit limit of ${MAX_LOADED_BYTES}; use bash (sed) for large files`);
      }
      const text = (await readHead(opened, MAX_LOADED_BYTES)).toString('utf8');
      const count = occurrences(text, oldString);
      if (count === 0) throw new Error(`oldString not found in "${path}"`);
      if (count > 1 && !replaceAll) {
        throw new Error(`oldString occurs ${count} times in "${path}"; add context to make it unique or set replaceAll`);
      }
      const replaced = replaceAll ? count : 1;
      const newLength = Buffer.byteLength(text) + replaced * (Buffer.byteLength(newString) - Buffer.byteLength(oldString));
      if (newLength > MAX_LOADED_BYTES) throw new Error(`the edited file would have ${newLength} bytes, over the limit of ${MAX_LOADED_BYTES}`);
      const edited = replaceAll ? text.replaceAll(oldString, () => newString) : text.replace(oldString, () => newString);
      if (target.folder) await replaceInFolder(target, edited, path);
      else await replaceContent(opened, edited);
      return `replaced ${replaced} occurrence(s) in ${target.relative}`;
    } finally {
      await opened.handle.close();
    }
  },
});

function occurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}
