/**
 * The simple commands of a bash line, as permission rules match them (`bash(<glob>)` rules are
 * matched per simple command). Parsed by tree-sitter-bash (the grammar editors and GitHub use, run
 * as WebAssembly: no native build, the same parse on every host), never by regexes: a regex cannot
 * tell `git status; rm x` from `echo "git status; rm x"`.
 *
 * Each simple command is given as its name (quotes removed, folder stripped: `/bin/rm`, `r''m`,
 * `\rm` are `rm`) and its arguments joined by one space (static ones unquoted, others as written),
 * then its redirections. What runs inside is a command of its own: `$(...)`, backticks, `<(...)`,
 * subshells, blocks, functions' bodies, `bash -c '...'` (and `sh`, `dash`, `zsh`, `ksh`), `eval`,
 * the command a wrapper runs (`command`, `env`, `nice`, `timeout`, `xargs`, `sudo`, ...), and
 * `find -exec ... ;` (`find -delete` counts as `rm`). What cannot be known before it runs makes
 * the line unparseable (null): a syntax error, a command name that is an expansion (`$(echo rm) x`),
 * `eval` or `bash -c` of an expansion, a shell that reads its commands from its input, a line that
 * takes longer than PARSE_BUDGET_MS to parse.
 *
 * The parse runs on a worker thread (shell-parse-thread.mjs): tree-sitter takes seconds on some
 * hostile lines and checks its own cancellation too rarely, so the thread is ended at the budget.
 */
import { Worker } from 'node:worker_threads';

/** Lines longer than this are not parsed (and so are asked): a rule's promise needs a parse. */
export const MAX_PARSED_LINE = 64 * 1024;
/** `bash -c` within `eval` within ...: deeper than this is not parsed. */
const MAX_NESTING = 8;
/** More simple commands than this in one line: not parsed. */
const MAX_COMMANDS = 1000;

const SHELLS = new Set(['bash', 'sh', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'rbash', 'yash', 'posh', 'fish', 'tcsh', 'csh']);

/**
 * Commands that run another command given in their arguments: their options (those that take a
 * value listed), then the positional arguments they take before the command (`timeout 5 cmd`).
 */
const WRAPPERS: Record<string, { valued: string[]; positional?: number }> = {
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
const CODE_OPTIONS: Record<string, string[]> = { flock: ['-c', '--command'], script: ['-c', '--command'], su: ['-c', '--command'], watch: [] };

/** Builtins whose use makes what runs unknowable from the text: aliases, hashed paths, loaded builtins. */
const OPAQUE = new Set(['alias', 'hash', 'enable', 'builtin_load']);

/** Variables set before a command that cannot change what it does (others are matched as commands: `GIT_CONFIG_*=...`). */
const HARMLESS_VARIABLES = /^(LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|NO_COLOR|FORCE_COLOR|CI|COLUMNS|LINES)$/;

/** Time a line (with what it nests) may take to parse; past it the line is not parsed (and so asked). */
export const PARSE_BUDGET_MS = 250;

export interface ShellParser {
  /** The line's simple commands in order, or null when the line cannot be parsed (see above). */
  commands(line: string): Promise<string[] | null>;
}

/** A node of the tree the parse thread answers: the part of web-tree-sitter's Node this file reads. */
class Node {
  readonly namedChildren: Node[];
  constructor(
    private readonly line: string,
    private readonly raw: RawNode,
  ) {
    this.namedChildren = raw[5].map((c) => new Node(line, c));
  }
  get type() {
    return this.raw[0];
  }
  get text() {
    return this.line.slice(this.raw[1], this.raw[2]);
  }
  /** Unnamed children (tokens: `$`, quotes, operators) it has besides its named ones. */
  get unnamed() {
    return this.raw[4];
  }
  childForFieldName(field: string): Node | null {
    return this.namedChildren.find((c) => c.raw[3] === field) ?? null;
  }
  childrenForFieldName(field: string): Node[] {
    return this.namedChildren.filter((c) => c.raw[3] === field);
  }
}
type RawNode = [type: string, start: number, end: number, field: string | null, unnamed: number, children: RawNode[]];

/**
 * The parse thread: one per process, started on first use, ended (and started again on the next
 * line) when a parse outlives its time. Lines are parsed one at a time, in order.
 */
function createParseThread() {
  let worker: Worker | null = null;
  let ready: Promise<void> | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let next = 0;
  const start = () => {
    const w = new Worker(new URL('./shell-parse-thread.mjs', import.meta.url));
    w.unref();
    worker = w;
    ready = new Promise<void>((resolve, reject) => {
      w.once('message', () => resolve());
      w.once('error', reject);
    });
    w.on('error', () => {
      if (worker === w) worker = null;
    });
    return w;
  };
  /** The line's tree, or null for a syntax error or a parse past `deadline` (counted once the thread is up). */
  const parse = (line: string, deadline: Deadline): Promise<RawNode | null> => {
    const job = queue.then(async (): Promise<RawNode | null> => {
      const w = worker ?? start();
      await ready;
      const ms = deadline.left();
      const id = ++next;
      return new Promise((resolve) => {
        const timer = setTimeout(
          () => {
            w.off('message', onMessage);
            // A parse cannot be interrupted: the thread goes, and the next line gets a new one.
            if (worker === w) worker = null;
            void w.terminate();
            resolve(null);
          },
          Math.max(1, ms),
        );
        const onMessage = (m: { id?: number; tree?: RawNode | null }) => {
          if (m.id !== id) return;
          clearTimeout(timer);
          w.off('message', onMessage);
          resolve(m.tree ?? null);
        };
        w.on('message', onMessage);
        w.postMessage({ id, line });
      });
    });
    queue = job.catch(() => null);
    return job;
  };
  return { parse };
}

let thread: ReturnType<typeof createParseThread> | null = null;

/**
 * The parser. Its thread is shared by the process (the grammar is immutable; a thread and its
 * WebAssembly cost tens of milliseconds to start), and started when first needed.
 */
export async function loadShellParser(): Promise<ShellParser> {
  thread ??= createParseThread();
  const parseThread = thread;
  return {
    async commands(line) {
      const run: Run = { parse: parseThread.parse, out: [], deadline: deadline(PARSE_BUDGET_MS) };
      try {
        return (await parseInto(run, joinContinuations(line), 0)) ? run.out : null;
      } catch {
        return null;
      }
    },
  };
}

/** One line's parse: the parse thread, the commands found so far, when it must give up. */
interface Run {
  parse: (line: string, deadline: Deadline) => Promise<RawNode | null>;
  out: string[];
  deadline: Deadline;
}

/**
 * A line's time to parse, the lines it nests included: it starts when the thread first takes the
 * line, so the wait for a new thread (after a hostile line ended the last one) is not counted.
 */
interface Deadline {
  left(): number;
  over(): boolean;
}
function deadline(ms: number): Deadline {
  let since: number | null = null;
  const spent = () => (since === null ? 0 : performance.now() - since);
  return {
    left: () => {
      since ??= performance.now();
      return ms - spent();
    },
    over: () => spent() > ms,
  };
}

/** Bash removes a backslash-newline before it splits words (`r\⏎m` is `rm`); tree-sitter does not. */
const joinContinuations = (line: string) => line.replace(/(?<!\\)((?:\\\\)*)\\\n/g, '$1');

/** Appends `line`'s simple commands; false when it cannot be parsed (or takes longer than its budget). */
async function parseInto(run: Run, line: string, nesting: number): Promise<boolean> {
  if (line.length > MAX_PARSED_LINE || nesting > MAX_NESTING) return false;
  const raw = await run.parse(line, run.deadline);
  if (!raw) return false;
  return (await walk(run, new Node(line, raw), nesting)) && run.out.length <= MAX_COMMANDS;
}

/**
 * Every command under `node` (itself included), in source order; false at anything that makes the
 * line unknowable. Iterative: a deeply nested line cannot overflow the stack.
 */
async function walk(run: Run, root: Node, nesting: number): Promise<boolean> {
  const stack: Node[] = [root];
  let arithmetic = false;
  let quotedCode = false;
  while (stack.length > 0) {
    if (run.deadline.over() || run.out.length > MAX_COMMANDS) return false;
    const node = stack.pop()!;
    switch (node.type) {
      case 'command':
        if (!(await simpleCommand(run, node, nesting))) return false;
        if (isArithmeticCommand(node)) arithmetic = true;
        break;
      case 'file_redirect': {
        // Output into a file writes it, whatever the command: `> <path>` is a command of its own
        // for the rules (`bash(git status*)` does not let `git status > .git/config` through).
        const target = node.childForFieldName('destination');
        const path = target ? (staticText(target) ?? target.text) : '';
        if (
          /^\d*(>|>>|&>|&>>|>\||<>)$/.test(node.text.slice(0, node.text.length - (target?.text.length ?? 0)).trim()) &&
          !/^\/dev\/(null|stdout|stderr)$/.test(path)
        )
          run.out.push(`> ${path}`);
        break;
      }
      case 'heredoc_redirect':
        if (!plainHeredoc(node)) return false;
        break;
      case 'arithmetic_expansion':
      case 'test_command':
      case 'subscript':
        arithmetic = true;
        break;
      case 'compound_statement':
        if (node.text.startsWith('((')) arithmetic = true;
        break;
      case 'declaration_command':
        // `export NAME` hands a variable set earlier to every later command.
        if (node.namedChildren.some((c) => c.type === 'variable_name' || (c?.type === 'word' && !c.text.startsWith('-')))) run.out.push(node.text);
        if (node.namedChildren.some((c) => c.type === 'word' && /^-[a-zA-Z]*[iaA]/.test(c.text))) arithmetic = true;
        break;
      case 'expansion':
        // `${x@P}` expands a prompt string, command substitutions included.
        if (/@P\}$/.test(node.text)) return false;
        if (node.text.includes('[')) arithmetic = true;
        break;
      case 'raw_string':
      case 'string':
      case 'ansi_c_string':
        if (/\$\(|`/.test(node.text)) quotedCode = true;
        break;
      case 'variable_assignment': {
        // A variable can change what a later command does (GIT_CONFIG_*, LD_PRELOAD, PAGER, once
        // exported or set for it): each is a command of its own for the rules, unless it cannot.
        const name = node.childForFieldName('name');
        if (name?.type === 'subscript') arithmetic = true;
        if (!HARMLESS_VARIABLES.test(name?.text ?? '')) run.out.push(node.text);
        break;
      }
    }
    const children = node.namedChildren;
    for (let i = children.length - 1; i >= 0; i--) if (children[i]) stack.push(children[i]);
  }
  // Bash evaluates a string as arithmetic where a number is expected, and an array index in it
  // runs its command substitutions: code held in quotes meets arithmetic only on purpose.
  return !(arithmetic && quotedCode);
}

/** Commands that evaluate their arguments as arithmetic or assign through names (`read 'a[$(x)]'`). */
function isArithmeticCommand(node: Node): boolean {
  const name = node.childForFieldName('name')?.text;
  return name === 'let' || name === 'read' || name === 'printf' || name === 'mapfile' || name === 'readarray' || name === 'test' || name === '[';
}

/**
 * A here-document whose delimiter tree-sitter reads as bash does: a plain word, or one quoted
 * whole (`'EOF'`, `"EOF"`, `\EOF`). With quotes inside it (`E"O"F`) bash ends the body elsewhere.
 */
function plainHeredoc(node: Node): boolean {
  const start = node.namedChildren.find((c) => c?.type === 'heredoc_start')?.text ?? '';
  const end = node.namedChildren.find((c) => c?.type === 'heredoc_end')?.text;
  const m = /^(?:([A-Za-z0-9_.-]+)|'([A-Za-z0-9_.-]+)'|"([A-Za-z0-9_.-]+)"|\\([A-Za-z0-9_.-]+))$/.exec(start);
  if (!m) return false;
  return end === undefined || end === (m[1] ?? m[2] ?? m[3] ?? m[4]);
}

/** One `command` node: its name and arguments, as `expand` resolves them, and what its variables change. */
async function simpleCommand(run: Run, node: Node, nesting: number): Promise<boolean> {
  const nameNode = node.childForFieldName('name');
  if (!nameNode) return true; // assignments only (`X=1`): their substitutions are walked
  const args = node.childrenForFieldName('argument').filter((a): a is Node => a !== null);
  const first = nameNode.namedChildren[0] ?? nameNode;
  // An unquoted *, ? or [ in the name is a pathname pattern: what it runs is known only then.
  const unquoted = nameNode.text.replace(/'[^']*'|"(?:[^"\\]|\\.)*"|\\./g, '');
  const name = /[*?[]/.test(unquoted) ? null : staticText(first);
  const words = [name, ...args.map(staticText)];
  const raw = [nameNode.text, ...args.map((a) => a.text)];
  const redirects = node.childrenForFieldName('redirect').flatMap((r) => (r ? [r.text.replace(/\s+/g, ' ')] : []));
  return expand(run, { words, raw, extra: redirects }, nesting);
}

interface Words {
  /** Each word's value, null where it has an expansion. */
  words: Array<string | null>;
  /** Each word as written (shown for one with an expansion). */
  raw: string[];
  /** Appended to the command's text: its redirections, `{}` for what xargs adds. */
  extra: string[];
}

/**
 * One simple command: the command a wrapper, `eval` or `bash -c` runs stands in its place (so
 * `command rm x` is `rm x`); any other is itself (and for `find`, what it runs too).
 */
async function expand(run: Run, cmd: Words, nesting: number): Promise<boolean> {
  const first = cmd.words[0];
  if (first === null || first === '') return false;
  const name = commandName(first);
  const args = cmd.words.slice(1);
  if (OPAQUE.has(name)) return false;
  if (name === 'shopt' && args.includes('expand_aliases')) return false;
  if (name === 'eval') {
    if (args.some((a) => a === null)) return false;
    return parseInto(run, args.join(' '), nesting + 1);
  }
  if (name === 'trap') {
    // `trap 'code' SIGNAL`: the code runs later, in this shell.
    const code = args[0];
    if (code === null) return false;
    if (code !== undefined && !code.startsWith('-') && args.length > 1 && !(await parseInto(run, code, nesting + 1))) return false;
  }
  if (name === 'source' || name === '.') {
    // A file the line writes itself meanwhile, or its own input: what it runs is not on the line.
    if (args[0] === null || args[0] === undefined || /^\/(dev|proc)\//.test(args[0])) return false;
  }
  if (SHELLS.has(name)) {
    const line = shellLine(args);
    if (line === false) return false;
    if (line !== null) return parseInto(run, line, nesting + 1);
  }
  const code = CODE_OPTIONS[name]?.map((o) => args.indexOf(o)).find((i) => i >= 0);
  if (code !== undefined) {
    const line = args[code + 1];
    return typeof line === 'string' && (await parseInto(run, line, nesting + 1));
  }
  if (name === 'script') return false; // without -c it runs an interactive shell
  const wrapped = WRAPPERS[name] ? wrappedAt(name, args) : null;
  if (wrapped === false) return false;
  if (wrapped !== null) {
    if (name === 'env') {
      for (const a of args.slice(0, wrapped)) if (a && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a) && !HARMLESS_VARIABLES.test(a.split('=')[0])) run.out.push(a);
    }
    const extra = name === 'xargs' ? ['{}', ...cmd.extra] : cmd.extra;
    return expand(run, { words: cmd.words.slice(wrapped + 1), raw: cmd.raw.slice(wrapped + 1), extra }, nesting);
  }
  run.out.push([name, ...args.map((a, i) => a ?? cmd.raw[i + 1]), ...cmd.extra].join(' '));
  return name === 'find' ? findRuns(run, cmd, nesting) : true;
}

/**
 * Where a wrapper's command starts among its arguments: null when it wraps none (`env`, `command
 * -v`), false when that cannot be known (an option or a name that is an expansion, `env -S`).
 */
function wrappedAt(name: string, args: Array<string | null>): number | null | false {
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
function shellLine(args: Array<string | null>): string | null | false {
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

/** `find ... -exec cmd {} ;` runs `cmd {}` (resolved as any command); `-delete` removes what it finds (`rm <start points>`). */
async function findRuns(run: Run, cmd: Words, nesting: number): Promise<boolean> {
  const args = cmd.words.slice(1);
  const starts: string[] = [];
  let i = 0;
  for (; i < args.length && args[i] !== null && !/^[-(!]/.test(args[i]!); i++) starts.push(args[i]!);
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === '-delete') run.out.push(['rm', ...(starts.length ? starts : ['.'])].join(' '));
    if (a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir') {
      const from = i + 1;
      for (i++; i < args.length && args[i] !== ';' && args[i] !== '+'; i++);
      if (i === from) return false;
      if (!(await expand(run, { words: cmd.words.slice(from + 1, i + 1), raw: cmd.raw.slice(from + 1, i + 1), extra: [] }, nesting))) return false;
    }
  }
  return true;
}

/** A command's name as rules compare it: its last path component (`/bin/rm` → `rm`). */
const commandName = (word: string) => word.slice(word.lastIndexOf('/') + 1);

/** A word's value when it has no expansion (quotes and escapes removed); null otherwise. */
function staticText(node: Node): string | null {
  switch (node.type) {
    case 'word':
    case 'number':
      return node.text.replace(/\\\n/g, '').replace(/\\(.)/gs, '$1');
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string': {
      if (node.namedChildren.some((c) => c.type !== 'string_content')) return null;
      return node.text
        .slice(1, -1)
        .replace(/\\\n/g, '')
        .replace(/\\([$`"\\])/g, '$1');
    }
    case 'concatenation': {
      let text = '';
      for (const part of node.namedChildren) {
        const value = part && staticText(part);
        if (value === null || value === undefined) return null;
        text += value;
      }
      // A concatenation's unnamed parts (a bare `$` before a quote) make it dynamic.
      return node.unnamed === 0 ? text : null;
    }
    default:
      return null;
  }
}
