import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

const METRICS_TOKEN = 'scrape-token-0123456789';

/** GET over real HTTP, with a bearer key when given. */
async function get(svc: TestService, route: string, key?: string) {
  const res = await fetch(`${svc.url}${route}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

describe('/metrics with API_KEYS and METRICS_TOKEN', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { API_KEYS: 'ka:alpha,kb:beta:read', METRICS_TOKEN, RATE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => svc.close());

  it('answers the metrics token, and any API key, in the Prometheus text format', async () => {
    for (const key of [METRICS_TOKEN, 'ka', 'kb']) {
      const res = await get(svc, '/metrics', key);
      expect(res.status, key).toBe(200);
      expect(res.type).toMatch(/^text\/plain/);
      expect(res.body).toContain('# TYPE subagentd_');
    }
  });

  it('refuses a scrape without a key or with a wrong one, in the contract shape', async () => {
    for (const key of [undefined, 'not-the-token']) {
      const res = await get(svc, '/metrics', key);
      expect(res.status).toBe(401);
      expect(JSON.parse(res.body)).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
  });

  it('opens nothing but /metrics to the metrics token', async () => {
    for (const route of ['/agents', '/tasks', '/usage', '/keys']) {
      const res = await get(svc, route, METRICS_TOKEN);
      expect(res.status, route).toBe(401);
      expect(JSON.parse(res.body).error).toEqual({ code: 'unauthorized', message: 'invalid API key' });
    }
  });

  it("does not count scrapes against the rate limit, nor a tenant's own calls", async () => {
    // Twice the limit of scrapes, with the metrics token and with a tenant's key.
    for (let i = 0; i < 6; i++) {
      expect((await get(svc, '/metrics', METRICS_TOKEN)).status).toBe(200);
      expect((await get(svc, '/metrics', 'ka')).status).toBe(200);
    }
    // The tenant still has its whole minute's share, and the limit still holds past it.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(svc, '/agents', 'ka')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    // A tenant at its limit is still scraped.
    expect((await get(svc, '/metrics', 'ka')).status).toBe(200);
    expect((await get(svc, '/metrics', METRICS_TOKEN)).status).toBe(200);
  });
});

describe('/metrics with METRICS_TOKEN and auth off', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { METRICS_TOKEN } });
  });
  afterAll(() => svc.close());

  it('guards /metrics alone with the token', async () => {
    expect((await get(svc, '/metrics')).status).toBe(401);
    expect(JSON.parse((await get(svc, '/metrics', 'wrong')).body)).toEqual({ error: { code: 'unauthorized', message: 'invalid metrics token' } });
    const res = await get(svc, '/metrics', METRICS_TOKEN);
    expect(res.status).toBe(200);
    expect(res.body).toContain('# TYPE subagentd_');
    // Every other route stays open, as auth is off.
    expect((await get(svc, '/agents')).status).toBe(200);
    expect((await get(svc, '/healthz')).status).toBe(200);
  });
});

describe('/metrics with auth off and no METRICS_TOKEN', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { RATE_LIMIT_PER_MINUTE: '2' } });
  });
  afterAll(() => svc.close());

  it('is open, and a client at its limit is still scraped from its address', async () => {
    for (let i = 0; i < 3; i++) await get(svc, '/agents');
    expect((await get(svc, '/agents')).status).toBe(429);
    for (let i = 0; i < 4; i++) expect((await get(svc, '/metrics')).status).toBe(200);
  });
});
