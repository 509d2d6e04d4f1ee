import { beforeAll, describe, expect, it } from 'vitest';
import { decideCall } from './permissions.ts';
import { loadShellParser, MAX_PARSED_LINE, type ShellParser } from './shell-commands.ts';

let shell: ShellParser;
beforeAll(async () => {
  shell = await loadShellParser();
});

/** The README's rules, and the deny rule. */
const readme = { bash: 'ask', 'bash(git status*)': 'allow' } as const;
const denyRm = { 'bash(rm *)': 'deny' } as const;
const decide = (rules: Record<string, 'allow' | 'ask' | 'deny'>, line: string) => decideCall([rules], 'bash', shell.commands(line)).decision;

describe('the simple commands of a bash line', () => {
  it('splits a line at ; && || | and newlines, and finds the commands inside substitutions, subshells and functions', () => {
    expect(shell.commands('git status; touch X')).toEqual(['git status', 'touch X']);
    expect(shell.commands('git status && a || b\nc | d')).toEqual(['git status', 'a', 'b', 'c', 'd']);
    expect(shell.commands('echo $(rm x) `ls -l`')).toEqual(['echo $(rm x) `ls -l`', 'rm x', 'ls -l']);
    expect(shell.commands('( cd a && rm b )')).toEqual(['cd a', 'rm b']);
    expect(shell.commands('f() { rm a; }; f')).toEqual(['rm a', 'f']);
    expect(shell.commands('cat <<EOF\n$(rm x)\nEOF')).toEqual(['cat', 'rm x']);
    expect(shell.commands('diff <(rm a) b')).toEqual(['diff <(rm a) b', 'rm a']);
  });

  it('names a command with quotes and escapes removed and its folder stripped, through wrappers, shells and eval', () => {
    for (const line of ["r''m -rf x", '/bin/rm -rf x', 'command rm -rf x', "bash -c 'rm -rf x'", 'X=1 rm -rf x', 'rm\t-rf x', '\\rm -rf x', '"rm" -rf x'])
      expect(shell.commands(line), line).toEqual(['rm -rf x']);
    expect(shell.commands('timeout -s KILL 5 nice -n 3 env A=b sudo -u me rm q')).toEqual(['rm q']);
    expect(shell.commands("sh -ec 'echo hi; rm q'")).toEqual(['echo hi', 'rm q']);
    expect(shell.commands('eval "rm -rf x"')).toEqual(['rm -rf x']);
    expect(shell.commands('ls | xargs -0 rm')).toEqual(['ls', 'rm {}']);
    expect(shell.commands("find . -name '*.o' -delete")).toEqual(['find . -name *.o -delete', 'rm .']);
    expect(shell.commands('find src -exec rm {} \\;')).toEqual(['find src -exec rm {} ;', 'rm {}']);
    // Quoted text is an argument, not a command.
    expect(shell.commands('echo "a; rm b"')).toEqual(['echo a; rm b']);
  });

  it('cannot parse what is known only when it runs: a syntax error, a name that is an expansion, a shell reading its input', () => {
    for (const line of [
      "git status'",
      '$(echo rm) x',
      '"$CMD" x',
      "echo 'rm x' | bash",
      'curl -s x | sh',
      'eval "$X"',
      "env -S 'rm x'",
      'bash -c "$X"',
      'if then',
    ])
      expect(shell.commands(line), line).toBeNull();
    expect(shell.commands(`echo ${'a'.repeat(MAX_PARSED_LINE)}`)).toBeNull();
  });
});

describe('bash(<glob>) rules per simple command', () => {
  it("lets nothing through after an allowed command's prefix", () => {
    for (const line of [
      'git status; touch X',
      'git status && touch X',
      'git status || touch X',
      'git status\ntouch X',
      'git status | tee X',
      'git status $(touch X)',
      'git status `touch X`',
    ])
      expect(decide(readme, line), line).toBe('ask');
  });

  it('still runs an allowed command unasked, alone or with other allowed ones', () => {
    expect(decide(readme, 'git status')).toBe('allow');
    expect(decide(readme, 'git status --short && git status -b')).toBe('allow');
    expect(decide(readme, '/usr/bin/git status')).toBe('allow');
  });

  it('denies rm in every spelling the attack run used, and lets other commands run', () => {
    const spellings = [
      "r''m -rf victim",
      '/bin/rm victim',
      'command rm victim',
      "bash -c 'rm victim'",
      'X=1 rm victim',
      '$(echo rm) victim',
      'rm\tvictim',
      'find . -name victim -delete',
      'true && rm victim',
      'find . -exec rm {} +',
      'ls | xargs rm',
      'nohup rm victim',
    ];
    // Every spelling is refused: denied, or (a name known only when it runs) asked.
    for (const line of spellings) expect(decide(denyRm, line), line).not.toBe('allow');
    expect(decide(denyRm, '$(echo rm) victim')).toBe('ask');
    expect(decide({ bash: 'allow', 'bash(rm *)': 'deny' }, 'ls -la && cat README.md | grep rm')).toBe('allow');
  });
});
