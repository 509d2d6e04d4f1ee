import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_ROLES, type KeyRole } from '../shapes/access.ts';
import { startService, type TestService } from '../../test/support/harness.ts';
import { accessDenies, declareRouteAccess, ROUTE_ACCESS } from './route-access.ts';

/** Who may call what: each key role, or `public` for no key at all. */
const allowed = (access: unknown, method: string, url: string) =>
  access === 'public' ? 'public' : KEY_ROLES.filter((role) => accessDenies(access, role, method, url) === null).join(' ');

describe('the role check', () => {
  it('lets each role call what its access says, and a read key only read', () => {
    expect(allowed('public', 'GET', '/healthz')).toBe('public');
    expect(allowed('read', 'GET', '/tasks')).toBe('admin submit read');
    expect(allowed('metrics', 'GET', '/metrics')).toBe('admin submit read');
    expect(allowed('submit', 'POST', '/tasks')).toBe('admin submit');
    expect(allowed('submit', 'GET', '/x')).toBe('admin submit');
    expect(allowed('admin', 'GET', '/audit')).toBe('admin');
    expect(allowed('oversee', 'GET', '/webhooks')).toBe('admin read');
    // Whatever a route declares, a read key never writes.
    expect(allowed('read', 'POST', '/x')).toBe('admin submit');
    expect(allowed('oversee', 'POST', '/x')).toBe('admin');
  });

  it('says why, in the words of the role that was refused', () => {
    expect(accessDenies('admin', 'submit', 'DELETE', '/tasks/:id')).toBe('may not DELETE /tasks/:id: an admin key may');
    expect(accessDenies('submit', 'read', 'POST', '/tasks')).toBe('may only read (GET and streams), not POST /tasks');
    expect(accessDenies('oversee', 'submit', 'GET', '/budgets/:scope/:id')).toBe('has no budgets or webhooks (GET /budgets/:scope/:id)');
  });

  it('refuses a route that declares no access, or one it does not know, to every key', () => {
    for (const access of [undefined, null, '', 'everyone', 'ADMIN', 42])
      for (const role of KEY_ROLES) expect(accessDenies(access, role, 'GET', '/x'), `${String(access)} ${role}`).toMatch(/does not say who may/);
  });
});

describe('a server whose route declares no access', () => {
  const serverWith = async (config: object) => {
    const app = Fastify();
    declareRouteAccess(app);
    app.get('/declared', { config: { access: 'read' } }, async () => 'ok');
    app.get('/other', { config }, async () => 'ok');
    return app;
  };

  it('does not start, and names the route', async () => {
    const app = await serverWith({});
    await expect(app.ready()).rejects.toThrow(/GET \/other/);
    const wrong = await serverWith({ access: 'everyone' });
    await expect(wrong.ready()).rejects.toThrow(/GET \/other, HEAD \/other/);
  });

  it('starts once every route declares one', async () => {
    const app = await serverWith({ access: 'public' });
    await app.ready();
    expect(app.routeAccess.routes().map((r) => `${r.method} ${r.url} ${String(r.access)}`)).toEqual([
      'GET /declared read',
      'HEAD /declared read',
      'GET /other public',
      'HEAD /other public',
    ]);
    expect(app.routeAccess.isPublicPath('/other')).toBe(true);
    expect(app.routeAccess.isPublicPath('/declared')).toBe(false);
    await app.close();
  });
});

/**
 * Who may call each route, as auth.ts decided it by URL prefix before the routes declared it
 * (computed with that code for every route of d880d62, and for the replay route since): the
 * declarations must give the same.
 */
const BEFORE: Record<string, string> = {
  'DELETE /budgets/:scope/:id': 'admin',
  'DELETE /keys/:id': 'admin',
  'DELETE /mcp': 'submit admin',
  'DELETE /tasks/:id': 'admin',
  'DELETE /users/:userId': 'admin',
  'DELETE /webhooks/:id': 'admin',
  'DELETE /workspaces/:parentTaskId/files/*': 'admin',
  'GET /.well-known/agent-card.json': 'public',
  'GET /agents': 'read submit admin',
  'GET /audit': 'admin',
  'GET /budgets/:scope/:id': 'read admin',
  'GET /docs/': 'public',
  'GET /docs/json': 'public',
  'GET /docs/static/*': 'public',
  'GET /docs/static/index.html': 'public',
  'GET /docs/static/swagger-initializer.js': 'public',
  'GET /docs/yaml': 'public',
  'GET /events': 'read submit admin',
  'GET /healthz': 'public',
  'GET /keys': 'admin',
  'GET /mcp': 'read submit admin',
  'GET /metrics': 'read submit admin',
  'GET /stream': 'read submit admin',
  'GET /tasks': 'read submit admin',
  'GET /tasks/:id': 'read submit admin',
  'GET /tasks/:id/changes.diff': 'read submit admin',
  'GET /tasks/:id/events': 'read submit admin',
  'GET /tasks/:id/files/*': 'read submit admin',
  'GET /tasks/:id/messages': 'read submit admin',
  'GET /tasks/:id/stream': 'read submit admin',
  'GET /ui': 'public',
  'GET /ui/': 'public',
  'GET /ui/assets/:file': 'public',
  'GET /usage': 'read submit admin',
  'GET /usage/records': 'read submit admin',
  'GET /webhooks': 'read admin',
  'GET /webhooks/:id/deliveries': 'read admin',
  'GET /workspaces/:parentTaskId': 'read submit admin',
  'GET /workspaces/:parentTaskId/files/*': 'read submit admin',
  'POST /a2a': 'submit admin',
  'POST /keys': 'admin',
  'POST /mcp': 'submit admin',
  'POST /tasks': 'submit admin',
  'POST /tasks/:id/apply': 'submit admin',
  'POST /tasks/:id/approvals/:requestId': 'submit admin',
  'POST /tasks/:id/cancel': 'submit admin',
  'POST /tasks/:id/messages': 'submit admin',
  'POST /tasks/:id/replay': 'submit admin',
  'POST /tasks/:id/resume': 'submit admin',
  'POST /tasks/:id/tool-results/:requestId': 'submit admin',
  'POST /webhooks': 'admin',
  'POST /webhooks/:id/enable': 'admin',
  'POST /webhooks/deliveries/:deliveryId/retry': 'admin',
  'PUT /budgets/:scope/:id': 'admin',
  'PUT /workspaces/:parentTaskId/files/*': 'submit admin',
};
const sorted = (who: string) => who.split(' ').sort().join(' ');

describe("the service's routes", () => {
  const KEYS: Record<KeyRole, string> = { admin: 'key-admin-0123456789', submit: 'key-submit-0123456789', read: 'key-read-0123456789' };
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { API_KEYS: KEY_ROLES.map((role) => `${KEYS[role]}:acme:${role}`).join(',') } });
  });
  afterAll(() => svc.close());

  it('each declare an access, and the same roles may call each as before', () => {
    const routes = svc.app.server.routeAccess.routes();
    for (const r of routes) expect(ROUTE_ACCESS, `${r.method} ${r.url}`).toContain(r.access);
    const now = Object.fromEntries(routes.map((r) => [`${r.method} ${r.url}`, sorted(allowed(r.access, r.method, r.url))]));
    for (const [route, who] of Object.entries(BEFORE)) {
      expect(now[route], route).toBe(sorted(who));
      // A GET's HEAD twin is called by the same keys.
      if (route.startsWith('GET ')) expect(now[route.replace('GET', 'HEAD')], route).toBe(sorted(who));
    }
  });

  it('answers as declared over HTTP: public without a key, 403 for a role the route does not allow', async () => {
    const as = (role: KeyRole | null, method: 'GET' | 'POST' | 'DELETE', url: string) =>
      svc.inject({ method, url, headers: role ? { authorization: `Bearer ${KEYS[role]}` } : {} }).then((r) => r.statusCode);
    expect(await as(null, 'GET', '/healthz')).toBe(200);
    expect(await as(null, 'GET', '/docs/json')).toBe(200);
    expect(await as(null, 'GET', '/docs')).not.toBe(401);
    expect(await as(null, 'GET', '/tasks')).toBe(401);
    expect(await as('read', 'GET', '/tasks')).toBe(200);
    expect(await as('read', 'POST', '/tasks')).toBe(403);
    expect(await as('submit', 'GET', '/webhooks')).toBe(403);
    expect(await as('read', 'GET', '/webhooks')).toBe(200);
    expect(await as('submit', 'GET', '/audit')).toBe(403);
    expect(await as('admin', 'GET', '/audit')).toBe(200);
    expect(await as('submit', 'DELETE', '/tasks/none')).toBe(403);
    expect(await as('admin', 'DELETE', '/tasks/none')).toBe(404);
    // A URL no route answers: a key is needed, then it is not found.
    expect(await as(null, 'GET', '/no-such-route')).toBe(401);
    expect(await as('read', 'GET', '/no-such-route')).toBe(404);
  });
});
