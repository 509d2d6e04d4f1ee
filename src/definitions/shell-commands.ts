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
 * The parse runs on a worker thread (shell-parse-worker.ts): tree-sitter takes seconds on some
 * hostile lines and checks its own cancellation too rarely, so the thread is ended at the budget.
 */
import { ShellNode, staticText, type RawNode } from './shell-node.ts';
import { createParseThread, deadline, type Deadline } from './shell-parse-worker.ts';
import {
  CALLBACK_OPTIONS,
  CODE_OPTIONS,
  commandName,
  HARMLESS_VARIABLES,
  OPAQUE,
  PROMPT_VARIABLES,
  PROMPT_VARIABLES_IN_WORD,
  SHELLS,
  shellLine,
  WRAPPERS,
  wrappedAt,
} from './shell-wrappers.ts';

/** Lines longer than this are not parsed (and so are asked): a rule's promise needs a parse. */
export const MAX_PARSED_LINE = 64 * 1024;
/** `bash -c` within `eval` within ...: deeper than this is not parsed. */
const MAX_NESTING = 8;
/** More simple commands than this in one line: not parsed. */
const MAX_COMMANDS = 1000;

/** Time a line (with what it nests) may take to parse; past it the line is not parsed (and so asked). */
export const PARSE_BUDGET_MS = 250;

export interface ShellParser {
  /** The line's simple commands in order, or null when the line cannot be parsed (see above). */
  commands(line: string): Promise<string[] | null>;
}

let thread: ReturnType<typeof createParseThread> | null = null;

/**
 * The parser, for the lines of one tenant (`key`) and one task (`signal`: once it aborts, its lines
 * still waiting are dropped, as unparseable). Its thread is shared by the process (the grammar is
 * immutable; a thread and its WebAssembly cost tens of milliseconds to start), started when first
 * needed, and takes the tenants' lines in turn.
 */
export async function loadShellParser(key = '', signal?: AbortSignal): Promise<ShellParser> {
  thread ??= createParseThread();
  const parseThread = thread;
  const parse: Run['parse'] = (line, budget) => parseThread.parse(line, budget, key, signal);
  return {
    async commands(line) {
      const run: Run = { parse, out: [], deadline: deadline(PARSE_BUDGET_MS) };
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

/** Bash removes a backslash-newline before it splits words (`r\⏎m` is `rm`); tree-sitter does not. */
const joinContinuations = (line: string) => line.replace(/(?<!\\)((?:\\\\)*)\\\n/g, '$1');

/** Appends `line`'s simple commands; false when it cannot be parsed (or takes longer than its budget). */
async function parseInto(run: Run, line: string, nesting: number): Promise<boolean> {
  if (line.length > MAX_PARSED_LINE || nesting > MAX_NESTING) return false;
  const raw = await run.parse(line, run.deadline);
  if (!raw) return false;
  return (await walk(run, new ShellNode(line, raw), nesting)) && run.out.length <= MAX_COMMANDS;
}

/**
 * Every command under `node` (itself included), in source order; false at anything that makes the
 * line unknowable. Iterative: a deeply nested line cannot overflow the stack.
 */
async function walk(run: Run, root: ShellNode, nesting: number): Promise<boolean> {
  const stack: ShellNode[] = [root];
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
        // A name that is an expansion (`declare "$n=..."`) sets a variable no word shows: PS4 perhaps.
        if (node.namedChildren.some((c) => c && !['word', 'variable_name', 'variable_assignment'].includes(c.type))) return false;
        // `export NAME` hands a variable set earlier to every later command.
        if (node.namedChildren.some((c) => c.type === 'variable_name' || (c?.type === 'word' && !c.text.startsWith('-')))) run.out.push(node.text);
        // `-n` makes a name reference: an assignment through it evaluates the subscript it names, and
        // sets the variable it names, which must be a plain name the line shows and no prompt string.
        if (node.namedChildren.some((c) => c.type === 'word' && /^-[a-zA-Z]*[iaAn]/.test(c.text))) arithmetic = true;
        if (
          node.namedChildren.some((c) => c.type === 'word' && /^-[a-zA-Z]*n/.test(c.text)) &&
          !node.namedChildren.every((c) => c.type !== 'variable_assignment' || isPlainReference(c.childForFieldName('value')))
        )
          return false;
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
        if (PROMPT_VARIABLES.test(name?.text ?? '')) return false;
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

/** A name reference's target: one variable's name, written plainly, not a prompt string's. */
function isPlainReference(value: ShellNode | null): boolean {
  return value !== null && value.type === 'word' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value.text) && !PROMPT_VARIABLES.test(value.text);
}

/** Commands that evaluate their arguments as arithmetic or assign through names (`read 'a[$(x)]'`). */
function isArithmeticCommand(node: ShellNode): boolean {
  const name = node.childForFieldName('name')?.text;
  return name === 'let' || name === 'read' || name === 'printf' || name === 'mapfile' || name === 'readarray' || name === 'test' || name === '[';
}

/**
 * A here-document whose delimiter tree-sitter reads as bash does: a plain word, or one quoted
 * whole (`'EOF'`, `"EOF"`, `\EOF`). With quotes inside it (`E"O"F`) bash ends the body elsewhere.
 */
function plainHeredoc(node: ShellNode): boolean {
  const start = node.namedChildren.find((c) => c?.type === 'heredoc_start')?.text ?? '';
  const end = node.namedChildren.find((c) => c?.type === 'heredoc_end')?.text;
  const m = /^(?:([A-Za-z0-9_.-]+)|'([A-Za-z0-9_.-]+)'|"([A-Za-z0-9_.-]+)"|\\([A-Za-z0-9_.-]+))$/.exec(start);
  if (!m) return false;
  return end === undefined || end === (m[1] ?? m[2] ?? m[3] ?? m[4]);
}

/** One `command` node: its name and arguments, as `expand` resolves them, and what its variables change. */
async function simpleCommand(run: Run, node: ShellNode, nesting: number): Promise<boolean> {
  const nameNode = node.childForFieldName('name');
  if (!nameNode) return true; // assignments only (`X=1`): their substitutions are walked
  const args = node.childrenForFieldName('argument').filter((a): a is ShellNode => a !== null);
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
  // A prompt string (`PS4`, which `set -x` expands before each command) or a shell option set
  // from a word runs code no argument shows; so do the callbacks of compgen, complete and mapfile.
  if (args.some((a) => a !== null && PROMPT_VARIABLES_IN_WORD.test(a))) return false;
  if (CALLBACK_OPTIONS[name] && args.some((a) => a === null || CALLBACK_OPTIONS[name].test(a))) return false;
  // So does a variable whose name is an expansion (`printf -v "$n" ...`, `read "$n"`).
  if (name === 'printf' && args.some((a, i) => a === '-v' && args[i + 1] === null)) return false;
  if ((name === 'read' || name === 'mapfile' || name === 'readarray') && args.some((a) => a === null)) return false;
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
