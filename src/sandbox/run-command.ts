import { spawn } from 'node:child_process';
import { createCommandOutput, type CommandResult } from './command-output.ts';
import type { CommandLimiter } from './command-cgroup.ts';
import { bashArgv } from './host-programs.ts';

/**
 * How to start a confined program on the host: `argv[0]` is an absolute path and `env` is built by
 * the service, so nothing a request carries chooses the host-side program or its variables.
 */
export interface Launch {
  argv: string[];
  env: Record<string, string>;
}

export interface RunCommandOptions {
  /** Told of every chunk the command writes (liveness: the command is doing something). */
  onOutput?: (chunk: Buffer) => void;
  command: string;
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  /**
   * How to start the bash invocation on the host (the sandbox's `wrap`): the program by absolute
   * path and an environment the service built.
   */
  launch: (argv: string[]) => Launch;
  /** Caps the command's processes and memory (see command-cgroup.ts). */
  limiter?: CommandLimiter;
  /** What the command reads on its standard input (a hook's event); nothing (end of input) without it. */
  input?: string;
}

/**
 * Runs `bash -c command` in its own process group. On timeout or abort the whole group gets
 * SIGKILL, so children that outlive bash die with it. stdout/stderr are captured within a fixed budget.
 */
export function runCommand(opts: RunCommandOptions): Promise<CommandResult> {
  const started = Date.now();
  const launch = opts.launch(bashArgv(opts.command));
  const group = opts.limiter?.create();
  // With a process group cap, the command waits at a gate until its first process is in the group,
  // so nothing it starts can escape the cap.
  const argv = group ? bashArgv('read -r _; exec "$@"', 'gate', ...launch.argv) : launch.argv;
  return new Promise((resolve) => {
    const output = createCommandOutput(opts.maxOutputBytes, opts.onOutput);
    let timedOut = false;
    let aborted = false;
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd,
      env: launch.env,
      detached: true,
      stdio: [group || opts.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    if (group && child.pid !== undefined) {
      try {
        group.add(child.pid);
      } catch {
        // The cgroup went away: the command still runs under ulimit and the timeout.
      }
    }
    if (child.stdin) {
      // A command that exits without reading all of it closes the pipe: not an error of the run.
      child.stdin.on('error', () => {});
      // The gate reads its line byte by byte (bash's `read` on a pipe), leaving the input after it to the command.
      child.stdin.end(`${group ? '\n' : ''}${opts.input ?? ''}`);
    }
    let pipesTimer: NodeJS.Timeout | undefined;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      // Processes that left the group (setsid) are still in the command's cgroup.
      group?.killAll();
      // One that escaped both (no cgroup, BASH_SANDBOX=none) may hold the pipes open: stop waiting for them.
      pipesTimer ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, 500);
      pipesTimer.unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, opts.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout!.on('data', output.stdout);
    child.stderr!.on('data', output.stderr);
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      group?.dispose();
      clearTimeout(timer);
      clearTimeout(pipesTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(output.result({ code, timedOut, aborted, started }));
    };
    child.on('error', (e) => {
      output.note(`failed to start: ${e.message}`);
      finish(127);
    });
    // A background child may still hold the pipes after bash exits: the group dies with bash.
    child.on('exit', killGroup);
    child.on('close', (code, sig) => finish(code ?? (sig ? 128 + signalNumber(sig) : 1)));
  });
}

function signalNumber(sig: NodeJS.Signals): number {
  return ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as Record<string, number>)[sig] ?? 1;
}
