import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors/app-error';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the caller's key ("default" when auth is off). */
    tenant: string;
  }
}

export const DEFAULT_TENANT = 'default';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Bearer-key auth on every route but `/healthz`. Keys are compared in constant time (over their
 * SHA-256, so the length leaks nothing either). WebSocket upgrades may pass `?access_token=` instead (browsers cannot set headers there).
 */
export function registerAuth(app: FastifyInstance, apiKeys: Map<string, string> | null): void {
  app.decorateRequest('tenant', DEFAULT_TENANT);
  if (!apiKeys) return;
  const keys = [...apiKeys].map(([key, tenant]) => ({ digest: digest(key), tenant }));
  app.addHook('onRequest', async (request) => {
    if (request.url === '/healthz' || request.url.startsWith('/healthz?')) return;
    const presented = presentedKey(request);
    if (!presented) throw new AppError(401, 'unauthorized', 'missing API key: send Authorization: Bearer <key>');
    const d = digest(presented);
    let tenant: string | undefined;
    for (const k of keys) if (timingSafeEqual(k.digest, d)) tenant = k.tenant;
    if (!tenant) throw new AppError(401, 'unauthorized', 'invalid API key');
    request.tenant = tenant;
  });
}

function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice(7).trim() || undefined;
  if (request.headers.upgrade?.toLowerCase() !== 'websocket') return undefined;
  const token = (request.query as Record<string, unknown> | undefined)?.access_token;
  return typeof token === 'string' && token ? token : undefined;
}
