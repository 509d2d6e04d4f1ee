/**
 * Network for commands: a task's HTTP(S) proxy, the one thing its sandbox can reach. It listens on
 * a Unix socket the sandbox binds in (a forwarder inside turns 127.0.0.1:<port> into it), takes
 * CONNECT (TLS) and plain HTTP with absolute URLs, and for each connection: checks the host
 * against the task's allow-list, resolves it itself and refuses private, loopback and link-local
 * addresses (the webhook guard) unless allowed, connects to the address it checked (never to a
 * name resolved again), counts the bytes both ways against the task's cap, and reports it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveTarget, WebhookTargetError } from './safe-target.ts';

/** A host pattern of an allow-list: `example.com`, `*.example.com` (its subdomains), an IP literal; `:<port>` optional. */
export function hostAllowed(patterns: string[], host: string, port: number): string | null {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const p of patterns) {
    const m = /^(.*?)(?::(\d+))?$/.exec(p.toLowerCase())!;
    const name = m[1].replace(/^\[|\]$/g, '');
    if (m[2] && Number(m[2]) !== port) continue;
    if (name === h) return p;
    if (name.startsWith('*.') && !isIP(h) && h.endsWith(name.slice(1)) && h.length > name.length - 1) return p;
  }
  return null;
}

export interface NetworkRequest {
  host: string;
  port: number;
  allowed: boolean;
  bytesIn: number;
  bytesOut: number;
  /** Why it was refused (or cut): the rule, the address, the cap. */
  reason?: string;
}

export interface EgressProxyOptions {
  allow: string[];
  /**
   * Asked about a host off the list (once per host and port): true adds it to the list. The
   * connection waits for the answer; without `ask` it is refused at once. `withdrawn` aborts when
   * the connection that asked goes away or the proxy closes: the question is taken back (and
   * asked again by the next connection to that host).
   */
  ask?(host: string, port: number, withdrawn: AbortSignal): Promise<boolean>;
  allowPrivate: boolean;
  /** Connections open at once. */
  maxConnections: number;
  /** Bytes in and out over the task's whole life; past it every connection is cut. */
  maxBytes: number;
  onRequest(r: NetworkRequest): void;
}

/** The connections a proxy holds at once in any state: room for idle and kept-alive ones beside those let through. */
export function socketsFor(maxConnections: number): number {
  return Math.max(64, maxConnections * 4);
}

export interface EgressProxy {
  /** The folder holding `proxy.sock`, bound into the sandbox. */
  dir: string;
  socket: string;
  close(): Promise<void>;
}

/** Headers of one hop (RFC 9110, 7.6.1): those a proxy must not pass on, and those `connection` names. */
const HOP_BY_HOP = ['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'upgrade'];

/** `headers` without those of one hop. */
export function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.includes(name) && !named.includes(name)));
}

/** Bytes of an HTTP message's head on the wire: its first line, each `name: value` line, the blank line. */
export function headBytes(firstLine: string, rawHeaders: string[]): number {
  let n = Buffer.byteLength(firstLine, 'latin1') + 2;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) n += Buffer.byteLength(`${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`, 'latin1');
  return n + 2;
}

/** Starts a task's proxy on a Unix socket of a fresh folder. */
export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-egress-'));
  const socket = path.join(dir, 'proxy.sock');
  const allow = [...opts.allow];
  /** Answers about hosts off the list, by `host:port` (asked once, however many connections wait). */
  const answers = new Map<string, Promise<boolean>>();
  /** Aborted by `close`: every question still open is taken back. */
  const closing = new AbortController();
  let bytes = 0;
  let open = 0;
  const sockets = new Set<Socket>();
  /** Ends of the connections open now: the proxy's close ends and reports them before it returns. */
  const ends = new Set<() => void>();
  const over = () => bytes > opts.maxBytes;
  const count = (n: number) => {
    bytes += n;
    if (over()) for (const s of sockets) s.destroy();
  };

  /** The address to connect to, or why not. */
  async function check(host: string, port: number, asker: Socket): Promise<{ address: string } | { refused: string }> {
    if (!hostAllowed(allow, host, port)) {
      const key = `${isIP(host) === 6 ? `[${host}]` : host.toLowerCase()}:${port}`;
      if (!opts.ask) return { refused: `${host}:${port} is not on the task's network allow-list (${allow.join(', ') || 'empty'})` };
      let answer = answers.get(key);
      if (!answer) {
        const gone = new AbortController();
        // The asker hanging up: 'end' (the proxy's sockets stay half open) or 'close'.
        asker.once('end', () => gone.abort());
        asker.once('close', () => gone.abort());
        const withdrawn = AbortSignal.any([gone.signal, closing.signal]);
        const asked = opts.ask(host, port, withdrawn).catch(() => false);
        answer = asked;
        answers.set(key, asked);
        // A question taken back is no answer: the next connection asks again.
        void asked.then(() => withdrawn.aborted && answers.get(key) === asked && answers.delete(key));
      }
      if (!(await answer)) return { refused: `${host}:${port} is not on the task's network allow-list and the caller denied it` };
      if (!allow.includes(key)) allow.push(key);
    }
    if (over()) return { refused: `the task's network budget of ${opts.maxBytes} bytes is spent` };
    if (open >= opts.maxConnections) return { refused: `the task already has ${opts.maxConnections} connections open` };
    try {
      const target = await resolveTarget(new URL(`http://${isIP(host) === 6 ? `[${host}]` : host}:${port}/`), opts.allowPrivate);
      return { address: target.address };
    } catch (err) {
      if (err instanceof WebhookTargetError) return { refused: `${err.message} (EGRESS_ALLOW_PRIVATE is off)` };
      return { refused: `${host} could not be resolved` };
    }
  }

  /**
   * An allowed connection is open on `carriers`: counted until it ends, once, whichever side
   * ends first (or `close`), then reported with what it carried.
   */
  function opened(r: NetworkRequest, carriers: Socket[], after?: () => void): () => void {
    open++;
    r.allowed = true;
    for (const s of carriers) sockets.add(s);
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      open--;
      ends.delete(done);
      for (const s of carriers) sockets.delete(s);
      after?.();
      opts.onRequest({ ...r, ...(over() && { reason: `cut at the task's network budget of ${opts.maxBytes} bytes` }) });
    };
    ends.add(done);
    return done;
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Plain HTTP through a proxy: the request line carries the absolute URL.
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('subagentd egress proxy: only absolute http:// URLs and CONNECT\n');
      return;
    }
    const port = Number(url.port || 80);
    const r: NetworkRequest = { host: url.hostname, port, allowed: false, bytesIn: 0, bytesOut: 0 };
    void check(url.hostname, port, req.socket).then((verdict) => {
      if ('refused' in verdict) {
        opts.onRequest({ ...r, reason: verdict.refused });
        res.writeHead(403, { 'content-type': 'text/plain' }).end(`subagentd egress proxy: refused: ${verdict.refused}\n`);
        return;
      }
      const upstream = httpRequest({
        host: verdict.address,
        port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: { ...endToEnd(req.headers), host: url.host },
      });
      const done = opened(r, [req.socket]);
      const sent = (n: number) => {
        r.bytesOut += n;
        count(n);
      };
      const received = (n: number) => {
        r.bytesIn += n;
        count(n);
      };
      // The heads count as tunnels count them: what the command sent, and what the origin answered.
      sent(headBytes(`${req.method} ${req.url} HTTP/${req.httpVersion}`, req.rawHeaders));
      req.on('data', (c: Buffer) => sent(c.length));
      upstream.on('response', (up) => {
        received(headBytes(`HTTP/${up.httpVersion} ${up.statusCode} ${up.statusMessage}`, up.rawHeaders));
        res.writeHead(up.statusCode ?? 502, endToEnd(up.headers));
        up.on('data', (c: Buffer) => {
          r.bytesIn += c.length;
          count(c.length);
        });
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      res.on('close', done);
      req.pipe(upstream);
    });
  });

  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(req.url ?? '');
    if (!m) {
      client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const host = m[1];
    const port = Number(m[2]);
    const r: NetworkRequest = { host, port, allowed: false, bytesIn: 0, bytesOut: 0 };
    client.on('error', () => {});
    void check(host, port, client).then((verdict) => {
      if ('refused' in verdict) {
        opts.onRequest({ ...r, reason: verdict.refused });
        const body = `subagentd egress proxy: refused: ${verdict.refused}\n`;
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        return;
      }
      const upstream = connect({ host: verdict.address, port });
      const done = opened(r, [client, upstream], () => {
        client.destroy();
        upstream.destroy();
      });
      upstream.on('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        client.on('data', (c: Buffer) => {
          r.bytesOut += c.length;
          count(c.length);
        });
        upstream.on('data', (c: Buffer) => {
          r.bytesIn += c.length;
          count(c.length);
        });
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        if (!client.destroyed && upstream.connecting) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
        done();
      });
      upstream.on('close', done);
      client.on('close', done);
    });
  });

  // Connections to the proxy in any state, the idle ones (no request yet, kept alive) included:
  // each holds one of the service's descriptors, so a task's commands cannot take them all. Past
  // the bound a new one is closed at once; `maxConnections` still bounds those let through.
  server.maxConnections = socketsFor(opts.maxConnections);
  // Every connection to the proxy, whatever state it is in, so `close` ends them all.
  const connections = new Set<Socket>();
  server.on('connection', (c: Socket) => {
    connections.add(c);
    c.once('close', () => connections.delete(c));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  return {
    dir,
    socket,
    async close() {
      closing.abort();
      // Connections still open (kept alive by the program) are reported now, before the task ends.
      for (const end of [...ends]) end();
      for (const s of sockets) s.destroy();
      for (const c of connections) c.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
