/** `npm run bench egress`: what the egress proxy costs a download, against the same download direct. */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEgressProxy } from '../src/network/egress-proxy.ts';
import { FORWARDER } from '../src/sandbox/sandbox.ts';
import { now, pct, sleep } from './support.ts';

/**
 * A 100 MB download from a loopback HTTP server with curl, `rounds` times each way: direct, and
 * through the path a sandboxed command takes (the forwarder on 127.0.0.1, then the service's proxy
 * on its Unix socket, then the server), the forwarder run as the sandbox runs it but on the host:
 * plain HTTP forwarded, and CONNECT (as every https:// request goes) with `--proxytunnel`.
 */
export async function benchEgress(bytes = 100 * 1024 * 1024, rounds = 5) {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  const origin = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': bytes });
    let left = bytes;
    const more = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.2', r));
  const url = `http://127.0.0.2:${(origin.address() as AddressInfo).port}/file`;
  const proxy = await startEgressProxy({ allow: ['127.0.0.2'], allowPrivate: true, maxConnections: 8, maxBytes: Number.MAX_SAFE_INTEGER, onRequest: () => {} });
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  const forwarder = spawn(process.execPath, ['-e', FORWARDER, proxy.socket, String(port), 'sleep', '3600'], { stdio: 'ignore' });
  await sleep(500);
  // curl as its own process (the servers of this one must keep serving meanwhile).
  const curl = (extra: string[]) =>
    new Promise<number>((resolve, reject) => {
      const t = now();
      const child = spawn('/usr/bin/curl', ['-sS', '-o', '/dev/null', '-w', '%{size_download}', ...extra, url]);
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', () => (Number(out) === bytes ? resolve(now() - t) : reject(new Error(`curl got ${out} bytes`))));
    });
  const direct: number[] = [];
  const proxied: number[] = [];
  const tunnelled: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      direct.push(await curl(['--noproxy', '*']));
      proxied.push(await curl(['--proxy', `http://127.0.0.1:${port}`]));
      // CONNECT, as every https:// request goes: bytes piped, no HTTP parsed.
      tunnelled.push(await curl(['--proxy', `http://127.0.0.1:${port}`, '--proxytunnel']));
    }
  } finally {
    forwarder.kill('SIGKILL');
    await proxy.close();
    await new Promise<void>((r) => origin.close(() => r()));
  }
  const mbps = (ms: number) => bytes / 1024 / 1024 / (ms / 1000);
  return {
    bytes,
    rounds,
    direct: { p50: pct(direct, 50), mbps: mbps(pct(direct, 50)) },
    proxied: { p50: pct(proxied, 50), mbps: mbps(pct(proxied, 50)) },
    tunnelled: { p50: pct(tunnelled, 50), mbps: mbps(pct(tunnelled, 50)) },
  };
}
