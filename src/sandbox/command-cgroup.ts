import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Caps each command's process count and memory through cgroups of its own: a pids group (so a
 * fork bomb stays contained, root or not) and a memory group (so one command cannot take the
 * host's RAM; tmpfs pages it writes are charged to it too). cgroup v1 (one hierarchy per
 * controller) and v2 (one tree with both controllers) are both handled.
 */
export interface CommandLimiter {
  /** Which limits the kernel enforces per command; the rest fall back to ulimit in the sandbox. */
  pids: boolean;
  memory: boolean;
  /** Why a limit is not enforced by a cgroup, when one is not. */
  reason?: string;
  /**
   * A fresh group for one command: `add` its first process, `killAll` kills every process in it
   * (also those that left the process group with setsid), `dispose` once it has ended.
   */
  create(): CommandGroup;
  /** Removes the service's own folders when no command group is left in them. */
  close(): void;
}

export interface CommandGroup {
  add(pid: number): void;
  killAll(): void;
  dispose(): void;
}

export interface CommandLimits {
  maxProcesses: number;
  maxMemoryBytes: number;
}

interface Controller {
  /** The service's folder under which each command gets a group. */
  base: string;
  /** Files written in a command's group: name → value. */
  limits: Record<string, string>;
}

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

/** Makes the service's folder in a hierarchy and proves a command group with `limits` can be made there. */
function prepare(base: string, limits: Record<string, string>): Controller {
  mkdirSync(base, { recursive: true });
  removeStale(path.dirname(base));
  const probe = path.join(base, 'probe');
  mkdirSync(probe);
  try {
    for (const [file, value] of Object.entries(limits)) writeFileSync(path.join(probe, file), value);
  } finally {
    rmdirSync(probe);
  }
  return { base, limits };
}

function findControllers(limits: CommandLimits, root: string): { controllers: Controller[]; pids: boolean; memory: boolean; reasons: string[] } {
  const pidsLimits = { 'pids.max': String(limits.maxProcesses) };
  const reasons: string[] = [];
  const controllers: Controller[] = [];
  let pids = false;
  let memory = false;
  const own = `subagentd-${process.pid}`;
  if (existsSync(path.join(root, 'pids', 'cgroup.procs')) || existsSync(path.join(root, 'memory', 'cgroup.procs'))) {
    // cgroup v1: one hierarchy per controller.
    try {
      controllers.push(prepare(path.join(root, 'pids', own), pidsLimits));
      pids = true;
    } catch (err) {
      reasons.push(`pids cgroup not writable: ${(err as Error).message}`);
    }
    try {
      controllers.push(prepare(path.join(root, 'memory', own), { 'memory.limit_in_bytes': String(limits.maxMemoryBytes) }));
      memory = true;
    } catch (err) {
      reasons.push(`memory cgroup not writable: ${(err as Error).message}`);
    }
    return { controllers, pids, memory, reasons };
  }
  try {
    const available = readFileSync(path.join(root, 'cgroup.controllers'), 'utf8').split(/\s+/);
    const wanted = ['pids', 'memory'].filter((c) => available.includes(c));
    if (wanted.length === 0) return { controllers, pids, memory, reasons: ['no pids or memory cgroup controller'] };
    const enable = wanted.map((c) => `+${c}`).join(' ');
    writeFileSync(path.join(root, 'cgroup.subtree_control'), enable);
    const base = path.join(root, own);
    mkdirSync(base, { recursive: true });
    writeFileSync(path.join(base, 'cgroup.subtree_control'), enable);
    const v2Limits: Record<string, string> = {};
    if (wanted.includes('pids')) Object.assign(v2Limits, pidsLimits);
    if (wanted.includes('memory')) Object.assign(v2Limits, { 'memory.max': String(limits.maxMemoryBytes), 'memory.swap.max': '0' });
    controllers.push(prepare(base, v2Limits));
    pids = wanted.includes('pids');
    memory = wanted.includes('memory');
    if (!memory) reasons.push('no memory cgroup controller');
    if (!pids) reasons.push('no pids cgroup controller');
  } catch (err) {
    reasons.push(`cgroups not writable: ${(err as Error).message}`);
  }
  return { controllers, pids, memory, reasons };
}

function removeLater(dir: string) {
  try {
    rmdirSync(dir);
  } catch {
    // Empty once every process has exited; the kernel refuses to remove it before.
    setTimeout(() => {
      try {
        rmdirSync(dir);
      } catch {
        // left for the next start's clean-up
      }
    }, 1000).unref();
  }
}

/**
 * Finds writable pids and memory controllers and makes a folder for this service in each. Falls
 * back (with the reason) where cgroups are not writable: the sandbox then applies `ulimit -u`
 * (which does not bind root) and `ulimit -v` (address space, which some runtimes exceed).
 */
export function createCommandLimiter(limits: CommandLimits, root = '/sys/fs/cgroup'): CommandLimiter {
  const found = findControllers(limits, root);
  let n = 0;
  return {
    pids: found.pids,
    memory: found.memory,
    reason: found.reasons.length > 0 ? found.reasons.join('; ') : undefined,
    close() {
      for (const c of found.controllers) {
        try {
          rmdirSync(c.base);
        } catch {
          // Another app of this process still uses it, or a command group is not empty yet.
        }
      }
    },
    create() {
      const id = `cmd-${++n}`;
      const dirs: string[] = [];
      for (const c of found.controllers) {
        const dir = path.join(c.base, id);
        try {
          // recursive: another app of this process may have removed the shared base on close.
          mkdirSync(dir, { recursive: true });
          for (const [file, value] of Object.entries(c.limits)) writeFileSync(path.join(dir, file), value);
          dirs.push(dir);
        } catch {
          // This controller went away: the command still runs under ulimit and the timeout.
        }
      }
      return {
        add(pid: number) {
          for (const dir of dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
        },
        killAll() {
          for (const dir of dirs) {
            try {
              for (const pid of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
                try {
                  process.kill(Number(pid), 'SIGKILL');
                } catch {
                  // already gone
                }
              }
            } catch {
              // group gone
            }
          }
        },
        dispose() {
          for (const dir of dirs) removeLater(dir);
        },
      };
    },
  };
}
