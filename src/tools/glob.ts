import { z } from 'zod';
import { defineTool } from './tool-types';
import { walkFiles } from './walk-files';

const MAX_MATCHES = 1000;

export const globTool = defineTool({
  name: 'glob',
  readOnly: true,
  description: 'Find workspace paths matching a glob pattern such as "**/*.md" or "src/*.ts".',
  inputSchema: z.object({ pattern: z.string().min(1).describe('Glob pattern relative to the workspace root') }),
  async execute({ pattern }, ctx) {
    const { paths, capped } = await walkFiles({ cwd: ctx.workspace.root, pattern, onlyFiles: false, max: MAX_MATCHES });
    if (paths.length === 0) return `no paths match "${pattern}"`;
    return capped ? `${paths.join('\n')}\n[more than ${MAX_MATCHES} matches; narrow the pattern]` : paths.join('\n');
  },
});
