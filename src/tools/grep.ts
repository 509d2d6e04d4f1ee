import path from 'node:path';
import { z } from 'zod';
import { compileGlob } from './glob-pattern.ts';
import { MAX_WALKED, SKIPPED_FOLDERS } from './glob.ts';
import { openEntry, openInside, readHead, walkTree, type Opened } from '../workspace/safe-open.ts';
import { FOLDER_NAMES } from '../workspace/task-folders.ts';
import { callsOf, defineTool } from './tool-types.ts';
import { compileSafeRegex } from './user-regex.ts';

const MAX_MATCHES = 500;
const MAX_FILES = 5000;
const MAX_FILE_BYTES = 2 * 1024 * 1024;
const MAX_LINE = 500;

export const grepTool = defineTool({
  name: 'grep',
  readOnly: true,
  description:
    'Search workspace files for a regular expression (RE2 syntax: like JavaScript, without lookaround or backreferences). ' +
    'Returns "file:line: text" for each match. Optionally limit to a folder (path) or to files matching a glob.',
  inputSchema: z.object({
    pattern: z.string().min(1).describe('Regular expression'),
    path: z.string().optional().describe('Folder or file relative to the working folder'),
    glob: z.string().optional().describe('Only files matching this glob, e.g. "**/*.log"'),
  }),
  async execute({ pattern, path: p = '.', glob }, ctx) {
    const re = compileSafeRegex(pattern);
    const only = glob ? compileGlob(glob) : null;
    const { root, cwd } = ctx.workspace;
    const target = await ctx.workspace.resolve(p, { mustExist: true });
    const opened = await openInside(target.root, target.real, p, 'any', callsOf(ctx.workspace, target));
    // Matches are named relative to the working folder, as the model names paths; in a task folder
    // (`.memory/`, `.skills/<name>/`) by the place the tools see it at.
    const shownOf = (real: string) => path.relative(cwd, target.folder ? path.join(root, target.folder.at, path.relative(target.root, real)) : real);
    // The workspace's own `.memory` and `.skills` are not the task's: a search from the root skips them.
    const skipTop = target.real === root && ctx.workspace.folders ? FOLDER_NAMES : undefined;
    const out: string[] = [];
    let note = '';
    // Returns false once enough matches were found.
    const search = (file: Opened, text: string | null, rel: string): boolean => {
      if (text === null) return true;
      const lines = text.split('\n');
      for (let i = 0; i < lines.length; i++) {
        if (!re.test(lines[i])) continue;
        const line = lines[i].length > MAX_LINE ? `${lines[i].slice(0, MAX_LINE)} [line cut]` : lines[i];
        out.push(`${rel}:${i + 1}: ${line}`);
        if (out.length >= MAX_MATCHES) {
          note = `[stopped at ${MAX_MATCHES} matches; narrow the pattern or path]`;
          return false;
        }
      }
      return true;
    };
    try {
      if (opened.stat.isFile()) {
        search(opened, await smallText(opened), shownOf(target.real));
      } else {
        const base = shownOf(target.real);
        let files = 0;
        let walked = 0;
        for await (const entry of walkTree(opened.handle, { skip: SKIPPED_FOLDERS, skipTop, signal: ctx.signal })) {
          if (++walked > MAX_WALKED) {
            note = `[stopped after looking at ${MAX_WALKED} entries]`;
            break;
          }
          if (!entry.dirent.isFile() || (only && !only.test(entry.relative))) continue;
          if (++files > MAX_FILES) {
            note = `[searched only the first ${MAX_FILES} files]`;
            break;
          }
          const file = await openEntry(entry);
          if (!file) continue;
          let more: boolean;
          try {
            more = search(file, await smallText(file), base ? `${base}/${entry.relative}` : entry.relative);
          } finally {
            await file.handle.close();
          }
          if (!more) break;
        }
      }
    } finally {
      await opened.handle.close();
    }
    if (out.length === 0) return note ? `no matches for /${pattern}/\n${note}` : `no matches for /${pattern}/`;
    return note ? `${out.join('\n')}\n${note}` : out.join('\n');
  },
});

/** The file's text, or null when it is too large or looks binary. */
async function smallText(file: Opened): Promise<string | null> {
  if (file.stat.size > MAX_FILE_BYTES) return null;
  const buf = await readHead(file, MAX_FILE_BYTES);
  if (buf.subarray(0, 8192).includes(0)) return null;
  return buf.toString('utf8');
}
