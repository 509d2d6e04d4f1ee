import type { FastifyInstance, RouteOptions } from 'fastify';
import type { KeyRole } from '../shapes/access.ts';

/**
 * Who may call a route. Each route declares it where it is written (`config: { access }`); the
 * auth hook (auth.ts) checks it, and a route that declares none keeps the service from starting.
 * - `public`: anyone, no key (liveness, the agent card, the documentation, the console's files);
 * - `read`: any key of the tenant (a read key is the least);
 * - `submit`: a submit or an admin key (running and steering tasks, uploads, MCP and A2A calls);
 * - `admin`: an admin key (deletions and erasures, keys, the audit log, changes to budgets and webhooks);
 * - `oversee`: a read or an admin key: budgets and webhooks, which a submit key (it runs tasks)
 *   has nothing to do with, not even to read them;
 * - `metrics`: any key, or METRICS_TOKEN (which opens this and nothing else).
 */
export const ROUTE_ACCESS = ['public', 'read', 'submit', 'admin', 'oversee', 'metrics'] as const;
export type RouteAccess = (typeof ROUTE_ACCESS)[number];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (see ROUTE_ACCESS): every route says. */
    access?: RouteAccess;
  }
  interface FastifyInstance {
    /** The routes registered on the server and what each declares (see `declareRouteAccess`). */
    routeAccess: RouteAccessTable;
  }
}

const known = new Set<unknown>(ROUTE_ACCESS);
const reads = (method: string) => method === 'GET' || method === 'HEAD';

/**
 * Why a key of `role` may not call `method route`, which declares `access`, or null when it may.
 * An access that is none of ROUTE_ACCESS (a route that declares nothing) is refused to every key,
 * admin's too; and whatever a route declares, a read key only reads.
 */
export function accessDenies(access: unknown, role: KeyRole, method: string, route: string): string | null {
  if (!known.has(access)) return `may not ${method} ${route}: the route does not say who may`;
  if (access === 'public' || role === 'admin') return null;
  if (access === 'admin') return `may not ${method} ${route}: an admin key may`;
  if (role === 'read' && !reads(method)) return `may only read (GET and streams), not ${method} ${route}`;
  if (role === 'read' && access === 'submit') return `may not ${method} ${route}: a submit or admin key may`;
  if (role === 'submit' && access === 'oversee') return `has no budgets or webhooks (${method} ${route})`;
  return null;
}

export interface DeclaredRoute {
  method: string;
  /** As Fastify writes it: `/tasks/:id/files/*`. */
  url: string;
  access: unknown;
}

export interface RouteAccessTable {
  /** Every route registered so far (HEAD twins included), with what it declares. */
  routes: () => DeclaredRoute[];
  /** Whether a route at this OpenAPI path (`/tasks/{id}`) is public. */
  isPublicPath: (openApiPath: string) => boolean;
}

/**
 * Records each route's declared access as it is registered (on `app.routeAccess`), and fails the
 * start (`ready`) while one declares none: a route nobody said who may call is refused to every
 * key, which is a bug to find before a caller does. Call it before any route is registered.
 */
export function declareRouteAccess(app: FastifyInstance): RouteAccessTable {
  // The options themselves: a plugin's routes get theirs from a hook of the context that
  // registers it (see openapi.ts), which runs after this one.
  const registered: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void registered.push(route));
  const routes = () =>
    registered.flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((method) => ({ method, url: r.url, access: r.config?.access })));
  const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{*}');
  const table: RouteAccessTable = {
    routes,
    isPublicPath: (path) => routes().some((r) => r.access === 'public' && openApiPath(r.url) === path),
  };
  app.decorate('routeAccess', table);
  app.addHook('onReady', async () => {
    const undeclared = routes().filter((r) => !known.has(r.access));
    if (undeclared.length > 0)
      throw new Error(`routes that do not say who may call them (config.access): ${undeclared.map((r) => `${r.method} ${r.url}`).join(', ')}`);
  });
  return table;
}
