import { createServer, request, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostAllowed, socketsFor, startEgressProxy, type NetworkRequest } from './egress-proxy.ts';
import { allowedHosts } from './policy.ts';

let origin: Server;
let port: number;
beforeAll(async () => {
  origin = createServer((req, res) => {
    if (req.url === '/big') res.end('x'.repeat(100_000));
    else if (req.url === '/headers') res.end(JSON.stringify(req.headers));
    else res.end(`hello from ${req.headers.host}`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  port = (origin.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => origin.close(() => r())));

/** A plain HTTP GET through the proxy's Unix socket. */
function get(socketPath: string, url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: url, headers: { ...headers, host: new URL(url).host } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('host patterns', () => {
  it('match a name, a wildcard of subdomains (not the domain itself), an IP literal, a port', () => {
    expect(hostAllowed(['registry.npmjs.org'], 'registry.npmjs.org', 443)).toBe('registry.npmjs.org');
    expect(hostAllowed(['registry.npmjs.org'], 'evil.npmjs.org', 443)).toBeNull();
    expect(hostAllowed(['*.github.com'], 'api.github.com', 443)).toBe('*.github.com');
    expect(hostAllowed(['*.github.com'], 'github.com', 443)).toBeNull();
    expect(hostAllowed(['*.github.com'], 'github.com.evil.io', 443)).toBeNull();
    expect(hostAllowed(['example.com:443'], 'example.com', 80)).toBeNull();
    expect(hostAllowed(['93.184.216.34'], '93.184.216.34', 80)).toBe('93.184.216.34');
    expect(hostAllowed(['*.0.0.1'], '127.0.0.1', 80)).toBeNull();
  });

  it("a task's list only narrows its definition's", () => {
    expect(allowedHosts(undefined, { allow: ['a.com'] })).toBeNull();
    expect(allowedHosts('none', undefined)).toBeNull();
    expect(allowedHosts({ allow: ['a.com', '*.b.com'] }, undefined)).toEqual({ allow: ['a.com', '*.b.com'], ask: false });
    expect(allowedHosts({ allow: ['a.com', '*.b.com'] }, 'none')).toBeNull();
    expect(allowedHosts({ allow: ['a.com', '*.b.com'] }, { allow: ['a.com', 'x.b.com', '*.y.b.com', 'c.com', 'b.com'] })).toEqual({
      allow: ['a.com', 'x.b.com', '*.y.b.com'],
      ask: false,
    });
    expect(allowedHosts({ allow: ['a.com:443'] }, { allow: ['a.com'] })).toEqual({ allow: [], ask: false });
    // ask: the definition's say, which a task may turn off and never on.
    expect(allowedHosts({ allow: [], ask: true }, undefined)).toEqual({ allow: [], ask: true });
    expect(allowedHosts({ allow: [], ask: true }, { allow: [] })).toEqual({ allow: [], ask: true });
    expect(allowedHosts({ allow: [], ask: true }, { allow: [], ask: false })).toEqual({ allow: [], ask: false });
    expect(allowedHosts({ allow: ['a.com'] }, { allow: ['a.com'], ask: true })).toEqual({ allow: ['a.com'], ask: false });
  });
});

describe('the egress proxy', () => {
  it('forwards plain HTTP to an allowed host, refuses others with 403 naming the list, and reports each', async () => {
    const seen: NetworkRequest[] = [];
    const proxy = await startEgressProxy({
      allow: [`127.0.0.1:${port}`],
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: (r) => seen.push(r),
    });
    try {
      expect(await get(proxy.socket, `http://127.0.0.1:${port}/hi`)).toEqual({ status: 200, body: `hello from 127.0.0.1:${port}` });
      const refused = await get(proxy.socket, `http://localhost:${port}/hi`);
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('not on the task');
      await new Promise((r) => setTimeout(r, 50));
      expect(seen).toEqual([
        expect.objectContaining({ host: '127.0.0.1', port, allowed: true, bytesIn: expect.any(Number) }),
        expect.objectContaining({ host: 'localhost', port, allowed: false, bytesIn: 0, bytesOut: 0 }),
      ]);
      expect(seen[0].bytesIn).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  });

  it("holds at most socketsFor(maxConnections) connections, idle ones included: past it a new one is closed, and the task's own go on", async () => {
    const proxy = await startEgressProxy({ allow: [`127.0.0.1:${port}`], allowPrivate: true, maxConnections: 4, maxBytes: 1e9, onRequest: () => {} });
    const idle = [];
    try {
      // Idle connections, as a command opens and never writes to (each is one of the service's descriptors).
      for (let i = 0; i < socketsFor(4); i++) {
        const c = connect(proxy.socket);
        await new Promise<void>((resolve, reject) => c.once('connect', resolve).once('error', reject));
        idle.push(c);
      }
      const extra = connect(proxy.socket);
      // Closed by the proxy as it connects: the write fails (EPIPE, or a reset), as it would for a command.
      extra.on('error', () => {});
      const closed = await new Promise<boolean>((resolve) => {
        extra.once('close', () => resolve(true));
        extra.once('data', () => resolve(false));
        extra.write(`GET http://127.0.0.1:${port}/hi HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      });
      expect(closed).toBe(true);
      // One idle connection let go: a request goes through again.
      idle.pop()!.destroy();
      await new Promise((r) => setTimeout(r, 50));
      expect(await get(proxy.socket, `http://127.0.0.1:${port}/hi`)).toEqual({ status: 200, body: `hello from 127.0.0.1:${port}` });
    } finally {
      for (const c of idle) c.destroy();
      await proxy.close();
    }
  });

  it('counts what a plain HTTP exchange carried both ways: request line, headers and body out, status line, headers and body in', async () => {
    // An origin whose answer is known to the byte: it answers once the whole request has arrived.
    const answer = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello';
    const raw = createTcpServer((s) => {
      let got = '';
      s.on('data', (c: Buffer) => {
        got += c.toString('latin1');
        const head = got.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0);
        if (head !== -1 && got.length >= head + 4 + length) s.end(answer);
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const rawPort = (raw.address() as AddressInfo).port;
    const seen: NetworkRequest[] = [];
    const proxy = await startEgressProxy({
      allow: [`127.0.0.1:${rawPort}`],
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: (r) => seen.push(r),
    });
    /** Sends `request` as is through the proxy; resolves with what came back once the proxy hangs up. */
    const exchange = (request: string) =>
      new Promise<string>((resolve) => {
        const s = connect(proxy.socket);
        let got = '';
        s.on('data', (c: Buffer) => (got += c.toString()));
        s.on('close', () => resolve(got));
        s.write(request);
      });
    try {
      const target = `127.0.0.1:${rawPort}`;
      const getRequest = `GET http://${target}/hi HTTP/1.1\r\nhost: ${target}\r\nuser-agent: curl/8\r\nconnection: close\r\n\r\n`;
      const body = 'x'.repeat(1000);
      const postRequest = `POST http://${target}/up HTTP/1.1\r\nhost: ${target}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
      expect(await exchange(getRequest)).toMatch(/^HTTP\/1\.1 200[^]*hello$/);
      expect(await exchange(postRequest)).toMatch(/^HTTP\/1\.1 200[^]*hello$/);
      await expect.poll(() => seen.length).toBe(2);
      expect(seen).toEqual([
        expect.objectContaining({ allowed: true, bytesOut: Buffer.byteLength(getRequest), bytesIn: Buffer.byteLength(answer) }),
        expect.objectContaining({ allowed: true, bytesOut: Buffer.byteLength(postRequest), bytesIn: Buffer.byteLength(answer) }),
      ]);
    } finally {
      await proxy.close();
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it('passes on the end-to-end headers of a plain HTTP request, not those of the hop to the proxy', async () => {
    const proxy = await startEgressProxy({ allow: [`127.0.0.1:${port}`], allowPrivate: true, maxConnections: 4, maxBytes: 1e9, onRequest: () => {} });
    try {
      const { status, body } = await get(proxy.socket, `http://127.0.0.1:${port}/headers`, {
        'x-kept': 'yes',
        'proxy-connection': 'keep-alive',
        'proxy-authorization': 'Basic c2VjcmV0',
        connection: 'x-hop-only',
        'x-hop-only': 'for the proxy',
      });
      expect(status).toBe(200);
      const seen = JSON.parse(body) as Record<string, string>;
      expect(seen['x-kept']).toBe('yes');
      expect(seen).not.toHaveProperty('proxy-connection');
      expect(seen).not.toHaveProperty('proxy-authorization');
      expect(seen).not.toHaveProperty('x-hop-only');
    } finally {
      await proxy.close();
    }
  });

  it('refuses a private, loopback or link-local address unless EGRESS_ALLOW_PRIVATE, even when listed', async () => {
    const seen: NetworkRequest[] = [];
    const proxy = await startEgressProxy({
      allow: ['127.0.0.1', 'localhost'],
      allowPrivate: false,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: (r) => seen.push(r),
    });
    try {
      for (const host of ['127.0.0.1', 'localhost']) {
        const r = await get(proxy.socket, `http://${host}:${port}/`);
        expect(r.status).toBe(403);
        expect(r.body).toMatch(/private, loopback or link-local/);
      }
    } finally {
      await proxy.close();
    }
  });

  it('tunnels CONNECT to an allowed host and refuses the rest with 403', async () => {
    const echo = createTcpServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const echoPort = (echo.address() as AddressInfo).port;
    const seen: NetworkRequest[] = [];
    const proxy = await startEgressProxy({
      allow: [`127.0.0.1:${echoPort}`],
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: (r) => seen.push(r),
    });
    const tunnel = (target: string) =>
      new Promise<string>((resolve) => {
        const s = connect(proxy.socket);
        let got = '';
        s.on('data', (c: Buffer) => {
          got += c.toString();
          if (got.includes('200 Connection Established\r\n\r\n') && !got.includes('ping')) s.write('ping');
          if (got.includes('ping') || got.includes('403')) s.end();
        });
        s.on('close', () => resolve(got));
        s.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`);
      });
    try {
      expect(await tunnel(`127.0.0.1:${echoPort}`)).toContain('ping');
      expect(await tunnel(`127.0.0.1:${port}`)).toContain('403 Forbidden');
      await new Promise((r) => setTimeout(r, 50));
      expect(seen.find((r) => r.allowed)).toMatchObject({ host: '127.0.0.1', port: echoPort, bytesIn: 4, bytesOut: 4 });
    } finally {
      await proxy.close();
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });

  it("cuts a download at the task's byte budget, and says so", async () => {
    const seen: NetworkRequest[] = [];
    const proxy = await startEgressProxy({
      allow: [`127.0.0.1:${port}`],
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 10_000,
      onRequest: (r) => seen.push(r),
    });
    try {
      const r = await get(proxy.socket, `http://127.0.0.1:${port}/big`).catch(() => ({ status: 0, body: '' }));
      expect(r.body.length).toBeLessThan(100_000);
      await new Promise((res) => setTimeout(res, 50));
      expect(seen[0]).toMatchObject({ allowed: true, reason: expect.stringContaining('budget') });
      expect((await get(proxy.socket, `http://127.0.0.1:${port}/hi`)).status).toBe(403);
    } finally {
      await proxy.close();
    }
  });

  it('asks about a host off the list once, however many connections wait; an allowed host joins the list, a denied one is refused', async () => {
    const asked: string[] = [];
    let allow: (yes: boolean) => void = () => {};
    const proxy = await startEgressProxy({
      allow: [],
      ask: (host, p) => {
        asked.push(`${host}:${p}`);
        return new Promise<boolean>((r) => (allow = r));
      },
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: () => {},
    });
    try {
      const two = [get(proxy.socket, `http://127.0.0.1:${port}/a`), get(proxy.socket, `http://127.0.0.1:${port}/b`)];
      await new Promise((r) => setTimeout(r, 100));
      expect(asked).toEqual([`127.0.0.1:${port}`]);
      allow(true);
      expect((await Promise.all(two)).map((r) => r.status)).toEqual([200, 200]);
      expect((await get(proxy.socket, `http://127.0.0.1:${port}/c`)).status).toBe(200);
      const other = get(proxy.socket, `http://localhost:${port}/`);
      await new Promise((r) => setTimeout(r, 100));
      allow(false);
      const refused = await other;
      expect([refused.status, refused.body]).toEqual([403, expect.stringContaining('the caller denied it')]);
      expect(asked).toEqual([`127.0.0.1:${port}`, `localhost:${port}`]);
    } finally {
      await proxy.close();
    }
  });

  it('takes a question back when the connection that asked goes away, and asks again for the next one', async () => {
    const withdrawn: boolean[] = [];
    const proxy = await startEgressProxy({
      allow: [],
      ask: (_host, _port, signal) =>
        new Promise<boolean>((resolve) => {
          signal.addEventListener('abort', () => {
            withdrawn.push(true);
            resolve(false);
          });
        }),
      allowPrivate: true,
      maxConnections: 4,
      maxBytes: 1e9,
      onRequest: () => {},
    });
    try {
      for (let round = 1; round <= 2; round++) {
        const s = connect(proxy.socket);
        s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
        await new Promise((r) => setTimeout(r, 100));
        s.destroy();
        await expect.poll(() => withdrawn.length).toBe(round);
      }
      // Closing the proxy takes back a question still open.
      const s = connect(proxy.socket);
      s.on('error', () => {});
      s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 100));
      await proxy.close();
      expect(withdrawn).toHaveLength(3);
    } finally {
      await proxy.close().catch(() => {});
    }
  });
});
