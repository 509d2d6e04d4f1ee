import path from 'node:path';
import { z } from 'zod';
import { prepareMountPoints } from '../workspace/task-folders.ts';
import { runCommand } from '../sandbox/run-command.ts';
import type { Launch } from '../sandbox/sandbox.ts';
import { defineTool, type ToolContext } from './tool-types.ts';

/**
 * How a command of the task starts (bash's, and its definition's hooks'): in the task's sandbox
 * over its workspace, from its working folder, with its egress, and its skills and memory
 * read-only at their places below the workspace root (bubblewrap only: a bare command sees the
 * workspace as it is). Memory is written with the file tools, whose writes are atomic and bounded.
 */
export async function commandLaunch(ctx: Pick<ToolContext, 'sandbox' | 'workspace' | 'egress'>): Promise<(argv: string[]) => Launch> {
  const folders = ctx.sandbox.kind === 'bwrap' ? (ctx.workspace.folders ?? []) : [];
  if (folders.length > 0) await prepareMountPoints(ctx.workspace);
  const readOnly = folders.map((f) => ({ source: f.root, dest: path.join(ctx.workspace.root, f.at) }));
  return (argv) =>
    ctx.sandbox.wrap(ctx.workspace.root, argv, { cwd: ctx.workspace.cwd, ...(ctx.egress && { egress: ctx.egress }), ...(readOnly.length && { readOnly }) });
}

export const bashTool = defineTool({
  name: 'bash',
  readOnly: false,
  description:
    'Run a bash command in the working folder. Returns exitCode, stdout and stderr ' +
    '(long output keeps its head and tail). The command is killed after timeoutMs.',
  inputSchema: z.object({
    command: z.string().min(1).max(100_000).describe('The bash command'),
    timeoutMs: z.number().int().min(100).optional().describe('Timeout in milliseconds'),
  }),
  async execute({ command, timeoutMs }, ctx) {
    if (ctx.sandbox.kind === 'unavailable') throw new Error(`bash is unavailable on this service: ${ctx.sandbox.reason}`);
    const limit = Math.min(timeoutMs ?? ctx.limits.bashTimeoutMs, ctx.limits.bashTimeoutMs);
    const r = await runCommand({
      command,
      cwd: ctx.workspace.cwd,
      timeoutMs: limit,
      maxOutputBytes: ctx.limits.bashMaxOutputBytes,
      signal: ctx.signal,
      launch: await commandLaunch(ctx),
      limiter: ctx.sandbox.limiter,
      onOutput: ctx.onActivity,
    });
    if (r.aborted) throw new Error('command cancelled');
    return {
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.timedOut ? `${r.stderr}\n[timed out after ${limit} ms; the process group was killed]` : r.stderr,
      truncated: r.truncated,
      ...(r.timedOut ? { timedOut: true } : {}),
    };
  },
});
