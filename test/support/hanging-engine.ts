import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A Docker Engine API stand-in on a loopback Unix socket that answers the calls `answer` knows
 * (`METHOD /path`, no query: a JSON value, or a string sent as text) and accepts the others
 * without ever answering them: an engine that is wedged or paused under a call.
 */
export interface HangingEngine {
  /** unix:///... as DOCKER_HOST. */
  host: string;
  /** Every call received, `METHOD /path`, in order. */
  seen: string[];
  close(): Promise<void>;
}

export async function startHangingEngine(answer: (call: string) => unknown): Promise<HangingEngine> {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-engine-'));
  const socketPath = path.join(dir, 'engine.sock');
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const call = `${req.method} ${(req.url ?? '').split('?')[0]}`;
    seen.push(call);
    req.resume();
    const body = answer(call);
    if (body === undefined) return; // accepted, never answered
    if (typeof body === 'string') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
      return;
    }
    res.writeHead(call.startsWith('POST /containers/create') ? 201 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    host: `unix://${socketPath}`,
    seen,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The calls an engine with nothing left behind answers before a run's container: ping, the sweep's list, the image. */
export function upTo(hangAt: string, more: Record<string, unknown> = {}): (call: string) => unknown {
  const known: Record<string, unknown> = {
    'GET /_ping': 'OK',
    'GET /containers/json': [],
    'GET /images/localhost/faults:1/json': { Config: { Env: [] } },
    ...more,
  };
  return (call) => (call.startsWith(hangAt) ? undefined : known[call]);
}
