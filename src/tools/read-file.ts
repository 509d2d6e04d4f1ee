import { z } from 'zod';
import { openInside, readHead } from '../workspace/safe-open.ts';
import { callsOf, defineTool } from './tool-types.ts';

const MAX_BYTES = 256 * 1024;
const MAX_LINE = 2000;
const DEFAULT_LIMIT = 2000;

export const readFileTool = defineTool({
  name: 'read_file',
  readOnly: true,
  description:
    'Read a text file of the workspace. Returns lines prefixed with their 1-based line number. ' +
    'Use offset (first line, 1-based) and limit (number of lines) to page through long files.',
  inputSchema: z.object({
    path: z.string().describe('Path relative to the working folder'),
    offset: z.number().int().min(1).optional().describe('First line to read, 1-based'),
    limit: z.number().int().min(1).max(10_000).optional().describe(`Number of lines (default ${DEFAULT_LIMIT})`),
  }),
  async execute({ path, offset = 1, limit = DEFAULT_LIMIT }, ctx) {
    const target = await ctx.workspace.resolve(path, { mustExist: true });
    ctx.checkPath?.('read_file', path, target.real);
    const opened = await openInside(target.root, target.real, path, 'read', callsOf(ctx.workspace, target)).catch((err: Error) => {
      throw /is a directory/.test(err.message) ? new Error(`"${path}" is a directory; use list_files`) : err;
    });
    try {
      const bytes = await readHead(opened, MAX_BYTES * 8);
      if (bytes.subarray(0, 8192).includes(0)) throw new Error(`"${path}" looks like a binary file`);
      const lines = bytes.toString('utf8').split('\n');
      if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
      const out: string[] = [];
      let size = 0;
      let last = offset - 1;
      for (let i = offset - 1; i < lines.length && i < offset - 1 + limit; i++) {
        const line = lines[i].length > MAX_LINE ? `${lines[i].slice(0, MAX_LINE)} [line cut]` : lines[i];
        const numbered = `${String(i + 1).padStart(6)}\t${line}`;
        if (size + numbered.length > MAX_BYTES) break;
        out.push(numbered);
        size += numbered.length + 1;
        last = i + 1;
      }
      const more = last < lines.length || bytes.length < opened.stat.size;
      if (out.length === 0) {
        return lines.length === 0 || opened.stat.size === 0 ? '(empty file)' : `(no lines at offset ${offset}; the file has ${lines.length} lines)`;
      }
      return more ? `${out.join('\n')}\n[more lines follow: read with offset=${last + 1}]` : out.join('\n');
    } finally {
      await opened.handle.close();
    }
  },
});
