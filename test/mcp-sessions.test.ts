import { describe, expect, it } from 'vitest';
import { serviceForTests, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * `/mcp` sessions are shared fairly: one tenant (or one key) holds at most its share of the
 * instance's sessions and is answered 429 with Retry-After past it, while other tenants still get
 * theirs; a session that ends, or sits idle past MCP_SESSION_IDLE_MS, gives its place back.
 */
const KEYS = 'key-a1:tenant-a,key-a2:tenant-a,key-b:tenant-b';
const capped = serviceForTests({ env: { API_KEYS: KEYS, MCP_SESSIONS_PER_KEY: '2', MCP_SESSIONS_PER_TENANT: '3', MCP_MAX_SESSIONS: '10' } });
const idle = serviceForTests({ env: { API_KEYS: KEYS, MCP_SESSIONS_PER_KEY: '2', MCP_SESSION_IDLE_MS: '1000' } });

const PROTOCOL = '2025-06-18';
const headers = (key: string, session?: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${key}`,
  ...(session && { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL }),
});

/** An `initialize` as an MCP host sends it: the status, the session it opened (if any), the body. */
async function initialize(svc: TestService, key: string) {
  const res = await fetch(`${svc.url}/mcp`, {
    method: 'POST',
    headers: headers(key),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'fill', version: '1' } },
    }),
  });
  const body = await res.text();
  return { status: res.status, session: res.headers.get('mcp-session-id'), retryAfter: res.headers.get('retry-after'), body };
}

async function opened(svc: TestService, key: string): Promise<string> {
  const res = await initialize(svc, key);
  expect(res.status, res.body).toBe(200);
  expect(res.session).toBeTruthy();
  return res.session!;
}

function expectRefused(res: Awaited<ReturnType<typeof initialize>>, limit: string) {
  expect(res.status, res.body).toBe(429);
  expect(JSON.parse(res.body)).toEqual({ error: { code: 'too_many_sessions', message: expect.stringContaining(limit) } });
  expect(Number(res.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(res.session).toBeNull();
}

describe('/mcp sessions per tenant and per key', () => {
  it('a key, then a tenant, past its share is 429 with Retry-After; another tenant still gets a session; an ended session frees its place', async () => {
    const svc = capped.svc;
    await opened(svc, 'key-a1');
    const kept = await opened(svc, 'key-a1');
    expectRefused(await initialize(svc, 'key-a1'), 'MCP_SESSIONS_PER_KEY');

    // Another key of the same tenant: its own share, up to the tenant's.
    const ended = await opened(svc, 'key-a2');
    expectRefused(await initialize(svc, 'key-a2'), 'MCP_SESSIONS_PER_TENANT');

    // Another tenant is not locked out.
    await opened(svc, 'key-b');

    // The sessions held still work.
    const listed = await fetch(`${svc.url}/mcp`, {
      method: 'POST',
      headers: headers('key-a1', kept),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain('"name":"task"');

    // Ending one (DELETE /mcp) gives the tenant its place back at once.
    const { 'content-type': _json, ...bare } = headers('key-a2', ended);
    const deleted = await fetch(`${svc.url}/mcp`, { method: 'DELETE', headers: bare });
    expect(deleted.status).toBe(200);
    await opened(svc, 'key-a2');
    expectRefused(await initialize(svc, 'key-a2'), 'MCP_SESSIONS_PER_TENANT');
  });

  it('a session idle past MCP_SESSION_IDLE_MS is ended, and its place given back', async () => {
    const svc = idle.svc;
    const first = await opened(svc, 'key-a1');
    await opened(svc, 'key-a1');
    const refused = await initialize(svc, 'key-a1');
    expectRefused(refused, 'MCP_SESSIONS_PER_KEY');
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(1);
    // Once the others sat idle for a second, a new one is admitted, and the idle ones are gone.
    await until(async () => (await initialize(svc, 'key-a1')).status === 200);
    const stale = await fetch(`${svc.url}/mcp`, {
      method: 'POST',
      headers: headers('key-a1', first),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(stale.status).toBe(404);
  });
});
