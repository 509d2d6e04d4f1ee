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
const decide = async (rules: Record<string, 'allow' | 'ask' | 'deny'>, line: string) => decideCall([rules], 'bash', await shell.commands(line)).decision;

describe('the simple commands of a bash line', async () => {
  it('splits a line at ; && || | and newlines, and finds the commands inside substitutions, subshells and functions', async () => {
    expect(await shell.commands('git status; touch X')).toEqual(['git status', 'touch X']);
    expect(await shell.commands('git status && a || b\nc | d')).toEqual(['git status', 'a', 'b', 'c', 'd']);
    expect(await shell.commands('echo $(rm x) `ls -l`')).toEqual(['echo $(rm x) `ls -l`', 'rm x', 'ls -l']);
    expect(await shell.commands('( cd a && rm b )')).toEqual(['cd a', 'rm b']);
    expect(await shell.commands('f() { rm a; }; f')).toEqual(['rm a', 'f']);
    expect(await shell.commands('cat <<EOF\n$(rm x)\nEOF')).toEqual(['cat', 'rm x']);
    expect(await shell.commands('diff <(rm a) b')).toEqual(['diff <(rm a) b', 'rm a']);
  });

  it('names a command with quotes and escapes removed and its folder stripped, through wrappers, shells and eval', async () => {
    for (const line of ["r''m -rf x", '/bin/rm -rf x', 'command rm -rf x', "bash -c 'rm -rf x'", 'rm\t-rf x', '\\rm -rf x', '"rm" -rf x', 'r\\\nm -rf x'])
      expect(await shell.commands(line), line).toEqual(['rm -rf x']);
    expect(await shell.commands('timeout -s KILL 5 nice -n 3 env LANG=C sudo -u me rm q')).toEqual(['rm q']);
    // A variable set for a command can change what it does: it is a command of its own for the rules.
    expect(await shell.commands('X=1 rm -rf x')).toEqual(['rm -rf x', 'X=1']);
    expect(await shell.commands('GIT_CONFIG_COUNT=1 git status; LANG=C ls')).toEqual(['git status', 'GIT_CONFIG_COUNT=1', 'ls']);
    // So is a file an output redirection writes.
    expect(await shell.commands('git status > .git/config; ls 2>/dev/null')).toEqual(['git status', '> .git/config', 'ls']);
    expect(await shell.commands("sh -ec 'echo hi; rm q'")).toEqual(['echo hi', 'rm q']);
    expect(await shell.commands('eval "rm -rf x"')).toEqual(['rm -rf x']);
    expect(await shell.commands('ls | xargs -0 rm')).toEqual(['ls', 'rm {}']);
    expect(await shell.commands("find . -name '*.o' -delete")).toEqual(['find . -name *.o -delete', 'rm .']);
    expect(await shell.commands('find src -exec rm {} \\;')).toEqual(['find src -exec rm {} ;', 'rm {}']);
    // Quoted text is an argument, not a command.
    expect(await shell.commands('echo "a; rm b"')).toEqual(['echo a; rm b']);
  });

  it('cannot parse what is known only when it runs: a syntax error, a name that is an expansion, a shell reading its input', async () => {
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
      expect(await shell.commands(line), line).toBeNull();
    expect(await shell.commands(`echo ${'a'.repeat(MAX_PARSED_LINE)}`)).toBeNull();
  });
});

describe('bash(<glob>) rules per simple command', async () => {
  it("lets nothing through after an allowed command's prefix", async () => {
    for (const line of [
      'git status; touch X',
      'git status && touch X',
      'git status || touch X',
      'git status\ntouch X',
      'git status | tee X',
      'git status $(touch X)',
      'git status `touch X`',
    ])
      expect(await decide(readme, line), line).toBe('ask');
  });

  it('still runs an allowed command unasked, alone or with other allowed ones', async () => {
    expect(await decide(readme, 'git status')).toBe('allow');
    expect(await decide(readme, 'git status --short && git status -b')).toBe('allow');
    expect(await decide(readme, '/usr/bin/git status')).toBe('allow');
  });

  it('denies rm in every spelling the attack run used, and lets other commands run', async () => {
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
    for (const line of spellings) expect(await decide(denyRm, line), line).not.toBe('allow');
    expect(await decide(denyRm, '$(echo rm) victim')).toBe('ask');
    expect(await decide({ bash: 'allow', 'bash(rm *)': 'deny' }, 'ls -la && cat README.md | grep rm')).toBe('allow');
  });

  it('holds against the second attack run: heredoc delimiters, code in quotes meeting arithmetic, variables, redirections', async () => {
    const allowlist = [
      'git status <<E"O"F\nEOF\ntouch P\nE"O"F',
      "git status <<E'O'F\nEOF\ntouch P\nE'O'F",
      "declare -i n='a[$(touch P)]'; git status",
      "x='a[$(touch P)]'; git status $((x))",
      "[[ 'a[$(touch P)]' -eq 0 ]]; git status",
      "x='$(touch P)'; git status ${x@P}",
      "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.status-x GIT_CONFIG_VALUE_0='!touch P' git status-x",
      'export GIT_CONFIG_COUNT=1; git status',
      'git status > .git/config',
    ];
    for (const line of allowlist) expect(await decide(readme, line), line).not.toBe('allow');
    const denylist = [
      '/usr/bin/[r]m x',
      '/bin/r? x',
      'coproc rm x; wait',
      "trap 'rm x' EXIT",
      'hash -p /bin/rm foo; foo x',
      ". /dev/stdin <<< 'rm x'",
      "bash /dev/stdin <<< 'rm x'",
      "source <(echo 'rm x')",
      "bash --rcfile /dev/null -c 'rm x'",
      "rbash -c 'rm x'",
      "find . -name x -exec sh -c 'rm x' \\;",
      'find . -exec env rm {} \\;',
      'echo x | xargs -i rm {}',
      "flock /tmp/l -c 'rm x'",
      'flock /tmp/l rm x',
      'taskset 1 rm x',
      "script -qc 'rm x' /dev/null",
      "printf -v 'a[$(rm x)]' 1",
      'shopt -s expand_aliases\nalias r=rm\nr x',
    ];
    for (const line of denylist) expect(await decide(denyRm, line), line).not.toBe('allow');
    // Quoted heredocs and plain ones still parse; a quoted $( ) without arithmetic is only text.
    expect(await shell.commands("cat <<'EOF' > notes.md\n$(not run)\nEOF")).toEqual(['cat', '> notes.md']);
    expect(await shell.commands("echo '$(not run)'")).toEqual(['echo $(not run)']);
  });

  it('holds against the third attack run: callbacks, name references and prompt strings that run code', async () => {
    const denylist = [
      'compgen -C "rm -f keep1.txt" x',
      'compgen -F f x',
      'complete -C "rm x" ls',
      'mapfile -t -C "rm -f" -c 1 < list',
      'readarray -tC "rm -f" -c 1 < list',
      'mapfile -t "$n" < list',
      "declare -n r='a[$(rm -f keep4.txt)]'; r=1",
      "local -n r='a[$(rm x)]'; r=1",
      "PS4='$(rm -f keep5.txt)'; set -x; true",
      "export PS4='$(rm x)'; bash -xc true",
      "PS4='$(rm x)' bash -xc true",
      "printf -v PS4 '\\x24(rm x)'; set -x; true",
      'read PS4 < f; set -x; true',
      'declare -n r=PS4; r=x; set -x; true',
      'printf -v "$n" x; set -x; true',
      'declare "$n=x"; set -x; true',
      "env SHELLOPTS=xtrace PS4='$(rm x)' bash -c true",
      "PROMPT_COMMAND='rm x' bash -i",
      'bind -x \'"\\C-x":rm x\'',
    ];
    for (const line of denylist) expect(await decide(denyRm, line), line).not.toBe('allow');
    // The everyday spellings of the same builtins still parse.
    const allowed = { 'bash(*)': 'allow', 'bash(rm *)': 'deny' } as const;
    for (const line of [
      'compgen -c git',
      'mapfile -t lines < notes.txt',
      'readarray -t lines < notes.txt',
      'declare -n ref=items; echo "${ref[0]}"',
      'set -euo pipefail; set -x; git status',
      'printf -v out %s done; echo "$out"',
      'read -r line < notes.txt',
      'export PATH="$PATH:/opt/bin"; make',
    ])
      expect(await decide(allowed, line), line).toBe('allow');
  });

  it('parses on its own thread: the event loop runs while a hostile line parses; gives up on it, then parses the next', async () => {
    // A 64 KiB pipeline takes tree-sitter about half a second: parsed on the event loop, the timer
    // below could not run before the answer.
    let ticked = false;
    setTimeout(() => (ticked = true), 0);
    const slow = shell.commands('a|'.repeat(32_000) + 'a');
    expect(await slow).toBeNull();
    expect(ticked).toBe(true);
    expect(await shell.commands('((a'.repeat(21_000))).toBeNull();
    expect(await shell.commands('echo ' + '${x:-'.repeat(8000) + 'y' + '}'.repeat(8000))).toBeNull();
    expect(await shell.commands('git status && npm test 2>&1 | tail -n 20')).toEqual(['git status', 'npm test', 'tail -n 20']);
    // Three threads ended and three loaded: on a loaded machine each load takes seconds.
  }, 60_000);

  it("takes tenants' lines in turn: one tenant's hostile lines hold another's back by one at most", async () => {
    const [flooder, other] = await Promise.all([loadShellParser('tenant-a'), loadShellParser('tenant-b')]);
    const order: string[] = [];
    const hostile = Array.from({ length: 4 }, (_, i) => flooder.commands('a|'.repeat(32_000) + 'a').then((r) => (order.push(`a${i}`), r)));
    const benign = other.commands('git status && npm test').then((r) => (order.push('b'), r));
    expect(await benign).toEqual(['git status', 'npm test']);
    expect(await Promise.all(hostile)).toEqual([null, null, null, null]);
    // Served in turn: b's line waits for at most the line being parsed and the one taken after it.
    expect(order.indexOf('b')).toBeLessThanOrEqual(2);
    expect(order).toHaveLength(5);
  }, 60_000);

  it('drops the lines of a task that ended while they waited, unparsed; the next task of the tenant is served', async () => {
    const ended = new AbortController();
    const [task, next] = await Promise.all([loadShellParser('tenant-c', ended.signal), loadShellParser('tenant-c')]);
    // Its hostile line is being parsed when the task ends; the line behind it was waiting.
    const hostile = task.commands('a|'.repeat(32_000) + 'a');
    const waiting = task.commands('git status');
    ended.abort();
    expect(await waiting).toBeNull();
    expect(await hostile).toBeNull();
    expect(await next.commands('git status')).toEqual(['git status']);
  }, 60_000);
});
