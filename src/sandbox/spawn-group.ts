import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** How a group's leader ended: its exit code or signal, or the error that kept it from starting. */
export interface GroupExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

export interface SpawnedGroup {
  child: ChildProcessWithoutNullStreams;
  /** Settles once the leader exits or fails to start; never rejects. */
  exited: Promise<GroupExit>;
  /** Signals the whole group, so what the program started goes too; quiet once the group is gone. */
  kill: (signal: NodeJS.Signals) => void;
}

/**
 * Starts a long-lived confined program (an ACP agent, an MCP server) as the leader of a process
 * group of its own, its stdio piped. A sandboxed program runs under launchers (bwrap, a shell
 * that sets limits) and starts children of its own: signalling the leader alone would leave them
 * running, so `kill` signals the group.
 */
export function spawnGroup(opts: { argv: string[]; cwd: string; env: Record<string, string> }): SpawnedGroup {
  const child = spawn(opts.argv[0], opts.argv.slice(1), { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  // A program that exits early makes writes to its stdin fail (EPIPE); its exit tells the caller.
  child.stdin.on('error', () => {});
  const exited = new Promise<GroupExit>((resolve) => {
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    child,
    exited,
    kill: (signal) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // gone
      }
    },
  };
}
