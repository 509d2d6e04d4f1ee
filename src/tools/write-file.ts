import { z } from 'zod';
import { openInside, replaceContent } from '../workspace/safe-open.ts';
import { replaceInFolder } from '../workspace/task-folders.ts';
import { defineTool, MAX_LOADED_BYTES } from './tool-types.ts';

export const writeFileTool = defineTool({
  name: 'write_file',
  readOnly: false,
  description: 'Create or replace a file in the workspace with the given content, creating missing folders.',
  inputSchema: z.object({
    path: z.string().describe('Path relative to the working folder'),
    content: z.string().describe('The full new content of the file'),
  }),
  async execute({ path, content }, ctx) {
    const bytes = Buffer.byteLength(content);
    if (bytes > MAX_LOADED_BYTES) throw new Error(`content of ${bytes} bytes is over the limit of ${MAX_LOADED_BYTES} bytes per write`);
    const target = await ctx.workspace.resolve(path, { mustExist: false });
    ctx.checkPath?.('write_file', path, target.real);
    // A task folder (`.memory/`): an atomic replacement, within the folder's bound; `.skills/`: refused.
    if (target.folder) {
      await replaceInFolder(target, content, path);
      return `wrote ${bytes} bytes to ${target.relative}`;
    }
    // Folders are created and the file opened through descriptors, so a folder swapped for a link
    // meanwhile makes the write fail instead of creating anything outside.
    const opened = await openInside(ctx.workspace.root, target.real, path, 'write', ctx.workspace.calls);
    try {
      await replaceContent(opened, content);
    } finally {
      await opened.handle.close();
    }
    return `wrote ${bytes} bytes to ${target.relative}`;
  },
});
