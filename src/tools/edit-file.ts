import { z } from 'zod';
import { openInside, overwrite } from './safe-open';
import { defineTool } from './tool-types';

export const editFileTool = defineTool({
  name: 'edit_file',
  readOnly: false,
  description:
    'Replace an exact string in a workspace file. oldString must occur exactly once unless replaceAll is true.',
  inputSchema: z.object({
    path: z.string().describe('Path relative to the workspace root'),
    oldString: z.string().min(1).describe('Exact text to replace'),
    newString: z.string().describe('Replacement text'),
    replaceAll: z.boolean().optional().describe('Replace every occurrence'),
  }),
  async execute({ path, oldString, newString, replaceAll }, ctx) {
    if (oldString === newString) throw new Error('oldString and newString are the same');
    const target = await ctx.workspace.resolve(path, { mustExist: true });
    const reader = await openInside(ctx.workspace.root, target.real, path, 'read');
    const text = await reader.readFile('utf8').finally(() => reader.close());
    const count = text.split(oldString).length - 1;
    if (count === 0) throw new Error(`oldString not found in "${path}"`);
    if (count > 1 && !replaceAll) {
      throw new Error(`oldString occurs ${count} times in "${path}"; add context to make it unique or set replaceAll`);
    }
    const next = replaceAll ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
    await overwrite(await openInside(ctx.workspace.root, target.real, path, 'write'), next);
    return `replaced ${replaceAll ? count : 1} occurrence(s) in ${target.relative}`;
  },
});
