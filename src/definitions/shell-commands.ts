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
 * `eval` or `bash -c` of an expansion, a shell that reads its commands from its input.
 */
import { createRequire } from 'node:module';
import { Language, Parser, type Node } from 'web-tree-sitter';

/** Lines longer than this are not parsed (and so are asked): a rule's promise needs a parse. */
export const MAX_PARSED_LINE = 64 * 1024;
/** `bash -c` within `eval` within ...: deeper than this is not parsed. */
const MAX_NESTING = 8;
/** More simple commands than this in one line: not parsed. */
const MAX_COMMANDS = 1000;

const SHELLS = new Set(['bash', 'sh', 'dash', 'zsh', 'ksh', 'mksh', 'ash']);

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
    valued: [
      '-a',
      '--arg-file',
      '-d',
      '--delimiter',
      '-E',
      '-e',
      '-I',
      '-i',
      '-L',
      '-l',
      '-n',
      '--max-args',
      '-P',
      '--max-procs',
      '-s',
      '--max-chars',
      '--process-slot-var',
    ],
  },
  env: { valued: ['-u', '--unset', '-C', '--chdir'] },
};

export interface ShellParser {
  /** The line's simple commands in order, or null when the line cannot be parsed (see above). */
  commands(line: string): string[] | null;
}

let language: Promise<Language> | null = null;

/**
 * The parser, once its WebAssembly is compiled (once per process: the grammar is immutable, and
 * compiling it costs tens of milliseconds). Each call gets its own Parser object.
 */
export async function loadShellParser(): Promise<ShellParser> {
  language ??= (async () => {
    const require = createRequire(import.meta.url);
    await Parser.init({ locateFile: () => require.resolve('web-tree-sitter/tree-sitter.wasm') });
    return Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
  })().catch((err: unknown) => {
    language = null;
    throw err;
  });
  const grammar = await language;
  const parser = new Parser();
  parser.setLanguage(grammar);
  return {
    commands(line) {
      const out: string[] = [];
      return parseInto(parser, line, out, 0) ? out : null;
    },
  };
}

/** Appends `line`'s simple commands to `out`; false when it cannot be parsed. */
function parseInto(parser: Parser, line: string, out: string[], nesting: number): boolean {
  if (line.length > MAX_PARSED_LINE || nesting > MAX_NESTING) return false;
  const tree = parser.parse(line);
  if (!tree) return false;
  try {
    if (tree.rootNode.hasError) return false;
    return walk(parser, tree.rootNode, out, nesting) && out.length <= MAX_COMMANDS;
  } finally {
    tree.delete();
  }
}

/** Every command under `node` (itself included), depth first in source order. */
function walk(parser: Parser, node: Node, out: string[], nesting: number): boolean {
  if (node.type === 'command' && !simpleCommand(parser, node, out, nesting)) return false;
  for (const child of node.namedChildren) {
    if (child && !walk(parser, child, out, nesting)) return false;
    if (out.length > MAX_COMMANDS) return false;
  }
  return true;
}

/** One `command` node: its name and arguments, as `expand` resolves them. */
function simpleCommand(parser: Parser, node: Node, out: string[], nesting: number): boolean {
  const nameNode = node.childForFieldName('name');
  if (!nameNode) return true; // assignments only (`X=1`): their substitutions are walked
  const args = node.childrenForFieldName('argument').filter((a): a is Node => a !== null);
  const words = [staticText(nameNode.namedChildren[0] ?? nameNode), ...args.map(staticText)];
  const raw = [nameNode.text, ...args.map((a) => a.text)];
  const redirects = node.childrenForFieldName('redirect').flatMap((r) => (r ? [r.text.replace(/\s+/g, ' ')] : []));
  return expand(parser, { words, raw, extra: redirects }, out, nesting);
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
function expand(parser: Parser, cmd: Words, out: string[], nesting: number): boolean {
  const first = cmd.words[0];
  if (first === null || first === '') return false;
  const name = commandName(first);
  const args = cmd.words.slice(1);
  if (name === 'eval') {
    if (args.some((a) => a === null)) return false;
    return parseInto(parser, args.join(' '), out, nesting + 1);
  }
  if (SHELLS.has(name)) {
    const line = shellLine(args);
    if (line === false) return false;
    if (line !== null) return parseInto(parser, line, out, nesting + 1);
  }
  const wrapped = WRAPPERS[name] ? wrappedAt(name, args) : null;
  if (wrapped === false) return false;
  if (wrapped !== null) {
    const extra = name === 'xargs' ? ['{}', ...cmd.extra] : cmd.extra;
    return expand(parser, { words: cmd.words.slice(wrapped + 1), raw: cmd.raw.slice(wrapped + 1), extra }, out, nesting);
  }
  out.push([name, ...args.map((a, i) => a ?? cmd.raw[i + 1]), ...cmd.extra].join(' '));
  return name === 'find' ? findRuns(args, out) : true;
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
    // `-o option`, `+O shopt`: the next word is the option's name.
    i += /^[-+][A-Za-z]*[oO]$/.test(a) ? 2 : 1;
  }
  if (dashC) return typeof args[i] === 'string' ? args[i]! : false;
  return i < args.length ? null : false;
}

/** `find ... -exec cmd {} ;` runs `cmd {}`; `-delete` removes what it finds (`rm <start points>`). */
function findRuns(args: Array<string | null>, out: string[]): boolean {
  const starts: string[] = [];
  let i = 0;
  for (; i < args.length && args[i] !== null && !/^[-(!]/.test(args[i]!); i++) starts.push(args[i]!);
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === '-delete') out.push(['rm', ...(starts.length ? starts : ['.'])].join(' '));
    if (a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir') {
      const cmd: string[] = [];
      for (i++; i < args.length && args[i] !== ';' && args[i] !== '+'; i++) {
        if (args[i] === null && cmd.length === 0) return false;
        cmd.push(args[i] ?? '$?');
      }
      if (cmd.length === 0) return false;
      out.push([commandName(cmd[0]), ...cmd.slice(1)].join(' '));
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
      if (node.namedChildren.some((c) => c?.type !== 'string_content')) return null;
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
      return node.children.length === node.namedChildren.length ? text : null;
    }
    default:
      return null;
  }
}
