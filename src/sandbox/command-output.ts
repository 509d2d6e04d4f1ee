import { createOutputCapture } from './output-capture.ts';

export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  truncated: { stdout: boolean; stderr: boolean };
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
}

/** Exit code reported for a command killed by its timeout, as coreutils' `timeout` does. */
export const TIMEOUT_EXIT_CODE = 124;

/**
 * A command's stdout and stderr, each captured within `maxBytes` while it streams, every chunk
 * also told to `onOutput` (liveness), and its result once it has ended: the one capture a command
 * on the host (run-command.ts) and an exec in a container (container-sandbox.ts) share.
 */
export function createCommandOutput(maxBytes: number, onOutput?: (chunk: Buffer) => void) {
  const stdout = createOutputCapture(maxBytes);
  const stderr = createOutputCapture(maxBytes);
  return {
    // Arrow properties: handed on as callbacks (a stream's 'data', an exec's demultiplexer).
    stdout: (chunk: Buffer): void => {
      stdout.write(chunk);
      onOutput?.(chunk);
    },
    stderr: (chunk: Buffer): void => {
      stderr.write(chunk);
      onOutput?.(chunk);
    },
    /** The service's own word on stderr (why the command could not start), not the command's output. */
    note(text: string): void {
      stderr.write(Buffer.from(text));
    },
    /** The result: a command killed by its timeout reports TIMEOUT_EXIT_CODE whatever it exited with. */
    result(end: { code: number; timedOut: boolean; aborted: boolean; started: number }): CommandResult {
      const out = stdout.result();
      const err = stderr.result();
      return {
        exitCode: end.timedOut ? TIMEOUT_EXIT_CODE : end.code,
        stdout: out.text,
        stderr: err.text,
        truncated: { stdout: out.truncated, stderr: err.truncated },
        timedOut: end.timedOut,
        aborted: end.aborted,
        durationMs: Date.now() - end.started,
      };
    },
  };
}
