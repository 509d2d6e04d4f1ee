import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, toolOnce, type TestService } from './support/harness';

let svc: TestService;
let ws: string;
let outside: string;
beforeAll(async () => {
  svc = await startService();
  ws = path.join(svc.config.workspacesDir, 'T-conf');
  outside = path.join(svc.dir, 'outside');
  mkdirSync(ws, { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET');
  writeFileSync(path.join(ws, 'inside.txt'), 'hello\nworld\n');
  symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'link-to-secret'));
  symlinkSync(outside, path.join(ws, 'link-to-outside-dir'));
  symlinkSync(path.join(outside, 'not-yet.txt'), path.join(ws, 'dangling'));
  // A sibling workspace sharing the prefix: /ws/T-conf vs /ws/T-conf2
  mkdirSync(path.join(svc.config.workspacesDir, 'T-conf2'), { recursive: true });
  writeFileSync(path.join(svc.config.workspacesDir, 'T-conf2', 'theirs.txt'), 'OTHER PARENT');
});
afterAll(() => svc.close());

/** Runs one tool call in the T-conf workspace and returns what the model read back. */
const runTool = (name: string, args: Record<string, unknown>) => toolOnce(svc, name, args, { parentTaskId: 'T-conf', userId: 'u-1' });

describe('workspace confinement of the file tools', () => {
  const readAttacks: Array<[string, string]> = [
    ['parent traversal', '../outside/secret.txt'],
    ['deep traversal', 'a/b/../../../../outside/secret.txt'],
    ['absolute path outside', '/etc/passwd'],
    ['sibling with the same prefix', '../T-conf2/theirs.txt'],
    ['symlink to an outside file', 'link-to-secret'],
    ['through a symlinked folder', 'link-to-outside-dir/secret.txt'],
    ['home shorthand', '~/.bashrc'],
    ['windows separators', '..\\outside\\secret.txt'],
  ];
  it.each(readAttacks)('read_file refuses %s', async (name, p) => {
    const seen = await runTool('read_file', { path: p });
    expect(seen).not.toContain('TOP SECRET');
    expect(seen).not.toContain('OTHER PARENT');
    expect(seen).not.toContain('root:');
    expect(seen).toMatch(/outside the workspace|backslash|starts with "~"/);
  });

  it('read_file reads inside, with line numbers, also by absolute path inside', async () => {
    const seen = await runTool('read_file', { path: path.join(ws, 'inside.txt') });
    expect(seen).toContain('     1\thello');
    expect(seen).toContain('     2\tworld');
  });

  const writeAttacks: Array<[string, string]> = [
    ['parent traversal', '../outside/pwned.txt'],
    ['absolute path outside', '/tmp/subagentd-pwned.txt'],
    ['through a symlinked folder', 'link-to-outside-dir/pwned.txt'],
    ['through a dangling symlink', 'dangling'],
    ['over a symlink to an outside file', 'link-to-secret'],
  ];
  it.each(writeAttacks)('write_file refuses %s and writes nothing outside', async (name, p) => {
    const seen = await runTool('write_file', { path: p, content: 'PWNED' });
    expect(seen).toMatch(/outside the workspace|symbolic link/);
    expect(existsSync(path.join(outside, 'pwned.txt'))).toBe(false);
    expect(existsSync('/tmp/subagentd-pwned.txt')).toBe(false);
    expect(existsSync(path.join(outside, 'not-yet.txt'))).toBe(false);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
  });

  it('edit_file refuses a link to outside; list_files refuses a folder outside', async () => {
    const edit = await runTool('edit_file', { path: 'link-to-secret', oldString: 'TOP', newString: 'NOT' });
    expect(edit).toContain('outside the workspace');
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
    const list = await runTool('list_files', { path: 'link-to-outside-dir' });
    expect(list).toContain('outside the workspace');
    expect(list).not.toContain('secret.txt');
  });

  it('grep and glob never follow links out of the workspace', async () => {
    const grep = await runTool('grep', { pattern: 'SECRET|hello' });
    expect(grep).toContain('inside.txt:1: hello');
    expect(grep).not.toContain('TOP SECRET');
    const glob = await runTool('glob', { pattern: '**/*' });
    expect(glob).toContain('inside.txt');
    expect(glob).not.toContain('secret.txt');
    const globUp = await runTool('glob', { pattern: '../**' });
    expect(globUp).toContain('may not contain ".."');
  });

  it('complete skips paths outside the workspace, through links, and missing ones', async () => {
    svc.model.script('COMPLETE-ATTACK', [
      {
        toolCalls: [
          {
            name: 'complete',
            args: {
              summary: 'handing over',
              paths: ['inside.txt', '../outside/secret.txt', '/etc/passwd', 'link-to-secret', 'link-to-outside-dir/secret.txt', 'ghost.md'],
            },
          },
        ],
      },
    ]);
    const out = (
      await svc.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ prompt: 'COMPLETE-ATTACK', context: { parentTaskId: 'T-conf', userId: 'u-1' } }),
      })
    ).json();
    expect(out.artifacts.map((a: { path: string }) => a.path)).toEqual([path.join(ws, 'inside.txt')]);
    expect(out.skipped).toEqual([
      { path: '../outside/secret.txt', relativePath: null, reason: 'outside_workspace' },
      { path: '/etc/passwd', relativePath: null, reason: 'outside_workspace' },
      // Inside by name, outside once the link is followed.
      { path: 'link-to-secret', relativePath: 'link-to-secret', reason: 'outside_workspace' },
      { path: 'link-to-outside-dir/secret.txt', relativePath: 'link-to-outside-dir/secret.txt', reason: 'outside_workspace' },
      { path: 'ghost.md', relativePath: 'ghost.md', reason: 'not_found' },
    ]);
  });
});

describe('GET /workspaces/:parentTaskId/files/*', () => {
  it('downloads a workspace file', async () => {
    const res = await svc.inject({ url: '/workspaces/T-conf/files/inside.txt' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('hello\nworld\n');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('never serves anything outside the workspace', async () => {
    const attempts = [
      '/workspaces/T-conf/files/..%2F..%2Foutside%2Fsecret.txt',
      '/workspaces/T-conf/files/%2E%2E/%2E%2E/outside/secret.txt',
      '/workspaces/T-conf/files/link-to-secret',
      '/workspaces/T-conf/files/link-to-outside-dir/secret.txt',
      '/workspaces/T-conf/files/%2Fetc%2Fpasswd',
      '/workspaces/..%2Foutside/files/secret.txt',
    ];
    for (const url of attempts) {
      const res = await svc.inject({ url });
      expect([400, 404], url).toContain(res.statusCode);
      expect(res.body, url).not.toContain('TOP SECRET');
      expect(res.body, url).not.toContain('root:');
      expect(res.json().error.code, url).toEqual(expect.any(String));
    }
  });

  it('answers 404 for a missing file or workspace, 400 for a folder', async () => {
    expect((await svc.inject({ url: '/workspaces/T-conf/files/nope.txt' })).statusCode).toBe(404);
    expect((await svc.inject({ url: '/workspaces/T-nobody/files/a.txt' })).statusCode).toBe(404);
    const dir = await svc.inject({ url: '/workspaces/T-conf/files/link-to-outside-dir' });
    expect(dir.statusCode).toBe(400);
    mkdirSync(path.join(ws, 'sub'), { recursive: true });
    const folder = await svc.inject({ url: '/workspaces/T-conf/files/sub' });
    expect(folder.statusCode).toBe(400);
    expect(folder.json().error.code).toBe('not_a_file');
  });
});
