import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, toolOnce, type TestService } from './support/harness';
import { openStream } from './support/ws-client';

/**
 * The outside attack run, class by class, through the public surface. Races are driven by a real
 * process that keeps swapping paths in the workspace while the service works, as a workspace
 * command would.
 */
let svc: TestService;
let ws: string;
let outside: string;
const SECRET = 'OUTSIDE-SECRET-7d1f';
const swappers: ChildProcess[] = [];

beforeAll(async () => {
  svc = await startService();
  ws = path.join(svc.config.workspacesDir, 'T-sec');
  outside = path.join(svc.dir, 'outside');
  mkdirSync(ws, { recursive: true });
  mkdirSync(path.join(outside, 'dir'), { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  writeFileSync(path.join(outside, 'dir', 'secret.txt'), SECRET);
});
afterEach(() => {
  for (const p of swappers.splice(0)) p.kill('SIGKILL');
});
afterAll(() => svc.close());

/** Runs a bash loop in `cwd` until the test ends: the hostile workspace command. */
function swapLoop(cwd: string, body: string): ChildProcess {
  const p = spawn('bash', ['-c', `while true; do ${body}; done`], { cwd, stdio: 'ignore' });
  swappers.push(p);
  return p;
}

const context = { parentTaskId: 'T-sec', userId: 'u-sec' };
const callTool = (name: string, args: Record<string, unknown>) => toolOnce(svc, name, args, context);

/** GET on a fresh keep-alive-free connection, body as bytes, with its declared length. */
function download(url: string): Promise<{ status: number; length: number | null; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            length: res.headers['content-length'] ? Number(res.headers['content-length']) : null,
            body: Buffer.concat(parts),
          }),
        );
        // A response the server cut short (a file that shrank) ends in an abort: no bytes past the length.
        res.on('aborted', () => resolve({ status: -1, length: null, body: Buffer.concat(parts) }));
        res.on('error', () => resolve({ status: -1, length: null, body: Buffer.concat(parts) }));
      })
      .on('error', reject);
  });
}

describe('download route under a racing workspace command', () => {
  it('never serves what a link swapped in points at (another file, the database, /proc)', async () => {
    const dir = path.join(ws, 'race1');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'real'), 'inside content');
    swapLoop(
      dir,
      `ln -sfn ${path.join(outside, 'secret.txt')} t1 && mv -T t1 f; cp real t2 && mv -T t2 f; ` +
        `ln -sfn ${svc.config.databasePath} t3 && mv -T t3 f; ln -sfn /proc/self/environ t4 && mv -T t4 f; cp real t5 && mv -T t5 f`,
    );
    const statuses = new Set<number>();
    let served = 0;
    for (let i = 0; i < 400; i++) {
      const r = await download(`${svc.url}/workspaces/T-sec/files/race1/f`);
      statuses.add(r.status);
      const text = r.body.toString('latin1');
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('SQLite format');
      expect(text).not.toContain('OPENAI_API_KEY');
      if (r.status === 200) {
        served++;
        expect(text).toBe('inside content');
      } else {
        expect([400, 404]).toContain(r.status);
        expect(JSON.parse(text).error.code).toMatch(/outside_workspace|not_found|not_a_file/);
      }
    }
    // The race was real: both outcomes happened.
    expect(served).toBeGreaterThan(0);
    expect(statuses.size).toBeGreaterThan(1);
  });

  it('a folder on the path swapped for a link serves nothing outside', async () => {
    const dir = path.join(ws, 'race2');
    mkdirSync(path.join(dir, 'd'), { recursive: true });
    writeFileSync(path.join(dir, 'd', 'secret.txt'), 'inside content');
    swapLoop(dir, `mv -T d d.real; ln -sfn ${path.join(outside, 'dir')} d; rm d; mv -T d.real d`);
    for (let i = 0; i < 300; i++) {
      const r = await download(`${svc.url}/workspaces/T-sec/files/race2/d/secret.txt`);
      expect(r.body.toString()).not.toContain(SECRET);
    }
  });

  it('refuses a FIFO at once, and a FIFO swapped in never pins the file operations of the process', async () => {
    const dir = path.join(ws, 'fifo');
    mkdirSync(dir);
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    const r = await download(`${svc.url}/workspaces/T-sec/files/fifo/pipe`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body.toString()).error.code).toBe('not_a_file');

    writeFileSync(path.join(dir, 'real'), 'plain');
    swapLoop(dir, 'rm -f p2; mkfifo p2 && mv -T p2 f; cp real t && mv -T t f');
    // More downloads than libuv has pool threads (4): each would pin one if it blocked.
    const all = await Promise.all(Array.from({ length: 40 }, () => download(`${svc.url}/workspaces/T-sec/files/fifo/f`)));
    for (const d of all) expect(d.status === 200 ? d.body.toString() : 'refused').toMatch(/^(plain|refused)$/);
    // And the tools still read files afterwards.
    expect(await callTool('read_file', { path: 'fifo/real' })).toContain('plain');
  });

  it('never sends more bytes than content-length while the file grows', async () => {
    const dir = path.join(ws, 'grow');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'log'), 'x'.repeat(256 * 1024));
    swapLoop(dir, "printf 'more log lines\\n' >> log");
    for (let i = 0; i < 20; i++) {
      const r = await download(`${svc.url}/workspaces/T-sec/files/grow/log`);
      expect(r.status).toBe(200);
      expect(r.body.length).toBe(r.length);
    }
  });
});

describe('file tools under a racing workspace command', () => {
  it('list_files and write_file never list or create anything outside through a folder swapped for a link', async () => {
    const dir = path.join(ws, 'race3');
    mkdirSync(path.join(dir, 'd'), { recursive: true });
    writeFileSync(path.join(dir, 'd', 'mine.txt'), 'mine');
    const before = readdirSync(path.join(outside, 'dir')).sort();
    swapLoop(dir, `mv -T d d.real; ln -sfn ${path.join(outside, 'dir')} d; rm d; mv -T d.real d`);
    const marker = 'RACE-TOOLS';
    const seen: string[] = [];
    svc.model.script(marker, (ctx) => {
      if (ctx.turn < 4) {
        const calls = Array.from({ length: 25 }, (_, i) =>
          i % 2 === 0
            ? { name: 'write_file', args: { path: `race3/d/sub${ctx.turn}-${i}/new.txt`, content: 'PWNED' } }
            : { name: 'list_files', args: { path: 'race3/d' } },
        );
        if (ctx.turn > 0) seen.push(...ctx.toolResults.map((r) => r.content));
        return { toolCalls: calls };
      }
      seen.push(...ctx.toolResults.map((r) => r.content));
      return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] };
    });
    const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: marker, context, options: { maxSteps: 6 } }) });
    expect(res.json().status).toBe('completed');
    expect(seen.length).toBe(100);
    for (const s of seen) expect(s).not.toContain('secret.txt');
    expect(readdirSync(path.join(outside, 'dir')).sort()).toEqual(before);
  });

  it('edit_file on a huge file answers with a tool error and the service stays up', async () => {
    const file = path.join(ws, 'huge.txt');
    writeFileSync(file, 'start');
    truncateSync(file, 1024 * 1024 * 1024); // 1 GiB, sparse: over V8's largest string
    const seen = await callTool('edit_file', { path: 'huge.txt', oldString: 'start', newString: 'x' });
    expect(seen).toMatch(/over the edit limit/);
    expect((await svc.inject({ url: '/healthz' })).statusCode).toBe(200);
  });

  it('edit_file refuses an edit that would blow the file past the limit', async () => {
    writeFileSync(path.join(ws, 'many-a.txt'), 'a'.repeat(1024 * 1024));
    const seen = await callTool('edit_file', { path: 'many-a.txt', oldString: 'a', newString: 'b'.repeat(100), replaceAll: true });
    expect(seen).toMatch(/would have \d+ bytes, over the limit/);
    expect(readFileSync(path.join(ws, 'many-a.txt'), 'utf8')).toBe('a'.repeat(1024 * 1024));
  });

  it('complete reports a FIFO as skipped, not as a file', async () => {
    execFileSync('mkfifo', [path.join(ws, 'handed-pipe')]);
    writeFileSync(path.join(ws, 'ok.md'), 'ok');
    svc.model.script('FIFO-COMPLETE', [{ toolCalls: [{ name: 'complete', args: { summary: 's', paths: ['handed-pipe', 'ok.md'] } }] }]);
    const out = (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'FIFO-COMPLETE', context }) })).json();
    expect(out.artifacts.map((a: { path: string; fsType: string }) => [path.basename(a.path), a.fsType])).toEqual([['ok.md', 'file']]);
    expect(out.skipped).toEqual([{ path: 'handed-pipe', relativePath: 'handed-pipe', reason: 'not_a_regular_file' }]);
  });
});

describe('user-supplied regular expressions and globs are bounded', () => {
  beforeAll(() => {
    writeFileSync(path.join(ws, 'redos.txt'), `${'a'.repeat(40)}!\n`);
  });

  it('grep with a catastrophic pattern finishes at once (RE2, linear time)', async () => {
    // JavaScript's backtracking engine needs about 2^40 steps for this line.
    expect(await callTool('grep', { pattern: '(a+)+$', path: 'redos.txt' })).toBe('no matches for /(a+)+$/');
    expect(await callTool('grep', { pattern: '^(a|aa)+$', path: 'redos.txt' })).toMatch(/no matches/);
  });

  it('grep explains a pattern RE2 cannot run', async () => {
    expect(await callTool('grep', { pattern: '(?=a)a', path: 'redos.txt' })).toMatch(/invalid regular expression.*RE2/);
    expect(await callTool('grep', { pattern: '(a)\\1', path: 'redos.txt' })).toMatch(/invalid regular expression/);
  });

  it('an outputSchema pattern cannot block the loop either', async () => {
    const marker = 'REDOS-SCHEMA';
    svc.model.script(marker, (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'complete', args: { summary: 's', paths: [], output: { s: `${'a'.repeat(40)}!` } } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 's', paths: [], output: { s: 'aaa' } } }] },
    );
    const out = (
      await svc.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({
          prompt: marker,
          context,
          options: { outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } } },
        }),
      })
    ).json();
    expect(out.status).toBe('completed');
    expect(out.output).toEqual({ s: 'aaa' });
    expect(out.steps).toBe(2);
  });

  it('glob and grep with brace bombs answer at once', async () => {
    const bomb = '{a,b}'.repeat(40);
    expect(await callTool('glob', { pattern: bomb })).toBe(`no paths match "${bomb}"`);
    expect(await callTool('glob', { pattern: `**/${'{x,y,z}'.repeat(30)}*` })).toMatch(/no paths match/);
    expect(await callTool('grep', { pattern: 'a', glob: '{a,b}'.repeat(40) })).toMatch(/no matches/);
    expect(await callTool('glob', { pattern: `${'{'.repeat(20)}a${'}'.repeat(20)}` })).toMatch(/nested deeper/);
  });

  it('glob alternatives cannot name places outside, not even inside braces', async () => {
    for (const pattern of ['{/etc/*,x}', `{${outside}/*,x}`, '{x,../../*}', '{x,../*/*.txt}']) {
      const seen = await callTool('glob', { pattern });
      expect(seen, pattern).toMatch(/may not contain "\.\." or start with "\/"/);
      expect(seen).not.toContain('passwd');
      expect(seen).not.toContain('secret');
    }
  });
});

describe('output schemas are per task and bounded', () => {
  const withSchema = (outputSchema: unknown, headers: Record<string, string> = {}, parentTaskId = 'T-sch') =>
    svc.inject({
      method: 'POST',
      url: '/tasks',
      headers,
      payload: taskBody({ prompt: 'SCHEMA-ONLY', context: { parentTaskId, userId: 'u' }, options: { outputSchema } }),
    });

  beforeAll(() => {
    svc.model.script('SCHEMA-ONLY', [{ text: 'no tools' }]);
  });

  it("the same $id in two tasks never collides, and a $ref never reaches another task's schema", async () => {
    const schema = { $id: 'https://example.test/shared', type: 'object', properties: { secretField: { const: 'TENANT-A-SCHEMA-CONTENT' } } };
    expect((await withSchema(schema)).statusCode).toBe(202);
    expect((await withSchema(schema)).statusCode).toBe(202);
    const ref = await withSchema({ $ref: 'https://example.test/shared' });
    expect(ref.statusCode).toBe(400);
    expect(ref.json().error.code).toBe('invalid_request');
    expect(ref.body).not.toContain('TENANT-A-SCHEMA-CONTENT');
  });

  it('refuses a schema over 64 KiB or nested too deep with 400', async () => {
    const big = { type: 'object', description: 'x'.repeat(70 * 1024) };
    const res = await withSchema(big);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details[0].message).toMatch(/over the limit/);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'array', items: deep };
    const res2 = await withSchema(deep);
    expect(res2.statusCode).toBe(400);
    expect(res2.json().error.details[0].message).toMatch(/nested deeper/);
  });
});

describe('tenants do not crowd each other out', () => {
  let q: TestService;
  const A = { authorization: 'Bearer key-a-000000000001' };
  const B = { authorization: 'Bearer key-b-000000000002' };
  beforeAll(async () => {
    q = await startService({
      env: {
        API_KEYS: 'key-a-000000000001:a,key-b-000000000002:b',
        MAX_CONCURRENT_TASKS: '2',
        MAX_CONCURRENT_PER_TENANT: '1',
        MAX_QUEUED_PER_TENANT: '3',
        MAX_QUEUED_TASKS: '50',
      },
    });
    q.model.script('SLOW', [{ text: 'slow', delayMs: 800 }]);
  });
  afterAll(() => q.close());

  it('one tenant at its queue quota gets 429 while another is still admitted and runs next', async () => {
    const post = (headers: Record<string, string>) =>
      q.inject({ method: 'POST', url: '/tasks', headers, payload: taskBody({ prompt: 'SLOW', context: { parentTaskId: 'T-q', userId: 'u' } }) });
    const a: number[] = [];
    for (let i = 0; i < 6; i++) a.push((await post(A)).statusCode);
    // One running (its tenant quota), three queued, then refused.
    expect(a).toEqual([202, 202, 202, 202, 429, 429]);
    const refused = await post(A);
    expect(refused.json().error.code).toBe('queue_full');
    expect(refused.headers['retry-after']).toBe('5');
    const b = await post(B);
    expect(b.statusCode).toBe(202);
    // B runs at once beside A's running task: A's queue does not hold it back.
    expect(b.json().status).toBe('running');
    const metrics = (await q.inject({ url: '/tasks?limit=20', headers: A })).json();
    expect(metrics.tasks.filter((t: { status: string }) => t.status === 'running')).toHaveLength(1);
  });
});

describe('authentication and the HTTP surface', () => {
  let authed: TestService;
  const logs: string[] = [];
  const KEY = 'key-http-surface-0001';
  beforeAll(async () => {
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
    authed = await startService({ env: { API_KEYS: `${KEY}:t`, AUTH_FAILURES_PER_MINUTE: '5', LOG_LEVEL: 'debug' }, logger });
  });
  afterAll(() => authed.close());

  const raw = (data: string, waitMs = 3000) =>
    new Promise<string>((resolve) => {
      const s = net.connect(Number(new URL(authed.url).port), '127.0.0.1', () => s.write(data));
      let out = '';
      s.on('data', (d: Buffer) => (out += d.toString()));
      s.on('close', () => resolve(out));
      s.on('error', () => resolve(out));
      setTimeout(() => {
        s.destroy();
        resolve(out);
      }, waitMs);
    });
  const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

  it('takes ?access_token= only on a WebSocket route, and only spelled canonically; no spelling reaches the logs', async () => {
    const plain = await authed.inject({ url: `/usage?access_token=${KEY}`, headers: { upgrade: 'websocket' } });
    expect(plain.statusCode).toBe(401);
    const task = (
      await authed.inject({ method: 'POST', url: '/tasks', headers: { authorization: `Bearer ${KEY}` }, payload: taskBody({ prompt: 'none' }) })
    ).json();
    const base = authed.url.replace('http', 'ws');
    const ok = await openStream(`${base}/tasks/${task.id}/stream?access_token=${KEY}`);
    ok.socket.close();
    await expect(openStream(`${base}/tasks/${task.id}/stream?access%5Ftoken=${KEY}`)).rejects.toThrow(/401/);
    await expect(openStream(`${base}/tasks/${task.id}/stream?%61ccess_token=${KEY}`)).rejects.toThrow(/401/);
    await authed.inject({ url: `/tasks?x=1&ACCESS%5FTOKEN=${KEY}`, headers: { authorization: `Bearer ${KEY}` } });
    expect(logs.join('\n')).not.toContain(KEY);
  });

  it('answers every refusal of the HTTP layer in the contract shape', async () => {
    const auth = `Authorization: Bearer ${KEY}\r\n`;
    const cases: Array<[string, number, string]> = [
      [`GET /tasks/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, 400, 'invalid_url'],
      [`GET /tasks/${'a'.repeat(300)} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, 414, 'uri_too_long'],
      [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431, 'headers_too_large'],
      [`GET /tasks?x=${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers_too_large'],
      ['NONSENSE\r\n\r\n', 400, 'bad_request'],
    ];
    for (const [request, status, code] of cases) {
      const response = await raw(request);
      expect(response.startsWith(`HTTP/1.1 ${status} `), response.slice(0, 60)).toBe(true);
      expect(bodyOf(response).error.code).toBe(code);
    }
    const task = (
      await authed.inject({ method: 'POST', url: '/tasks', headers: { authorization: `Bearer ${KEY}` }, payload: taskBody({ prompt: 'none' }) })
    ).json();
    const plainGet = await authed.inject({ url: `/tasks/${task.id}/stream`, headers: { authorization: `Bearer ${KEY}` } });
    expect(plainGet.statusCode).toBe(426);
    expect(plainGet.json().error.code).toBe('upgrade_required');
  });

  it('closes a connection that never finishes its headers, but lets a long ?wait=true run', async () => {
    const slow = await startService({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
    try {
      slow.model.script('WAIT-LONG', [{ text: 'done late', delayMs: 3500 }]);
      const started = Date.now();
      const half = await new Promise<string>((resolve) => {
        const s = net.connect(Number(new URL(slow.url).port), '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
        let out = '';
        s.on('data', (d: Buffer) => (out += d.toString()));
        s.on('close', () => resolve(out));
        setTimeout(() => s.destroy(), 15_000);
      });
      expect(half).toMatch(/^HTTP\/1.1 408 /);
      expect(bodyOf(half).error.code).toBe('request_timeout');
      expect(Date.now() - started).toBeLessThan(10_000);
      const waited = await fetch(`${slow.url}/tasks?wait=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ prompt: 'WAIT-LONG' })),
      });
      expect(waited.status).toBe(200);
      expect(((await waited.json()) as { status: string }).status).toBe('completed');
    } finally {
      await slow.close();
    }
  });

  it('refuses an address that keeps sending wrong keys, even with the right key, for the rest of the minute', async () => {
    for (let i = 0; i < 5; i++)
      expect((await authed.inject({ url: '/agents', headers: { authorization: 'Bearer wrong' }, remoteAddress: '10.0.0.9' })).statusCode).toBe(401);
    const locked = await authed.inject({ url: '/agents', headers: { authorization: `Bearer ${KEY}` }, remoteAddress: '10.0.0.9' });
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error.code).toBe('too_many_auth_failures');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    // Another address is not affected.
    expect((await authed.inject({ url: '/agents', headers: { authorization: `Bearer ${KEY}` }, remoteAddress: '10.0.0.10' })).statusCode).toBe(200);
  });
});

it('leaves nothing behind outside the workspace', () => {
  expect(readdirSync(outside).sort()).toEqual(['dir', 'secret.txt']);
  expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  expect(existsSync(path.join(outside, 'dir', 'new.txt'))).toBe(false);
});
