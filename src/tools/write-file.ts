import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { openInside, overwrite } from './safe-open';
import { defineTool } from './tool-types';

export const writeFileTool = defineTool({
  name: 'write_file',
  readOnly: false,
  description: 'Create or replace a file in the workspace with the given content, creating missing folders.',
  inputSchema: z.object({
    path: z.string().describe('Path relative to the workspace root'),
    content: z.string().describe('The full new content of the file'),
  }),
  async execute({ path: p, content }, ctx) {
    const target = await ctx.workspace.resolve(p, { mustExist: false });
    await mkdir(path.dirname(target.real), { recursive: true });
    // Re-check after creating folders, then open so that a link swapped in meanwhile cannot lead out.
    const again = await ctx.workspace.resolve(p, { mustExist: false });
    await overwrite(await openInside(ctx.workspace.root, again.real, p, 'write'), content);
    return `wrote ${Buffer.byteLength(content)} bytes to ${target.relative}`;
  },
});
