import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, toolOnce, type TestService } from './support/harness';

/**
 * The path guard's attack corpus: every case goes through the real service as a model tool call.
 * Each must be refused with an error the model can read, nothing outside may be read or written,
 * and the service must stay up.
 */
let svc: TestService;
let ws: string;
let outside: string;
const SECRET = 'TOP-SECRET-OUTSIDE';

beforeAll(async () => {
  svc = await startService();
  ws = path.join(svc.config.workspacesDir, 'T-atk');
  outside = path.join(svc.dir, 'outside');
  mkdirSync(path.join(ws, 'sub'), { recursive: true });
  mkdirSync(path.join(outside, 'dir'), { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  writeFileSync(path.join(outside, 'dir', 'secret.txt'), SECRET);
  writeFileSync(path.join(ws, 'ok.txt'), 'fine');
  // A sibling workspace whose name extends ours: /ws/T-atk vs /ws/T-atk2.
  mkdirSync(path.join(svc.config.workspacesDir, 'T-atk2'), { recursive: true });
  writeFileSync(path.join(svc.config.workspacesDir, 'T-atk2', 'theirs.txt'), SECRET);
  symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'ln-file'));
  symlinkSync(path.join(outside, 'dir'), path.join(ws, 'ln-dir'));
  symlinkSync('../../../outside/secret.txt', path.join(ws, 'ln-relative'));
  symlinkSync(path.join(ws, 'ln-chain-2'), path.join(ws, 'ln-chain-1'));
  symlinkSync(path.join(ws, 'ln-file'), path.join(ws, 'ln-chain-2'));
  symlinkSync(path.join(outside, 'created-by-attack.txt'), path.join(ws, 'ln-dangling'));
  symlinkSync(path.join(outside, 'missing-dir'), path.join(ws, 'ln-dangling-dir'));
  symlinkSync('/', path.join(ws, 'ln-root'));
  symlinkSync(path.join(svc.config.workspacesDir, 'T-atk2'), path.join(ws, 'ln-sibling'));
});
afterAll(() => svc.close());

const callTool = (name: string, args: Record<string, unknown>) => toolOnce(svc, name, args, { parentTaskId: 'T-atk', userId: 'u-atk' });

const refused = /outside the workspace|symbolic link|NUL byte|longer than|backslash|starts with "~"|may not contain "\.\."|does not exist/;
const longPath = `${'a/'.repeat(2100)}x.txt`;

type Args = Record<string, unknown> | (() => Record<string, unknown>);
const cases: Array<[string, string, Args]> = [
  ['.. at the start', 'read_file', { path: '../../outside/secret.txt' }],
  ['.. in the middle', 'read_file', { path: 'sub/../../../outside/secret.txt' }],
  ['.. after a missing folder', 'read_file', { path: 'nope/../../../outside/secret.txt' }],
  ['./.. prefix', 'read_file', { path: './../../outside/secret.txt' }],
  ['bare ..', 'list_files', { path: '..' }],
  ['.. at the end', 'list_files', { path: 'sub/../..' }],
  ['absolute path outside', 'read_file', { path: '/etc/passwd' }],
  ['absolute path that normalises outside', 'read_file', { path: '/tmp/../etc/passwd' }],
  ['sibling workspace sharing the prefix, relative', 'read_file', { path: '../T-atk2/theirs.txt' }],
  ['sibling workspace sharing the prefix, absolute', 'read_file', () => ({ path: `${ws}2/theirs.txt` })],
  ['absolute path into a folder outside', 'read_file', () => ({ path: path.join(outside, 'secret.txt') })],
  ['link to a file outside', 'read_file', { path: 'ln-file' }],
  ['relative link to a file outside', 'read_file', { path: 'ln-relative' }],
  ['link to a folder outside', 'read_file', { path: 'ln-dir/secret.txt' }],
  ['chain of links ending outside', 'read_file', { path: 'ln-chain-1' }],
  ['link to /', 'read_file', { path: 'ln-root/etc/passwd' }],
  ['link to the sibling workspace', 'read_file', { path: 'ln-sibling/theirs.txt' }],
  ['write through a link to a file outside', 'write_file', { path: 'ln-file', content: 'PWNED' }],
  ['write a new file through a link to a folder outside', 'write_file', { path: 'ln-dir/new.txt', content: 'PWNED' }],
  ['write through a dangling link (would create outside)', 'write_file', { path: 'ln-dangling', content: 'PWNED' }],
  ['write below a dangling folder link', 'write_file', { path: 'ln-dangling-dir/new.txt', content: 'PWNED' }],
  ['write with .. outside', 'write_file', { path: '../../outside/new.txt', content: 'PWNED' }],
  ['write to an absolute path outside', 'write_file', { path: path.join('/tmp', 'subagentd-attack.txt'), content: 'PWNED' }],
  ['edit through a link to outside', 'edit_file', { path: 'ln-file', oldString: 'TOP', newString: 'PWNED' }],
  ['NUL byte', 'read_file', { path: 'ok.txt\u0000../../outside/secret.txt' }],
  ['very long path', 'write_file', { path: longPath, content: 'x' }],
  ['windows separators', 'read_file', { path: '..\\..\\outside\\secret.txt' }],
  ['home shorthand', 'read_file', { path: '~/.ssh/id_rsa' }],
  ['bare ~', 'list_files', { path: '~' }],
  ['grep in a folder outside', 'grep', { pattern: 'SECRET', path: '../../outside' }],
  ['grep through a folder link', 'grep', { pattern: 'SECRET', path: 'ln-dir' }],
  ['glob with ..', 'glob', { pattern: '../../outside/*' }],
  ['glob with an absolute pattern', 'glob', { pattern: '/etc/*' }],
  ['list a folder link', 'list_files', { path: 'ln-dir' }],
  // Brace alternatives are checked after expansion: none may name a place outside.
  ['glob: absolute path inside braces', 'glob', { pattern: '{/etc/*,x}' }],
  ['glob: outside folder inside braces', 'glob', () => ({ pattern: `{x,${outside}/*}` })],
  ['glob: .. inside braces', 'glob', { pattern: '{x,../../outside/*}' }],
  ['glob: .. as a middle alternative', 'glob', { pattern: 'sub/{a,..,b}/../*' }],
  ['glob: double slash absolute', 'glob', { pattern: '//etc/*' }],
  ['grep: glob with an absolute alternative', 'grep', { pattern: 'SECRET', glob: '{/etc/*,x}' }],
  ['grep: glob with .. inside braces', 'grep', { pattern: 'SECRET', glob: '{x,../../outside/**}' }],
  ['grep: an absolute folder outside', 'grep', { pattern: 'root', path: '/etc' }],
  ['grep: through a link to /', 'grep', { pattern: 'root', path: 'ln-root/etc' }],
  ['grep: in the sibling workspace through a link', 'grep', { pattern: 'SECRET', path: 'ln-sibling' }],
  // /proc and the service's own files.
  ['the service environment by absolute path', 'read_file', { path: '/proc/self/environ' }],
  ['the service environment through a link to /', 'read_file', { path: 'ln-root/proc/self/environ' }],
  ['the service cwd through /proc', 'list_files', { path: '/proc/self/cwd' }],
  // Lexical tricks.
  ['.. after a file name', 'read_file', { path: 'ok.txt/../../../outside/secret.txt' }],
  ['doubled slashes with ..', 'read_file', { path: './/..//..//outside/secret.txt' }],
  ['percent-encoded .. (a literal, missing name)', 'read_file', { path: '%2e%2e/%2e%2e/outside/secret.txt' }],
  ['full-width dots (a literal, missing name)', 'read_file', { path: '\uff0e\uff0e/secret.txt' }],
  // Every tool through every kind of link.
  ['edit a file in a linked folder', 'edit_file', { path: 'ln-dir/secret.txt', oldString: 'TOP', newString: 'PWNED' }],
  ['edit with .. outside', 'edit_file', { path: '../../outside/secret.txt', oldString: 'TOP', newString: 'PWNED' }],
  ['edit an absolute path outside', 'edit_file', () => ({ path: path.join(outside, 'secret.txt'), oldString: 'TOP', newString: 'PWNED' })],
  ['write through a chain of links', 'write_file', { path: 'ln-chain-1', content: 'PWNED' }],
  ['write below a link to /', 'write_file', { path: 'ln-root/tmp/subagentd-attack.txt', content: 'PWNED' }],
  ['write deep below a dangling folder link', 'write_file', { path: 'ln-dangling-dir/a/b/new.txt', content: 'PWNED' }],
  ['write into the sibling workspace through a link', 'write_file', { path: 'ln-sibling/theirs.txt', content: 'PWNED' }],
  ['list a link to /', 'list_files', { path: 'ln-root' }],
  ['list the sibling workspace through a link', 'list_files', { path: 'ln-sibling' }],
  ['list an absolute folder outside', 'list_files', { path: '/etc' }],
  ['list a dangling folder link', 'list_files', { path: 'ln-dangling-dir' }],
  // A file system error's message names the host path it failed on: never shown.
  ['a name longer than 255 bytes', 'read_file', { path: `sub/${'n'.repeat(300)}` }],
  ['write a name longer than 255 bytes', 'write_file', { path: `${'n'.repeat(300)}/x.txt`, content: 'x' }],
  ['list below a name longer than 255 bytes', 'list_files', { path: `${'\u00e9'.repeat(200)}` }],
];

describe('path guard attack corpus', () => {
  it(`has at least 60 cases (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });

  it.each(cases)('refuses %s', async (_name, tool, args) => {
    const input = typeof args === 'function' ? args() : args;
    const seen = await callTool(tool, input);
    expect(seen).toMatch(refused);
    // No path of the host the model did not name itself.
    if (!JSON.stringify(input).includes(svc.dir)) expect(seen).not.toContain(svc.dir);
    expect(seen).not.toContain(SECRET);
    expect(seen).not.toContain('root:x:0');
    // Nothing written outside, nothing changed there.
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(readdirSync(outside).sort()).toEqual(['dir', 'secret.txt']);
    expect(readdirSync(path.join(outside, 'dir'))).toEqual(['secret.txt']);
    expect(existsSync('/tmp/subagentd-attack.txt')).toBe(false);
  });

  it('grep and glob over the whole workspace never report what lies behind links', async () => {
    expect(await callTool('grep', { pattern: 'SECRET|fine' })).toBe('ok.txt:1: fine');
    const glob = await callTool('glob', { pattern: '**/*' });
    expect(glob).not.toContain('secret.txt');
    expect(glob).not.toContain('theirs.txt');
  });

  it('still serves legitimate paths, including an absolute one inside and an odd but valid name', async () => {
    expect(await callTool('read_file', { path: path.join(ws, 'ok.txt') })).toContain('fine');
    expect(await callTool('write_file', { path: '%2e%2e/literal.txt', content: 'ok' })).toContain('wrote 2 bytes');
    expect(readFileSync(path.join(ws, '%2e%2e', 'literal.txt'), 'utf8')).toBe('ok');
    expect((await svc.inject({ url: '/healthz' })).statusCode).toBe(200);
  });
});
