import { z } from 'zod';
import { compileGlob } from './glob-pattern.ts';
import { openInside, walkTree } from '../workspace/safe-open.ts';
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
    // Patterns, and the paths found, are relative to the working folder.
    const root = (await openInside(ctx.workspace.root, ctx.workspace.cwd, '.', 'dir', ctx.workspace.calls)).handle;
    const paths: string[] = [];
    let walked = 0;
    let stopped = '';
    try {
      for await (const entry of walkTree(root, { skip: SKIPPED_FOLDERS, signal: ctx.signal })) {
        if (++walked > MAX_WALKED) {
          stopped = `[stopped after looking at ${MAX_WALKED} entries; narrow the pattern]`;
          break;
        }
        if (!matcher.test(entry.relative)) continue;
        if (paths.length >= MAX_MATCHES) {
          stopped = `[more than ${MAX_MATCHES} matches; narrow the pattern]`;
          break;
        }
        paths.push(entry.relative);
      }
    } finally {
      await root.close();
    }
    if (paths.length === 0) return stopped ? `no paths match "${pattern}"\n${stopped}` : `no paths match "${pattern}"`;
    paths.sort();
    return stopped ? `${paths.join('\n')}\n${stopped}` : paths.join('\n');
  },
});
