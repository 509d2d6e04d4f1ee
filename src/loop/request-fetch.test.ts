import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { requestFetch } from './request-fetch.ts';
import { isWait, pulledSourceOf, type Pulls } from '../util/pulled-stream.ts';

let server: Server | null = null;
const agent = new Agent({ keepAliveTimeout: 1000 });
const modelFetch = requestFetch(agent);

/** A loopback server answering with `handle`; its base URL. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handle(req, res, body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(null));
  server = null;
});

describe('the model fetch over undici request', () => {
  it("sends the SDK's request as given and answers its status, text, headers and body", async () => {
    let seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string } | null = null;
    const url = await serve((req, res, body) => {
      seen = { method: req.method, url: req.url, headers: req.headers, body };
      res.writeHead(201, 'Made', [
        ['content-type', 'text/event-stream'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['x-request-id', 'r1'],
      ]);
      res.write('data: one\n\n');
      res.end('data: two\n\n');
    });
    const json = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo' }] });
    const res = await modelFetch(`${url}/v1/chat/completions?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: json,
    });
    expect(seen).toMatchObject({ method: 'POST', url: '/v1/chat/completions?x=1', body: json });
    expect(seen!.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer k', 'content-length': String(Buffer.byteLength(json)) });
    expect(seen!.headers['accept-encoding']).toBeUndefined();
    expect([res.status, res.statusText, res.ok]).toEqual([201, 'Made', true]);
    expect(res.headers.get('x-request-id')).toBe('r1');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.text()).toBe('data: one\n\ndata: two\n\n');
  });

  it("an event stream's body is the same bytes read by plain calls, as a stream, whole or cloned; its web stream is made only when asked for", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 20);
    });
    const ask = () => modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    const whole = 'data: one\n\ndata: two\n\n';
    const bytes = async (pulls: Pulls<Uint8Array>) => {
      let text = '';
      for (;;) {
        const next = pulls.next();
        if (isWait(next)) await next;
        else if (next === null) return text;
        else text += new TextDecoder().decode(next);
      }
    };

    // By plain calls: no stream until someone asks; then it is a locked one, as read by another reader.
    const plain = await ask();
    expect(plain).toBeInstanceOf(Response);
    expect(Object.keys(plain)).toEqual([]);
    const pulls = pulledSourceOf<Uint8Array>(plain)!;
    expect(await bytes(pulls)).toBe(whole);
    expect(plain.body!.locked).toBe(true);
    expect(plain.bodyUsed).toBe(true);
    expect(pulledSourceOf(plain)).toBeNull();

    // As a stream, whole, cloned.
    const asStream = await ask();
    expect(asStream.bodyUsed).toBe(false);
    let text = '';
    for await (const part of asStream.body!) text += new TextDecoder().decode(part);
    expect(text).toBe(whole);
    expect(asStream.bodyUsed).toBe(true);
    // Read whole once used: a rejected promise, as a Response's.
    await expect(asStream.text()).rejects.toThrow(TypeError);
    expect(pulledSourceOf(asStream)).toBeNull();
    expect(await (await ask()).text()).toBe(whole);
    const original = await ask();
    const copy = original.clone();
    expect([await copy.text(), await original.text()]).toEqual([whole, whole]);
    expect([original.status, original.ok, original.headers.get('content-type')]).toEqual([200, true, 'text/event-stream; charset=utf-8']);
  });

  it('an event stream that can have no body (204, 205) has none, as fetch gives it', async () => {
    for (const status of [204, 205]) {
      const url = await serve((_req, res) => {
        res.writeHead(status, { 'content-type': 'text/event-stream' });
        res.end();
      });
      const res = await modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      expect([res.status, res.body, await res.text()]).toEqual([status, null, '']);
      server!.closeAllConnections();
      await new Promise((r) => server!.close(r));
      server = null;
    }
  });

  it('reads the socket only as fast as the reader asks, and loses no byte when it does', async () => {
    let written = 0;
    let paused = false;
    const chunk = 'x'.repeat(64 * 1024);
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const pump = () => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            paused = true;
            return res.once('drain', pump);
          }
        }
        res.end();
      };
      pump();
    });
    const res = await modelFetch(`${url}/big`, { method: 'GET' });
    const reader = res.body!.getReader();
    let read = (await reader.read()).value!.byteLength;
    await new Promise((r) => setTimeout(r, 300));
    // The server's writes back up while nobody reads: a few socket buffers, not 64 MiB.
    expect(paused).toBe(true);
    expect(written).toBeLessThan(16 * 1024 * 1024);
    for (let part = await reader.read(); !part.done; part = await reader.read()) read += part.value.byteLength;
    expect(read).toBe(64 * 1024 * 1024);
  });

  it('a read takes everything that arrived while nobody read, in one chunk (as fetch did)', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        res.write(`data: ${n}\n\n`);
        if (++n === 5) {
          clearInterval(tick);
          res.end();
        }
      }, 10);
    });
    const res = await modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await new Promise((r) => setTimeout(r, 300));
    const reads: string[] = [];
    for await (const part of res.body!) reads.push(new TextDecoder().decode(part));
    expect(reads).toEqual(['data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n']);
  });

  it('fails as fetch fails: before the answer "fetch failed", a cut body "terminated", both with the cause', async () => {
    const closed = await serve(() => undefined);
    server!.close();
    await once(server!, 'close');
    const refused = await modelFetch(`${closed}/v1/messages`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect(refused).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });

    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '1000' });
      res.write('data: half\n\n');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const res = await modelFetch(`${url}/v1/messages`, { method: 'POST', body: '{}' });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: half\n\n');
    const cut = await reader.read().catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(TypeError);
    expect(cut).toMatchObject({ message: 'terminated', cause: expect.any(Error) });
  });

  it("ends with the signal's reason when aborted before the answer or in its body; a cancel closes the socket", async () => {
    let closedSockets = 0;
    const url = await serve((req, res) => {
      res.on('close', () => closedSockets++);
      if (req.url === '/slow') return;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    });
    const before = new AbortController();
    const pending = modelFetch(`${url}/slow`, { method: 'POST', body: '{}', signal: before.signal });
    setTimeout(() => before.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const already = new AbortController();
    already.abort(new Error('gone'));
    await expect(modelFetch(`${url}/x`, { signal: already.signal })).rejects.toThrow('gone');

    const during = new AbortController();
    const res = await modelFetch(`${url}/stream`, { method: 'POST', body: '{}', signal: during.signal });
    const reader = res.body!.getReader();
    await reader.read();
    during.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });

    const cancelled = await modelFetch(`${url}/stream`, { method: 'POST', body: '{}' });
    await cancelled.body!.cancel();
    await new Promise((r) => setTimeout(r, 100));
    expect(closedSockets).toBe(3);
  });

  it("does not follow a redirect, answers a bodiless status without a body, and hands what it does not cover to undici's fetch", async () => {
    const url = await serve((req, res, body) => {
      if (req.url === '/moved') return res.writeHead(307, { location: 'http://127.0.0.1:9/elsewhere' }).end();
      if (req.url === '/none') return res.writeHead(204).end();
      if (req.url === '/h') return res.end(req.headers.host);
      if (req.url === '/odd') return res.writeHead(600, { 'content-type': 'text/plain' }).end('odd');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${String(req.headers['x-h'])} ${body}`);
    });
    const moved = await modelFetch(`${url}/moved`, { method: 'POST', body: '{}' });
    expect([moved.status, moved.headers.get('location')]).toEqual([307, 'http://127.0.0.1:9/elsewhere']);
    const none = await modelFetch(`${url}/none`, {});
    expect([none.status, none.body]).toEqual([204, null]);
    // A status no Response can carry fails the call as fetch does, and the pool goes on.
    await expect(modelFetch(`${url}/odd`, {})).rejects.toMatchObject({ name: 'TypeError', message: 'fetch failed', cause: { name: 'RangeError' } });
    expect((await modelFetch(`${url}/none`, {})).status).toBe(204);
    expect(await (await modelFetch('data:text/plain,other%20schemes', {})).text()).toBe('other schemes');
    // A key pasted with its newline: refused before anything is sent, and not as a network failure.
    const refused = await modelFetch(`${url}/r`, { method: 'POST', headers: { authorization: 'Bearer k\r\n' }, body: '{}' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as Error).message).not.toBe('fetch failed');
    // A caller's host header, in any spelling, is fetch's to replace with the URL's.
    const hosted = await modelFetch(`${url}/h`, { method: 'POST', headers: { Host: 'elsewhere.example' }, body: 'b' });
    expect(await hosted.text()).toBe(new URL(url).host);
    // Another spelling of a method is fetch's to normalise.
    expect(await (await modelFetch(`${url}/m`, { method: 'post', headers: { 'x-h': 'l' }, body: 'b' })).text()).toBe('POST l b');
    const viaStream = await modelFetch(`${url}/s`, {
      method: 'PUT',
      headers: { 'x-h': 'h' },
      body: new Blob(['b']).stream(),
      duplex: 'half',
    });
    expect(await viaStream.text()).toBe('PUT h b');
    const viaHeaders = await modelFetch(new URL(`${url}/u`), { method: 'POST', headers: new Headers({ 'x-h': 'k' }), body: new Uint8Array([0x61]) });
    expect(await viaHeaders.text()).toBe('POST k a');
  });
});
