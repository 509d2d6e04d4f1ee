import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

/**
 * Workspace files over HTTP: what an orchestrator on another host uses to put inputs in a
 * workspace, look at the tree and clean up, under the same confinement as the tools.
 */
let svc: TestService;
let outside: string;
const SECRET = 'OUTSIDE-SECRET-51c2';
const swappers: ChildProcess[] = [];
const ws = () => path.join(svc.config.workspacesDir, 'T-files');

beforeAll(async () => {
  svc = await startService({ env: { MAX_UPLOAD_BYTES: '4096' } });
  outside = path.join(svc.dir, 'outside');
  mkdirSync(path.join(outside, 'dir'), { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  writeFileSync(path.join(outside, 'dir', 'kept.txt'), SECRET);
});
afterEach(() => {
  for (const p of swappers.splice(0)) p.kill('SIGKILL');
});
afterAll(() => svc.close());

const put = (file: string, body: string | Buffer, headers: Record<string, string> = {}, parent = 'T-files') =>
  svc.inject({ method: 'PUT', url: `/workspaces/${parent}/files/${file}`, payload: body, headers });

/** A PUT whose body is sent in chunks with no Content-Length, as a streaming client sends it. */
function putChunked(file: string, chunks: Buffer[]): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${svc.url}/workspaces/T-files/files/${file}`, { method: 'PUT', agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', (err) => (err.message.includes('EPIPE') || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('PUT /workspaces/:parentTaskId/files/*', () => {
  it('creates the workspace, its folders and the file from the raw body (201), then replaces it (200)', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0]);
    const created = await put('inputs/raw/data.bin', bytes, { 'content-type': 'application/octet-stream' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      path: 'inputs/raw/data.bin',
      size: 8,
      fsType: 'file',
      url: '/workspaces/T-files/files/inputs/raw/data.bin',
    });
    expect(created.headers.location).toBe('/workspaces/T-files/files/inputs/raw/data.bin');
    expect(readFileSync(path.join(ws(), 'inputs/raw/data.bin'))).toEqual(bytes);
    const back = await svc.inject({ url: created.json().url });
    expect(back.rawPayload).toEqual(bytes);

    // Any content type is the file as sent: JSON is not parsed, text is not re-encoded.
    const replaced = await put('inputs/raw/data.bin', '{"not": "parsed"}', { 'content-type': 'application/json' });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().size).toBe(17);
    expect(readFileSync(path.join(ws(), 'inputs/raw/data.bin'), 'utf8')).toBe('{"not": "parsed"}');
    // No temporary file is left beside it.
    expect(readdirSync(path.join(ws(), 'inputs/raw'))).toEqual(['data.bin']);
  });

  it('takes a streamed body of no declared length, and an empty one', async () => {
    const r = await putChunked('streamed.txt', [Buffer.from('one '), Buffer.from('two '), Buffer.from('three')]);
    expect(r.status).toBe(201);
    expect(readFileSync(path.join(ws(), 'streamed.txt'), 'utf8')).toBe('one two three');
    const empty = await put('empty.txt', '');
    expect(empty.statusCode).toBe(201);
    expect(empty.json().size).toBe(0);
  });

  it('refuses a file over MAX_UPLOAD_BYTES with 413 and leaves the old file whole', async () => {
    await put('big.txt', 'old content');
    const declared = await put('big.txt', Buffer.alloc(5000, 'x'));
    expect(declared.statusCode).toBe(413);
    expect(declared.json().error.code).toBe('payload_too_large');
    const streamed = await putChunked('big.txt', [Buffer.alloc(3000, 'y'), Buffer.alloc(3000, 'y')]);
    expect(streamed.status).toBe(413);
    expect(readFileSync(path.join(ws(), 'big.txt'), 'utf8')).toBe('old content');
    expect(readdirSync(ws()).filter((n) => n.includes('.upload-'))).toEqual([]);
  });

  it('never writes outside the workspace: dot-dot, absolute paths, links to outside files and folders', async () => {
    mkdirSync(ws(), { recursive: true });
    symlinkSync(path.join(outside, 'secret.txt'), path.join(ws(), 'link-to-secret'));
    symlinkSync(path.join(outside, 'dir'), path.join(ws(), 'link-to-dir'));
    for (const url of ['..%2F..%2Foutside%2Fsecret.txt', '%2E%2E/%2E%2E/outside/x.txt', 'link-to-secret', 'link-to-dir/new.txt', 'link-to-dir/kept.txt']) {
      const r = await put(url, 'overwritten');
      // A dot-dot the router already resolved leaves the workspace routes: 404, nothing written.
      expect([400, 404], url).toContain(r.statusCode);
      expect(r.json().error.code, url).toMatch(/outside_workspace|not_found/);
    }
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(readdirSync(path.join(outside, 'dir'))).toEqual(['kept.txt']);
    expect(existsSync(path.join(svc.dir, 'outside', 'x.txt'))).toBe(false);
  });

  it('refuses to put a file where a folder is (409), and the workspace folder itself', async () => {
    mkdirSync(path.join(ws(), 'a-folder'), { recursive: true });
    const r = await put('a-folder', 'x');
    expect(r.statusCode).toBe(409);
    expect(r.json().error.code).toBe('is_a_directory');
  });

  it('a folder on the path swapped for a link by a racing command never leads a write outside', async () => {
    const dir = path.join(ws(), 'race');
    mkdirSync(path.join(dir, 'd'), { recursive: true });
    const p = spawn('bash', ['-c', `while true; do mv -T d d.real; ln -sfn ${path.join(outside, 'dir')} d; rm d; mv -T d.real d; done`], {
      cwd: dir,
      stdio: 'ignore',
    });
    swappers.push(p);
    const statuses = new Set<number>();
    for (let i = 0; i < 200; i++) statuses.add((await put('race/d/out.txt', `try ${i}`)).statusCode);
    p.kill('SIGKILL');
    expect(readdirSync(path.join(outside, 'dir'))).toEqual(['kept.txt']);
    for (const s of statuses) expect([200, 201, 400, 404]).toContain(s);
    expect(statuses.has(201) || statuses.has(200)).toBe(true);
  });
});

describe('GET /workspaces/:parentTaskId', () => {
  it('lists every file, folder and link recursively with relative paths, never following a link', async () => {
    await put('list/a.txt', 'aaa', {}, 'T-list');
    await put('list/sub/b.md', 'bb', {}, 'T-list');
    const root = path.join(svc.config.workspacesDir, 'T-list');
    symlinkSync(path.join(outside, 'dir'), path.join(root, 'list', 'escape'));
    const r = await svc.inject({ url: '/workspaces/T-list' });
    expect(r.statusCode).toBe(200);
    const { files, truncated } = r.json();
    expect(truncated).toBe(false);
    expect(files.map((f: any) => [f.path, f.fsType])).toEqual([
      ['list', 'directory'],
      ['list/a.txt', 'file'],
      ['list/escape', 'symlink'],
      ['list/sub', 'directory'],
      ['list/sub/b.md', 'file'],
    ]);
    expect(files[1]).toMatchObject({ size: 3, url: '/workspaces/T-list/files/list/a.txt' });
    expect(JSON.stringify(files)).not.toContain('kept.txt');
  });

  it('stops at 10,000 entries and says it did', async () => {
    const root = path.join(svc.config.workspacesDir, 'T-many', 'd');
    mkdirSync(root, { recursive: true });
    for (let i = 0; i < 10_050; i++) writeFileSync(path.join(root, `f${i}`), '');
    const r = await svc.inject({ url: '/workspaces/T-many' });
    expect(r.json().files).toHaveLength(10_000);
    expect(r.json().truncated).toBe(true);
  });

  it('answers 404 for a workspace that does not exist', async () => {
    const r = await svc.inject({ url: '/workspaces/T-none' });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('not_found');
  });
});

describe('DELETE /workspaces/:parentTaskId/files/*', () => {
  it('removes a file (204), then answers 404', async () => {
    await put('del/one.txt', '1');
    expect((await svc.inject({ method: 'DELETE', url: '/workspaces/T-files/files/del/one.txt' })).statusCode).toBe(204);
    expect(existsSync(path.join(ws(), 'del/one.txt'))).toBe(false);
    const again = await svc.inject({ method: 'DELETE', url: '/workspaces/T-files/files/del/one.txt' });
    expect(again.statusCode).toBe(404);
    expect(again.json().error.code).toBe('not_found');
  });

  it('removes a folder with everything in it, and a link without touching what it points at', async () => {
    await put('tree/a/b/c.txt', 'c');
    await put('tree/a/d.txt', 'd');
    symlinkSync(path.join(outside, 'dir'), path.join(ws(), 'tree', 'a', 'escape'));
    symlinkSync(path.join(outside, 'dir'), path.join(ws(), 'only-link'));
    expect((await svc.inject({ method: 'DELETE', url: '/workspaces/T-files/files/only-link' })).statusCode).toBe(204);
    expect((await svc.inject({ method: 'DELETE', url: '/workspaces/T-files/files/tree' })).statusCode).toBe(204);
    expect(existsSync(path.join(ws(), 'tree'))).toBe(false);
    expect(() => lstatSync(path.join(ws(), 'only-link'))).toThrow();
    expect(readdirSync(path.join(outside, 'dir'))).toEqual(['kept.txt']);
  });

  it('never deletes outside the workspace', async () => {
    mkdirSync(ws(), { recursive: true });
    symlinkSync(path.join(outside, 'dir'), path.join(ws(), 'dir-link'));
    for (const url of ['..%2F..%2Foutside%2Fsecret.txt', 'dir-link/kept.txt']) {
      const r = await svc.inject({ method: 'DELETE', url: `/workspaces/T-files/files/${url}` });
      expect(r.statusCode, url).toBe(400);
      expect(r.json().error.code).toBe('outside_workspace');
    }
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(readdirSync(path.join(outside, 'dir'))).toEqual(['kept.txt']);
  });
});

describe('DELETE under a racing workspace command', () => {
  it('a folder inside the tree swapped for a link to outside never gets what it points at deleted', async () => {
    for (let round = 0; round < 30; round++) {
      const tree = path.join(ws(), `rtree${round}`);
      mkdirSync(path.join(tree, 'd'), { recursive: true });
      for (let i = 0; i < 20; i++) writeFileSync(path.join(tree, 'd', `f${i}`), 'x');
      const p = spawn('bash', ['-c', `while true; do mv -T d d.real; ln -sfn ${path.join(outside, 'dir')} d; mv -T d.real d 2>/dev/null || rm -f d; done`], {
        cwd: tree,
        stdio: 'ignore',
      });
      swappers.push(p);
      await new Promise((r) => setTimeout(r, 5));
      const r = await svc.inject({ method: 'DELETE', url: `/workspaces/T-files/files/rtree${round}` });
      p.kill('SIGKILL');
      expect([204, 400, 404, 409]).toContain(r.statusCode);
      expect(readdirSync(path.join(outside, 'dir'))).toEqual(['kept.txt']);
    }
  });
});

describe('workspace files per tenant', () => {
  it('no answer names a path of the host: dot-dot, a name too long (414), a bad name', async () => {
    const multi = await startService({ env: { API_KEYS: 'key-a:alpha' } });
    try {
      const as = { authorization: 'Bearer key-a' };
      await multi.inject({ method: 'PUT', url: '/workspaces/P/files/in.txt', payload: 'x', headers: as });
      const host = [multi.dir, multi.config.workspacesDir, '/proc/self/fd'];
      const long = 'n'.repeat(300);
      const cases = [
        { method: 'PUT' as const, url: '/workspaces/P/files/..%2fx', status: 400, code: 'outside_workspace' },
        { method: 'PUT' as const, url: `/workspaces/P/files/${long}`, status: 414, code: 'uri_too_long' },
        { method: 'PUT' as const, url: `/workspaces/P/files/sub/${long}/x.txt`, status: 414, code: 'uri_too_long' },
        { method: 'GET' as const, url: `/workspaces/P/files/${long}`, status: 414, code: 'uri_too_long' },
        { method: 'DELETE' as const, url: `/workspaces/P/files/${long}`, status: 414, code: 'uri_too_long' },
        { method: 'GET' as const, url: '/workspaces/P/files/in.txt/x', status: 404, code: 'not_found' },
      ];
      for (const c of cases) {
        const r = await multi.inject({ method: c.method, url: c.url, payload: c.method === 'PUT' ? 'x' : undefined, headers: as });
        expect(r.statusCode, `${c.method} ${c.url.slice(0, 60)}: ${r.body}`).toBe(c.status);
        expect(r.json().error.code).toBe(c.code);
        for (const h of host) expect(r.body, c.url.slice(0, 60)).not.toContain(h);
      }
    } finally {
      await multi.close();
    }
  });

  it('removes what it lets be uploaded: a folder 1,500 levels deep', async () => {
    const deep = `${Array.from({ length: 1500 }, () => 'd').join('/')}/leaf.txt`;
    expect((await put(deep, 'deep')).statusCode).toBe(201);
    expect(existsSync(path.join(ws(), deep))).toBe(true);
    const removed = await svc.inject({ method: 'DELETE', url: '/workspaces/T-files/files/d' });
    expect(removed.statusCode, removed.body).toBe(204);
    expect(existsSync(path.join(ws(), 'd'))).toBe(false);
    expect(readdirSync(ws()).filter((n) => n.startsWith('.removing-'))).toEqual([]);
  });

  it("one tenant cannot list, read, write or delete in another tenant's workspace", async () => {
    const multi = await startService({ env: { API_KEYS: 'key-a:alpha,key-b:beta' } });
    try {
      const as = (key: string) => ({ authorization: `Bearer ${key}` });
      const r = await multi.inject({ method: 'PUT', url: '/workspaces/T-t/files/mine.txt', payload: 'alpha data', headers: as('key-a') });
      expect(r.statusCode).toBe(201);
      expect((await multi.inject({ url: '/workspaces/T-t', headers: as('key-b') })).statusCode).toBe(404);
      expect((await multi.inject({ url: '/workspaces/T-t/files/mine.txt', headers: as('key-b') })).statusCode).toBe(404);
      expect((await multi.inject({ method: 'DELETE', url: '/workspaces/T-t/files/mine.txt', headers: as('key-b') })).statusCode).toBe(404);
      // Beta's upload to the same parent task id makes beta's own workspace, not a change to alpha's.
      expect((await multi.inject({ method: 'PUT', url: '/workspaces/T-t/files/mine.txt', payload: 'beta', headers: as('key-b') })).statusCode).toBe(201);
      const alpha = await multi.inject({ url: '/workspaces/T-t/files/mine.txt', headers: as('key-a') });
      expect(alpha.body).toBe('alpha data');
      expect((await multi.inject({ method: 'PUT', url: '/workspaces/T-t/files/x', payload: 'x' })).statusCode).toBe(401);
    } finally {
      await multi.close();
    }
  });
});
