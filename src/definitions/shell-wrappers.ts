/**
 * What the commands that run other commands take: shells (`bash -c '...'`), wrappers (`timeout 5
 * cmd`, `env X=1 cmd`, `xargs cmd`), options whose value is code (`flock -c '...'`), and the
 * builtins and variables the parse treats apart.
 */

export const SHELLS = new Set(['bash', 'sh', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'rbash', 'yash', 'posh', 'fish', 'tcsh', 'csh']);

/**
 * Commands that run another command given in their arguments: their options (those that take a
 * value listed), then the positional arguments they take before the command (`timeout 5 cmd`).
 */
export const WRAPPERS: Record<string, { valued: string[]; positional?: number }> = {
  command: { valued: [] },
  builtin: { valued: [] },
  exec: { valued: ['-a'] },
  nohup: { valued: [] },
  time: { valued: ['-f', '--format', '-o', '--output'] },
  nice: { valued: ['-n', '--adjustment'] },
  ionice: { valued: ['-c', '--class', '-n', '--classdata', '-p', '-P', '-u'] },
  setsid: { valued: [] },
  stdbuf: { valued: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  timeout: { valued: ['-s', '--signal', '-k', '--kill-after'], positional: 1 },
  sudo: {
    valued: [
      '-u',
      '--user',
      '-g',
      '--group',
      '-C',
      '--close-from',
      '-D',
      '--chdir',
      '-h',
      '--host',
      '-p',
      '--prompt',
      '-r',
      '--role',
      '-t',
      '--type',
      '-U',
      '--other-user',
      '-T',
      '--command-timeout',
    ],
  },
  doas: { valued: ['-u', '-C'] },
  xargs: {
    valued: ['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars', '--process-slot-var'],
  },
  env: { valued: ['-u', '--unset', '-C', '--chdir'] },
  coproc: { valued: [] },
  busybox: { valued: [] },
  flock: { valued: ['-w', '--timeout', '-E', '--conflict-exit-code'], positional: 1 },
  taskset: { valued: [], positional: 1 },
  chrt: { valued: [], positional: 1 },
  prlimit: { valued: ['-p', '--pid'] },
  setpriv: { valued: [] },
  unshare: { valued: [] },
  watch: { valued: ['-n', '--interval', '-d', '--differences'] },
  caffeinate: { valued: [] },
};

/** Options of these take a line of code as their value (`flock -c '...'`, `script -c '...'`). */
export const CODE_OPTIONS: Record<string, string[]> = { flock: ['-c', '--command'], script: ['-c', '--command'], su: ['-c', '--command'], watch: [] };

/** Builtins whose use makes what runs unknowable from the text: aliases, hashed paths, loaded builtins. */
export const OPAQUE = new Set(['alias', 'hash', 'enable', 'builtin_load', 'bind']);

/** Variables whose value bash expands as a prompt, command substitutions included (`PS4` for each `set -x` line). */
export const PROMPT_VARIABLES = /^(PS[0-4]|PROMPT_COMMAND)$/;
/**
 * A word that names one of them (`printf -v PS4`, `read PS4`, `declare -n r=PS4`, `export PS4=...`),
 * or the variables that turn options such as xtrace on in a shell it starts (`SHELLOPTS`, `BASHOPTS`).
 */
export const PROMPT_VARIABLES_IN_WORD = /(^|[=\s,])(PS[0-4]|PROMPT_COMMAND|SHELLOPTS|BASHOPTS)(\b|$)/;

/** Options of these builtins whose value is code they run (`compgen -C cmd`, `mapfile -C cmd`), alone or in a cluster. */
export const CALLBACK_OPTIONS: Record<string, RegExp> = {
  compgen: /^-[A-Za-z]*[CF]/,
  complete: /^-[A-Za-z]*[CF]/,
  mapfile: /^-[A-Za-z]*C/,
  readarray: /^-[A-Za-z]*C/,
};

/** Variables set before a command that cannot change what it does (others are matched as commands: `GIT_CONFIG_*=...`). */
export const HARMLESS_VARIABLES = /^(LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|NO_COLOR|FORCE_COLOR|CI|COLUMNS|LINES)$/;

/**
 * Where a wrapper's command starts among its arguments: null when it wraps none (`env`, `command
 * -v`), false when that cannot be known (an option or a name that is an expansion, `env -S`).
 */
export function wrappedAt(name: string, args: Array<string | null>): number | null | false {
  const wrapper = WRAPPERS[name];
  let i = 0;
  while (i < args.length) {
    const a = args[i];
    if (a === null) return false;
    if (name === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) {
      i++;
      continue;
    }
    if (name === 'env' && (a.startsWith('--split-string') || /^-[^-]*S/.test(a))) return false;
    if (a === '--') {
      i++;
      break;
    }
    if (!a.startsWith('-') || a === '-') break;
    i += wrapper.valued.includes(a) ? 2 : 1;
  }
  i += wrapper.positional ?? 0;
  if (i >= args.length) return null;
  return args[i] === null ? false : i;
}

/**
 * The line `bash [options] -c '<line>'` runs; null for `bash script.sh` (a file: the rule sees
 * `bash script.sh`); false when unknown (a line that is an expansion, a shell reading its input).
 */
export function shellLine(args: Array<string | null>): string | null | false {
  let i = 0;
  let dashC = false;
  while (i < args.length) {
    const a = args[i];
    if (a === null) return false;
    if (a === '--' || a === '-') {
      i++;
      break;
    }
    if (!/^[-+]/.test(a)) break;
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(a)) dashC = true;
    if (/^-[A-Za-z]*s[A-Za-z]*$/.test(a)) return false; // reads its commands from its input
    // `-o option`, `+O shopt`, `--rcfile file`: the next word is the option's value.
    i += /^[-+][A-Za-z]*[oO]$/.test(a) || a === '--rcfile' || a === '--init-file' ? 2 : 1;
  }
  if (dashC) return typeof args[i] === 'string' ? args[i]! : false;
  // A script that is its own input or a descriptor: what it runs is not on the line.
  if (i < args.length && (args[i] === null || /^\/(dev|proc)\//.test(args[i]!))) return false;
  return i < args.length ? null : false;
}

/** A command's name as rules compare it: its last path component (`/bin/rm` → `rm`). */
export const commandName = (word: string) => word.slice(word.lastIndexOf('/') + 1);
