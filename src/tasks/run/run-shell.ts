import { endingOfAbort, failed, type Ending } from '../writes/finish-task.ts';
import type { RunContext, TaskRun } from './run-context.ts';
import { abortCode } from './task-abort.ts';

/** A shell task: its command in the sandbox, in the workspace; its output is the task's `output`. */
export async function runShell({ deps }: RunContext, { body, workspace: ws, signal }: TaskRun): Promise<Ending> {
  if (deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
  const r = await deps.sandbox.run(
    ws.root,
    {
      command: body.command!,
      cwd: ws.cwd,
      // The task's own timeout aborts the signal; this only guards against a lost timer.
      timeoutMs: 24 * 3600_000,
      maxOutputBytes: deps.limits.bashMaxOutputBytes,
      signal,
    },
    { cwd: ws.cwd },
  );
  const output = { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, truncated: r.truncated };
  if (signal.aborted) return { ...endingOfAbort(abortCode(signal)), output };
  return {
    status: 'completed',
    summary: `command exited with code ${r.exitCode}`,
    artifacts: [],
    skipped: [],
    output,
    stopReason: null,
    errorCode: null,
    errorMessage: null,
  };
}
