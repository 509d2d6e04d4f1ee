import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';

/** A definition's memory: a folder per (tenant, user | parent | definition, type), seen at .memory/. */
const A = 'memory-key-tenant-a-0123456789';
const A_READ = 'memory-key-tenant-a-read-012345';
const A_SUBMIT = 'memory-key-tenant-a-submit-0123';
const B = 'memory-key-tenant-b-0123456789';
const MAX = 3 * 1024 * 1024;
let svc: TestService;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-memory-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'keeper.md'), '---\nname: keeper\ndescription: Remembers per user\nmemory: user\n---\nKeep notes.\n');
  writeFileSync(path.join(dir, 'agents', 'team.md'), '---\nname: team\ndescription: Remembers per parent\nmemory: parent\n---\n');
  writeFileSync(path.join(dir, 'host-secret.txt'), 'HOST-SECRET');
  svc = await startService({
    dir,
    env: { API_KEYS: `${A}:ta,${A_READ}:ta:read,${A_SUBMIT}:ta:submit,${B}:tb`, MEMORY_MAX_BYTES: String(MAX) },
  });
});
afterAll(async () => {
  await svc?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (key: string, method: string, route: string, body?: string | Buffer, type = 'application/octet-stream') =>
  fetch(`${svc.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': type }) },
    ...(body !== undefined && { body }),
  });
const run = async (key: string, body: Record<string, unknown>) => {
  const res = await http(key, 'POST', '/tasks', JSON.stringify(taskBody(body)), 'application/json');
  expect(res.status, await res.clone().text()).toBe(202);
  return taskEnd(svc, ((await res.json()) as { id: string }).id, { key });
};
const requestsOf = (marker: string) =>
  svc.model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
const systemOf = (marker: string) => String(requestsOf(marker)[0].body.messages.find((m) => m.role === 'system')?.content);
const resultsSeen = (marker: string) =>
  requestsOf(marker)
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
/** Every file below a folder, relative to it. */
const filesIn = (folder: string): string[] =>
  existsSync(folder) ? readdirSync(folder, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(path.join(folder, f)).isFile()) : [];
const memoryDir = (tenant: string, scope: string, key: string, type: string) => path.join(svc.config.workspacesDir, `@${tenant}`, '#memory', scope, key, type);
const write = (marker: string, files: Record<string, string>) =>
  svc.model.script(marker, [
    { toolCalls: Object.entries(files).map(([p, content]) => ({ name: 'write_file', args: { path: p, content } })) },
    { toolCalls: [{ name: 'complete', args: { summary: 'noted', paths: [] } }] },
  ]);

describe('memory', () => {
  it('reaches the next task of the same user only, is not in the shared workspace, and is read over HTTP', async () => {
    write('MEM-1', { '.memory/MEMORY.md': '# Notes\n- MEM-MARKER-ALICE: the build needs make\n', '.memory/topics/build.md': 'BUILD-DETAIL' });
    const first = await run(A, { subagent_type: 'keeper', prompt: 'MEM-1', context: { parentTaskId: 'P-mem-1', userId: 'alice' } });
    expect(first).toMatchObject({ status: 'completed' });
    expect(systemOf('MEM-1')).toContain('(empty: .memory/MEMORY.md does not exist yet)');
    // Not in the shared workspace (nothing written there at all), but in alice's folder of keeper.
    expect(filesIn(path.join(svc.config.workspacesDir, '@ta', 'P-mem-1'))).toEqual([]);
    expect(filesIn(memoryDir('ta', 'user', 'alice', 'keeper')).sort()).toEqual(['MEMORY.md', 'topics/build.md']);
    const started = (await storedEvents(svc, first.id, { key: A })).find((e) => e.type === 'task.started')!;
    expect(started.data).toMatchObject({ memory: { scope: 'user', key: 'alice', type: 'keeper', url: '/memory/user/alice/keeper/files/' } });

    // Alice's next task (another parent) has it in its system prompt and reads its files.
    svc.model.script('MEM-2', [
      { toolCalls: [{ name: 'read_file', args: { path: '.memory/topics/build.md' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'read', paths: [] } }] },
    ]);
    await run(A, { subagent_type: 'keeper', prompt: 'MEM-2', context: { parentTaskId: 'P-mem-2', userId: 'alice' } });
    expect(systemOf('MEM-2')).toContain('<memory folder=".memory/" scope="user">');
    expect(systemOf('MEM-2')).toContain('- MEM-MARKER-ALICE: the build needs make');
    expect(resultsSeen('MEM-2')[0]).toContain('BUILD-DETAIL');
    // Bob's does not, nor alice's task of a definition without memory, nor alice's of another tenant.
    svc.model.script('MEM-BOB', [{ text: 'ok' }]);
    await run(A, { subagent_type: 'keeper', prompt: 'MEM-BOB', context: { parentTaskId: 'P-mem-1', userId: 'bob' } });
    expect(systemOf('MEM-BOB')).toContain('<memory folder=".memory/" scope="user">');
    expect(systemOf('MEM-BOB')).not.toContain('MEM-MARKER-ALICE');
    svc.model.script('MEM-GENERAL', [{ text: 'ok' }]);
    await run(A, { prompt: 'MEM-GENERAL', context: { parentTaskId: 'P-mem-1', userId: 'alice' } });
    expect(systemOf('MEM-GENERAL')).not.toContain('<memory');
    svc.model.script('MEM-OTHER-TENANT', [
      { toolCalls: [{ name: 'read_file', args: { path: '.memory/MEMORY.md' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'read', paths: [] } }] },
    ]);
    await run(B, { subagent_type: 'keeper', prompt: 'MEM-OTHER-TENANT', context: { parentTaskId: 'P-mem-1', userId: 'alice' } });
    expect(systemOf('MEM-OTHER-TENANT')).not.toContain('MEM-MARKER-ALICE');
    expect(resultsSeen('MEM-OTHER-TENANT')[0]).toContain('does not exist');

    // Over HTTP: the listing, a file, and nothing of tenant b's (404), even by the same route.
    const listing = await http(A_READ, 'GET', '/memory/user/alice/keeper/files/');
    expect(listing.status).toBe(200);
    expect(await listing.json()).toMatchObject({
      files: expect.arrayContaining([expect.objectContaining({ path: 'MEMORY.md', url: '/memory/user/alice/keeper/files/MEMORY.md' })]),
      bytes: expect.any(Number),
    });
    const file = await http(A_READ, 'GET', '/memory/user/alice/keeper/files/topics/build.md');
    expect(await file.text()).toBe('BUILD-DETAIL');
    expect((await http(B, 'GET', '/memory/user/alice/keeper/files/topics/build.md')).status).toBe(404);
    // Tenant b's alice has a keeper memory of her own (her task above made it), empty.
    expect(await (await http(B, 'GET', '/memory/user/alice/keeper/files/')).json()).toEqual({ files: [], truncated: false, bytes: 0 });
  });

  it('keeps a memory per parent task for `memory: parent`', async () => {
    write('MEM-PARENT-1', { '.memory/MEMORY.md': 'PARENT-NOTE-P1' });
    await run(A, { subagent_type: 'team', prompt: 'MEM-PARENT-1', context: { parentTaskId: 'P-team-1', userId: 'alice' } });
    for (const [marker, parent] of [
      ['MEM-PARENT-2', 'P-team-1'],
      ['MEM-PARENT-3', 'P-team-2'],
    ]) {
      svc.model.script(marker, [{ text: 'ok' }]);
      await run(A, { subagent_type: 'team', prompt: marker, context: { parentTaskId: parent, userId: 'carol' } });
    }
    expect(systemOf('MEM-PARENT-2')).toContain('PARENT-NOTE-P1');
    expect(systemOf('MEM-PARENT-3')).not.toContain('PARENT-NOTE-P1');
    expect(readFileSync(path.join(memoryDir('ta', 'parent', 'P-team-1', 'team'), 'MEMORY.md'), 'utf8')).toBe('PARENT-NOTE-P1');
  });

  it('loses no whole file when two tasks write one memory at once', async () => {
    const size = 32 * 1024;
    const one = 'A'.repeat(size);
    const two = 'B'.repeat(size);
    const writes = (content: string, own: string) => [
      { toolCalls: [1, 2].map(() => ({ name: 'write_file', args: { path: '.memory/shared.md', content } })) },
      { toolCalls: [{ name: 'write_file', args: { path: `.memory/${own}.md`, content: own } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'wrote', paths: [] } }] },
    ];
    svc.model.script('MEM-RACE-1', writes(one, 'one'));
    svc.model.script('MEM-RACE-2', writes(two, 'two'));
    const context = { parentTaskId: 'P-race', userId: 'racer' };
    const done = await Promise.all([
      run(A, { subagent_type: 'keeper', prompt: 'MEM-RACE-1', context }),
      run(A, { subagent_type: 'keeper', prompt: 'MEM-RACE-2', context }),
      // And an upload over HTTP at the same time.
      http(A, 'PUT', '/memory/user/racer/keeper/files/shared.md', 'C'.repeat(size)),
    ]);
    expect(done.slice(0, 2).map((t) => t.status)).toEqual(['completed', 'completed']);
    const shared = readFileSync(path.join(memoryDir('ta', 'user', 'racer', 'keeper'), 'shared.md'), 'utf8');
    expect(shared.length).toBe(size);
    expect([one, two, 'C'.repeat(size)]).toContain(shared);
    expect(filesIn(memoryDir('ta', 'user', 'racer', 'keeper')).sort()).toEqual(['one.md', 'shared.md', 'two.md']);
  });

  it('refuses a write past MEMORY_MAX_BYTES (a tool error, a 413) and changes nothing', async () => {
    const put = await http(A_SUBMIT, 'PUT', '/memory/user/full/keeper/files/big.bin', Buffer.alloc(MAX - 1000, 1));
    expect(put.status).toBe(201);
    const tooBig = await http(A, 'PUT', '/memory/user/full/keeper/files/more.bin', Buffer.alloc(2000, 2));
    expect(tooBig.status).toBe(413);
    expect(((await tooBig.json()) as { error: { code: string } }).error.code).toBe('memory_full');
    write('MEM-FULL', { '.memory/notes.md': 'x'.repeat(2000), '.memory/small.md': 'fits' });
    await run(A, { subagent_type: 'keeper', prompt: 'MEM-FULL', context: { parentTaskId: 'P-full', userId: 'full' } });
    const [notes, small] = resultsSeen('MEM-FULL');
    expect(notes).toMatch(/over its limit of 3145728 \(MEMORY_MAX_BYTES\)/);
    expect(small).toBe('wrote 4 bytes to .memory/small.md');
    expect(filesIn(memoryDir('ta', 'user', 'full', 'keeper')).sort()).toEqual(['big.bin', 'small.md']);
  });

  it('lets nothing in a memory folder reach outside it: links, FIFOs, `..` names, other users by URL', async () => {
    const mem = memoryDir('ta', 'user', 'mallory', 'keeper');
    mkdirSync(mem, { recursive: true });
    // What a hostile host-side hand could leave there: the service must still not follow it.
    symlinkSync(path.join(dir, 'host-secret.txt'), path.join(mem, 'MEMORY.md'));
    symlinkSync(path.join(svc.config.workspacesDir, '@ta', '#memory', 'user', 'alice'), path.join(mem, 'alice'));
    spawnSync('mkfifo', [path.join(mem, 'pipe')]);
    svc.model.script('MEM-EVIL', [
      {
        toolCalls: [
          { name: 'read_file', args: { path: '.memory/MEMORY.md' } },
          { name: 'read_file', args: { path: '.memory/alice/keeper/MEMORY.md' } },
          { name: 'read_file', args: { path: '.memory/pipe' } },
          { name: 'write_file', args: { path: '.memory/alice/keeper/MEMORY.md', content: 'OVERWRITTEN' } },
          { name: 'read_file', args: { path: '.memory/../../@ta/#memory/user/alice/keeper/MEMORY.md' } },
          { name: 'write_file', args: { path: `.memory/${'n'.repeat(300)}.md`, content: 'x' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] },
    ]);
    const done = await run(A, { subagent_type: 'keeper', prompt: 'MEM-EVIL', context: { parentTaskId: 'P-evil', userId: 'mallory' } });
    expect(done.status).toBe('completed');
    expect(systemOf('MEM-EVIL')).not.toContain('HOST-SECRET');
    const [link, dirLink, fifo, writeThrough, dotdot, long] = resultsSeen('MEM-EVIL');
    expect(link).toContain('leads outside the workspace through a symbolic link');
    expect(dirLink).toContain('leads outside the workspace through a symbolic link');
    expect(fifo).toContain('is a FIFO, not a regular file');
    expect(writeThrough).toContain('leads outside the workspace through a symbolic link');
    expect(dotdot).toContain('outside the workspace');
    expect(long).toContain('longer than 255 bytes');
    expect(readFileSync(path.join(memoryDir('ta', 'user', 'alice', 'keeper'), 'MEMORY.md'), 'utf8')).toContain('MEM-MARKER-ALICE');

    for (const route of [
      '/memory/user/mallory/keeper/files/MEMORY.md',
      '/memory/user/mallory/keeper/files/alice/keeper/MEMORY.md',
      '/memory/user/mallory/keeper/files/pipe',
      '/memory/user/mallory/keeper/files/..%2F..%2Falice%2Fkeeper%2FMEMORY.md',
      '/memory/user/..%2Falice/keeper/files/MEMORY.md',
      '/memory/definition/alice/keeper/files/MEMORY.md',
    ]) {
      const res = await http(A, 'GET', route);
      expect([400, 404], `${route}: ${res.status}`).toContain(res.status);
      expect(await res.text()).not.toMatch(/HOST-SECRET|MEM-MARKER-ALICE/);
    }
    const overwrite = await http(A, 'PUT', '/memory/user/mallory/keeper/files/alice/keeper/MEMORY.md', 'OVERWRITTEN');
    expect(overwrite.status).toBe(400);
    expect(readFileSync(path.join(memoryDir('ta', 'user', 'alice', 'keeper'), 'MEMORY.md'), 'utf8')).toContain('MEM-MARKER-ALICE');
    expect(readFileSync(path.join(dir, 'host-secret.txt'), 'utf8')).toBe('HOST-SECRET');
  });

  it('keys reach memory by role (read: GET; submit: PUT; admin: DELETE), audited', async () => {
    expect((await http(A_READ, 'PUT', '/memory/user/erin/keeper/files/a.md', 'x')).status).toBe(403);
    expect((await http(A_SUBMIT, 'PUT', '/memory/user/erin/keeper/files/a.md', 'x')).status).toBe(201);
    expect((await http(A_SUBMIT, 'DELETE', '/memory/user/erin/keeper/files/a.md')).status).toBe(403);
    expect((await http(A, 'DELETE', '/memory/user/erin/keeper/files/a.md')).status).toBe(204);
    expect((await http(A, 'GET', '/memory/user/erin/keeper/files/a.md')).status).toBe(404);
    expect((await http(A, 'DELETE', '/memory/user/erin/keeper/files/')).status).toBe(204);
    expect(existsSync(memoryDir('ta', 'user', 'erin', 'keeper'))).toBe(false);
    const audit = (await (await http(A, 'GET', '/audit')).json()) as { entries: Array<{ action: string; target: string }> };
    expect(audit.entries.map((e) => `${e.action} ${e.target}`)).toEqual(
      expect.arrayContaining([
        'memory.file_written /memory/user/erin/keeper/files/a.md',
        'memory.file_deleted /memory/user/erin/keeper/files/a.md',
        'memory.file_deleted /memory/user/erin/keeper/files/',
      ]),
    );
  });

  it("is gone after the user's erasure, and the next task of theirs starts with none", async () => {
    write('MEM-ERASE-1', { '.memory/MEMORY.md': 'ERASE-ME-NOTE' });
    await run(A, { subagent_type: 'keeper', prompt: 'MEM-ERASE-1', context: { parentTaskId: 'P-erase', userId: 'dave' } });
    expect((await http(A, 'GET', '/memory/user/dave/keeper/files/MEMORY.md')).status).toBe(200);
    expect((await http(A, 'PUT', '/memory/user/dave/keeper/files/extra.md', 'EXTRA')).status).toBe(201);
    const erased = await http(A, 'DELETE', '/users/dave');
    expect(erased.status).toBe(200);
    expect(await erased.json()).toMatchObject({ tasks: 1, memories: 1 });
    expect((await http(A, 'GET', '/memory/user/dave/keeper/files/MEMORY.md')).status).toBe(404);
    expect(existsSync(path.join(svc.config.workspacesDir, '@ta', '#memory', 'user', 'dave'))).toBe(false);
    svc.model.script('MEM-ERASE-2', [{ text: 'ok' }]);
    await run(A, { subagent_type: 'keeper', prompt: 'MEM-ERASE-2', context: { parentTaskId: 'P-erase', userId: 'dave' } });
    expect(systemOf('MEM-ERASE-2')).not.toContain('ERASE-ME-NOTE');
    // The audit log names the user by their erased id only.
    const audit = (await (await http(A, 'GET', '/audit')).json()) as { entries: Array<{ target: string }> };
    expect(audit.entries.some((e) => e.target.includes('/dave'))).toBe(false);
    expect(audit.entries.some((e) => /^\/memory\/user\/erased:[0-9a-f]{16}\/keeper\/files\/extra\.md$/.test(e.target))).toBe(true);
  });
});
