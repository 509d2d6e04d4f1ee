import { z } from 'zod';
import { compileGlob } from './glob-pattern.ts';
import { openInside, walkTree } from '../workspace/safe-open.ts';
import { FOLDER_NAMES } from '../workspace/task-folders.ts';
import { defineTool } from './tool-types.ts';

const MAX_MATCHES = 1000;
/** Entries looked at before a walk gives up, whatever matched. */
export const MAX_WALKED = 200_000;
/** Folders whose content no search reports. */
export const SKIPPED_FOLDERS: ReadonlySet<string> = new Set(['.git', 'node_modules']);

export const globTool = defineTool({
  name: 'glob',
  readOnly: true,
  description: 'Find workspace paths matching a glob pattern such as "**/*.md", "src/*.ts" or "docs/*.{md,txt}" ' + '(.git and node_modules are not searched).',
  inputSchema: z.object({ pattern: z.string().min(1).describe('Glob pattern relative to the working folder') }),
  async execute({ pattern }, ctx) {
    const matcher = compileGlob(pattern);
    const ws = ctx.workspace;
    // Patterns, and the paths found, are relative to the working folder. The task's own folders
    // (`.memory/`, `.skills/<name>/`) are searched when the pattern starts with their name.
    const atRoot = ws.cwd === ws.root;
    const trees = [
      { root: ws.root, dir: ws.cwd, prefix: '', calls: ws.calls },
      ...(atRoot ? (ws.folders ?? []) : [])
        .filter((f) => pattern.startsWith(`${f.at.split('/')[0]}/`))
        .map((f) => ({ root: f.root, dir: f.root, prefix: `${f.at}/`, calls: f.calls })),
    ];
    const paths: string[] = [];
    let walked = 0;
    let stopped = '';
    for (const tree of trees) {
      const root = (await openInside(tree.root, tree.dir, '.', 'dir', tree.calls)).handle;
      try {
        const skipTop = tree.prefix === '' && atRoot && ws.folders ? FOLDER_NAMES : undefined;
        for await (const entry of walkTree(root, { skip: SKIPPED_FOLDERS, skipTop, signal: ctx.signal })) {
          if (++walked > MAX_WALKED) {
            stopped = `[stopped after looking at ${MAX_WALKED} entries; narrow the pattern]`;
            break;
          }
          const found = tree.prefix + entry.relative;
          if (!matcher.test(found)) continue;
          if (paths.length >= MAX_MATCHES) {
            stopped = `[more than ${MAX_MATCHES} matches; narrow the pattern]`;
            break;
          }
          paths.push(found);
        }
      } finally {
        await root.close();
      }
      if (stopped) break;
    }
    if (paths.length === 0) return stopped ? `no paths match "${pattern}"\n${stopped}` : `no paths match "${pattern}"`;
    paths.sort();
    return stopped ? `${paths.join('\n')}\n${stopped}` : paths.join('\n');
  },
});
