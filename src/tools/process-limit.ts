import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Caps how many processes one command may have at once, through a pids cgroup of its own. */
export interface ProcessLimiter {
  /** `cgroup` when the kernel enforces the cap; `none` when only `ulimit -u` is left. */
  kind: 'cgroup' | 'none';
  reason?: string;
  /** A fresh group for one command: `add` its first process, `dispose` once it has ended. */
  create(): { add(pid: number): void; dispose(): void };
  /** Removes the service's own folder when no command group is left in it. */
  close(): void;
}

const noop = { add() {}, dispose() {} };

/** Removes the (empty) groups of service processes that are gone. */
function removeStale(parent: string) {
  for (const name of readdirSync(parent)) {
    const pid = /^subagentd-(\d+)$/.exec(name)?.[1];
    if (!pid || existsSync(`/proc/${pid}`)) continue;
    const dir = path.join(parent, name);
    try {
      for (const sub of readdirSync(dir, { withFileTypes: true })) if (sub.isDirectory()) rmdirSync(path.join(dir, sub.name));
      rmdirSync(dir);
    } catch {
      // still in use or not empty: left alone
    }
  }
}

/**
 * Finds a writable pids controller (cgroup v1 `/sys/fs/cgroup/pids`, or v2 with `pids` enabled)
 * and makes a folder for this service in it. RLIMIT_NPROC cannot do this job when the service runs
 * as root (root is exempt) and counts per user across all commands; a pids cgroup caps each command,
 * root or not. Falls back to `none` (with the reason) where cgroups are not writable.
 */
export function createProcessLimiter(maxProcesses: number, root = '/sys/fs/cgroup'): ProcessLimiter {
  const v1 = path.join(root, 'pids');
  let base: string;
  try {
    if (existsSync(path.join(v1, 'cgroup.procs'))) {
      base = path.join(v1, `subagentd-${process.pid}`);
      mkdirSync(base, { recursive: true });
    } else if (readFileSync(path.join(root, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('pids')) {
      writeFileSync(path.join(root, 'cgroup.subtree_control'), '+pids');
      base = path.join(root, `subagentd-${process.pid}`);
      mkdirSync(base, { recursive: true });
      writeFileSync(path.join(base, 'cgroup.subtree_control'), '+pids');
    } else {
      return { kind: 'none', reason: 'no pids cgroup controller', create: () => noop, close() {} };
    }
    removeStale(path.dirname(base));
    // Prove it works before relying on it.
    const probe = path.join(base, 'probe');
    mkdirSync(probe);
    writeFileSync(path.join(probe, 'pids.max'), String(maxProcesses));
    rmdirSync(probe);
  } catch (err) {
    return { kind: 'none', reason: `pids cgroup not writable: ${(err as Error).message}`, create: () => noop, close() {} };
  }
  let n = 0;
  return {
    kind: 'cgroup',
    close() {
      try {
        rmdirSync(base);
      } catch {
        // Another app of this process still uses it, or a command group is not empty yet.
      }
    },
    create() {
      const dir = path.join(base, `cmd-${++n}`);
      try {
        mkdirSync(dir);
        writeFileSync(path.join(dir, 'pids.max'), String(maxProcesses));
      } catch {
        return noop;
      }
      return {
        add(pid: number) {
          writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
        },
        dispose() {
          // Empty once every process has exited; the kernel refuses to remove it before.
          try {
            rmdirSync(dir);
          } catch {
            setTimeout(() => {
              try {
                rmdirSync(dir);
              } catch {
                // left for the next start's clean-up
              }
            }, 1000).unref();
          }
        },
      };
    },
  };
}
