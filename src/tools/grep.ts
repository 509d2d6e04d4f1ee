import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { openInside } from './safe-open';
import { defineTool } from './tool-types';
import { walkFiles } from './walk-files';

const MAX_MATCHES = 500;
const MAX_FILES = 5000;
const MAX_FILE_BYTES = 2 * 1024 * 1024;
const MAX_LINE = 500;

export const grepTool = defineTool({
  name: 'grep',
  readOnly: true,
  description:
    'Search workspace files for a regular expression (JavaScript syntax). Returns "file:line: text" for each match. ' +
    'Optionally limit to a folder (path) or to files matching a glob.',
  inputSchema: z.object({
    pattern: z.string().min(1).describe('Regular expression'),
    path: z.string().optional().describe('Folder or file relative to the workspace root'),
    glob: z.string().optional().describe('Only files matching this glob, e.g. "**/*.log"'),
  }),
  async execute({ pattern, path: p = '.', glob }, ctx) {
    let re: RegExp;
    try {
      re = new RegExp(pattern);
    } catch (err) {
      throw new Error(`invalid regular expression: ${(err as Error).message}`);
    }
    const target = await ctx.workspace.resolve(p, { mustExist: true });
    const root = ctx.workspace.root;
    let files: string[];
    let capped = false;
    const isDir = (await stat(target.real)).isDirectory();
    if (isDir) {
      const walked = await walkFiles({ cwd: target.real, pattern: glob ?? '**/*', onlyFiles: true, max: MAX_FILES });
      files = walked.paths.map((f) => path.join(target.real, f));
      capped = walked.capped;
    } else {
      files = [target.real];
    }
    const out: string[] = [];
    for (const file of files) {
      if (ctx.signal.aborted) break;
      const text = await readSmallText(root, file);
      if (text === null) continue;
      const rel = path.relative(root, file);
      const lines = text.split('\n');
      for (let i = 0; i < lines.length; i++) {
        if (!re.test(lines[i])) continue;
        const line = lines[i].length > MAX_LINE ? `${lines[i].slice(0, MAX_LINE)} [line cut]` : lines[i];
        out.push(`${rel}:${i + 1}: ${line}`);
        if (out.length >= MAX_MATCHES) {
          return `${out.join('\n')}\n[stopped at ${MAX_MATCHES} matches; narrow the pattern or path]`;
        }
      }
    }
    if (out.length === 0) return `no matches for /${pattern}/`;
    return capped ? `${out.join('\n')}\n[searched only the first ${MAX_FILES} files]` : out.join('\n');
  },
});

/** The file's text, or null when it is too large or looks binary. */
async function readSmallText(root: string, file: string): Promise<string | null> {
  const handle = await openInside(root, file, file, 'read').catch(() => null);
  if (!handle) return null;
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return null;
    const buf = await handle.readFile();
    if (buf.subarray(0, 8192).includes(0)) return null;
    return buf.toString('utf8');
  } finally {
    await handle.close();
  }
}
