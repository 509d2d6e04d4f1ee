import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The system folders, in the order a login shell searches them. The service looks for the programs
 * it starts (bash, bwrap) here and nowhere else, and it is the PATH every command starts with.
 */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment of a process the service starts on the host side of a sandbox (the launcher:
 * bwrap, or the gate that waits for the command's cgroup). Built here, never from the service's
 * own environment nor from anything a model, an agent or a caller sends.
 */
export const HOST_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: SYSTEM_PATH, LANG: 'C.UTF-8' });

const found = new Map<string, string | null>();

/**
 * The absolute path of a system program, looked up once in SYSTEM_PATH: a process is started by
 * this path, so no PATH a request carries can choose which program runs. Null when it is missing.
 */
export function systemProgram(name: 'bash' | 'bwrap'): string | null {
  if (!found.has(name)) {
    let hit: string | null = null;
    for (const dir of SYSTEM_PATH.split(':')) {
      const candidate = path.join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        if (statSync(candidate).isFile()) {
          hit = candidate;
          break;
        }
      } catch {
        // not here
      }
    }
    found.set(name, hit);
  }
  return found.get(name)!;
}

/** bash by absolute path; every supported host has it (commands are bash commands). */
export function bashPath(): string {
  return systemProgram('bash') ?? '/bin/bash';
}

/**
 * `bash -c script args...` that reads no start-up file: not the service user's `~/.bashrc` (which
 * Debian's bash sources when its input is a socket, as Node's pipes are), not the workspace's
 * (`HOME` inside the sandbox), not a profile. The same command prints the same output whatever
 * the home folders hold.
 */
export function bashArgv(script: string, ...args: string[]): string[] {
  return [bashPath(), '--noprofile', '--norc', '-c', script, ...args];
}

/**
 * Names a command's environment never takes from a request, inside the sandbox or out: they choose
 * which program runs (PATH), load code into every process (LD_*, BASH_ENV, ENV, BASH_FUNC_*, shell
 * options) or move the confined home. The service sets PATH and HOME itself.
 */
const REFUSED_NAMES =
  /^(PATH|HOME|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|IFS|CDPATH|GLOBIGNORE|PS4|PROMPT_COMMAND|LD_.*|BASH_FUNC_.*|NODE_OPTIONS|PYTHONSTARTUP|PERL5OPT|PERL5LIB|RUBYOPT)$/i;

/** Most variables, and bytes of names and values, a request may add to a command's environment. */
export const MAX_REQUESTED_VARIABLES = 64;
export const MAX_REQUESTED_ENV_BYTES = 32 * 1024;

/**
 * The variables of a request (an ACP agent's `terminal/create`), bounded: a request over the
 * bounds throws with a message the agent reads; a value with a NUL byte (which no process can be
 * given) is left out. Which names may reach the program is decided in one place, where the
 * sandbox builds its environment (`isRefusedName`).
 */
export function requestedEnv(vars: Array<{ name: string; value: string }>): Record<string, string> {
  if (vars.length > MAX_REQUESTED_VARIABLES) throw new Error(`at most ${MAX_REQUESTED_VARIABLES} environment variables per command`);
  const env: Record<string, string> = {};
  let bytes = 0;
  for (const { name, value } of vars) {
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
    if (bytes > MAX_REQUESTED_ENV_BYTES) throw new Error(`environment variables over ${MAX_REQUESTED_ENV_BYTES} bytes`);
    if (!value.includes('\0')) env[name] = value;
  }
  return env;
}

/** True for a variable the service never passes on from a request or a definition (a malformed name too). */
export function isRefusedName(name: string): boolean {
  return !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || REFUSED_NAMES.test(name);
}
