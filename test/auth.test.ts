import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { openStream } from './support/ws-client';
import { loadConfig } from '../src/config/config';

let svc: TestService;
const A = { authorization: 'Bearer key-alpha-0123456789' };
const A2 = { authorization: 'Bearer key-alpha-second' };
const B = { authorization: 'Bearer key-beta-9876543210' };
let taskA: { id: string; artifacts: Array<{ url: string; path: string }> };

beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: 'key-alpha-0123456789:alpha, key-alpha-second:alpha,key-beta-9876543210:beta' } });
  svc.model.script('TENANT-A', [
    { toolCalls: [{ name: 'write_file', args: { path: 'a.md', content: 'alpha data' } }], usage: { input: 70, output: 7 } },
    { toolCalls: [{ name: 'complete', args: { summary: 'alpha', paths: ['a.md'] } }] },
  ]);
  const res = await svc.inject({
    method: 'POST',
    url: '/tasks?wait=true',
    payload: taskBody({ prompt: 'TENANT-A', context: { parentTaskId: 'T-shared', userId: 'u-1' } }),
    headers: A,
  });
  taskA = res.json();
});
afterAll(() => svc.close());

describe('API keys', () => {
  it('requires a key on every route but /healthz and the API documentation', async () => {
    expect((await svc.inject({ url: '/healthz' })).statusCode).toBe(200);
    // A browser can read the docs UI and the OpenAPI document without a key: no tenant data there.
    expect((await svc.inject({ url: '/docs/json' })).json().openapi).toMatch(/^3\./);
    expect((await svc.inject({ url: '/docs' })).statusCode).toBeLessThan(400);
    for (const [method, url] of [
      ['GET', '/tasks'],
      ['POST', '/tasks'],
      ['GET', `/tasks/${taskA.id}`],
      ['POST', `/tasks/${taskA.id}/cancel`],
      ['GET', '/usage'],
      ['GET', '/usage/records'],
      ['GET', '/agents'],
      ['GET', '/metrics'],
      ['GET', '/workspaces/T-shared/files/a.md'],
    ] as const) {
      const res = await svc.inject({ method, url, payload: method === 'POST' ? taskBody() : undefined });
      expect(res.statusCode, url).toBe(401);
      expect(res.json(), url).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
    const wrong = await svc.inject({ url: '/tasks', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.message).toBe('invalid API key');
    // A key in the query string counts only for WebSocket upgrades.
    expect((await svc.inject({ url: '/tasks?access_token=key-alpha-0123456789' })).statusCode).toBe(401);
  });

  it("lets any key of a tenant see that tenant's tasks", async () => {
    expect(taskA).toMatchObject({ status: 'completed' });
    const res = await svc.inject({ url: `/tasks/${taskA.id}`, headers: A2 });
    expect(res.statusCode).toBe(200);
  });
});

describe('tenant isolation', () => {
  it("answers 404 for another tenant's task, cancel and stream", async () => {
    expect((await svc.inject({ url: `/tasks/${taskA.id}`, headers: B })).statusCode).toBe(404);
    expect((await svc.inject({ method: 'POST', url: `/tasks/${taskA.id}/cancel`, headers: B })).statusCode).toBe(404);
    const err = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${taskA.id}/stream`, B).catch((e) => e);
    expect(err.statusCode).toBe(404);
  });

  it('scopes lists and usage to the tenant', async () => {
    expect((await svc.inject({ url: '/tasks', headers: B })).json()).toEqual({ tasks: [], nextCursor: null });
    expect((await svc.inject({ url: '/tasks', headers: A })).json().tasks.map((t: { id: string }) => t.id)).toEqual([taskA.id]);
    expect((await svc.inject({ url: '/usage', headers: B })).json().totals).toMatchObject({ tasks: 0, inputTokens: 0 });
    expect((await svc.inject({ url: '/usage', headers: A })).json().totals).toMatchObject({ tasks: 1, inputTokens: 170 });
    expect((await svc.inject({ url: '/usage/records', headers: B })).json().records).toEqual([]);
  });

  it('gives each tenant its own workspace folder, even for the same parentTaskId', async () => {
    expect(taskA.artifacts[0].path).toBe(path.join(svc.config.workspacesDir, '@alpha', 'T-shared', 'a.md'));
    const own = await svc.inject({ url: taskA.artifacts[0].url, headers: A });
    expect(own.statusCode).toBe(200);
    expect(own.body).toBe('alpha data');
    expect((await svc.inject({ url: taskA.artifacts[0].url, headers: B })).statusCode).toBe(404);
    let seen = '';
    svc.model.script('TENANT-B', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'read_file', args: { path: 'a.md' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'b', paths: [] } }] };
    });
    await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ prompt: 'TENANT-B', context: { parentTaskId: 'T-shared', userId: 'u-1' } }),
      headers: B,
    });
    expect(seen).toContain('does not exist');
    expect(readdirSync(svc.config.workspacesDir).sort()).toEqual(['@alpha', '@beta']);
  });

  it('scopes the parent stream to the tenant', async () => {
    const streamB = await openStream(`${svc.url.replace('http', 'ws')}/stream?parentTaskId=T-shared`, B);
    svc.model.script('TENANT-A-LIVE', [{ delayMs: 50, toolCalls: [{ name: 'complete', args: { summary: 'a', paths: [] } }] }]);
    const id = (
      await svc.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ prompt: 'TENANT-A-LIVE', context: { parentTaskId: 'T-shared', userId: 'u-1' } }),
        headers: A,
      })
    ).json().id;
    expect(streamB.messages.some((m) => m.taskId === id)).toBe(false);
    streamB.socket.close();
  });

  it('accepts ?access_token= on WebSocket upgrades', async () => {
    const client = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${taskA.id}/stream?access_token=key-alpha-0123456789`);
    expect((await client.closed).code).toBe(1000);
    expect(client.messages.at(-1)!.type).toBe('task.finished');
    const refused = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${taskA.id}/stream?access_token=wrong`).catch((e) => e);
    expect(refused.statusCode).toBe(401);
  });
});

describe('rate limit', () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startService({ env: { API_KEYS: 'ka:alpha,kb:beta', RATE_LIMIT_PER_MINUTE: '5' } });
  });
  afterAll(() => limited.close());

  it('limits each tenant on its own, in the contract shape', async () => {
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push((await limited.inject({ url: '/agents', headers: { authorization: 'Bearer ka' } })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const res = await limited.inject({ url: '/agents', headers: { authorization: 'Bearer ka' } });
    expect(res.json().error.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect((await limited.inject({ url: '/agents', headers: { authorization: 'Bearer kb' } })).statusCode).toBe(200);
    expect((await limited.inject({ url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('behind a reverse proxy (TRUST_PROXY)', () => {
  /** Wrong keys from one client behind the proxy, then the right key from another: its status. */
  async function otherClientAfterLockout(env: Record<string, string>) {
    const s = await startService({ env: { API_KEYS: 'key-proxy-0123456789:acme', AUTH_FAILURES_PER_MINUTE: '3', ...env } });
    try {
      const from = (ip: string, key: string) => s.inject({ url: '/tasks', headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': ip } });
      const wrong = [];
      for (let i = 0; i < 4; i++) wrong.push((await from('203.0.113.7', 'wrong-key-000000')).statusCode);
      expect(wrong).toEqual([401, 401, 401, 429]);
      return (await from('198.51.100.9', 'key-proxy-0123456789')).statusCode;
    } finally {
      await s.close();
    }
  }

  it('locks out only the client that sent wrong keys when the proxy is trusted', async () => {
    expect(await otherClientAfterLockout({ TRUST_PROXY: '1' })).toBe(200);
  });

  it('by default takes the TCP peer as the client: a header cannot choose an address', async () => {
    // Every client arrives from the same peer here, so the lockout is shared.
    expect(await otherClientAfterLockout({})).toBe(429);
  });

  it('refuses a value that is not a trust setting at start', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'everyone' })).toThrow(/TRUST_PROXY/);
  });
});
