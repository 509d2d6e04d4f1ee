import path from 'node:path';
import { z } from 'zod';
import { prepareMountPoints } from '../workspace/task-folders.ts';
import type { CommandResult } from '../sandbox/command-output.ts';
import type { CommandSpec } from '../sandbox/sandbox.ts';
import { defineTool, type ToolContext } from './tool-types.ts';

/**
 * Runs a command of the task (bash's, and its definition's hooks'): in the task's sandbox over its
 * workspace, from its working folder, with its egress, and its skills and memory read-only at
 * their places below the workspace root (bubblewrap binds them per command, a container when it
 * is made; a bare command sees the workspace as it is). Memory is written with the file tools,
 * whose writes are atomic and bounded.
 */
export async function runTaskCommand(ctx: Pick<ToolContext, 'sandbox' | 'workspace' | 'egress'>, command: CommandSpec): Promise<CommandResult> {
  const folders = ctx.sandbox.kind === 'bwrap' ? (ctx.workspace.folders ?? []) : [];
  if (folders.length > 0) await prepareMountPoints(ctx.workspace);
  const readOnly = folders.map((f) => ({ source: f.root, dest: path.join(ctx.workspace.root, f.at) }));
  return ctx.sandbox.run(ctx.workspace.root, command, {
    cwd: ctx.workspace.cwd,
    ...(ctx.egress && { egress: ctx.egress }),
    ...(readOnly.length && { readOnly }),
  });
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
    const r = await runTaskCommand(ctx, {
      command,
      cwd: ctx.workspace.cwd,
      timeoutMs: limit,
      maxOutputBytes: ctx.limits.bashMaxOutputBytes,
      signal: ctx.signal,
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
