import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyGrant, KeyRole } from '../shapes/access.ts';
import { AppError } from '../errors/app-error.ts';
import { accessDenies } from './route-access.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the caller's key ("default" when auth is off). */
    tenant: string;
    /** What the caller's key may do (`admin` when auth is off). */
    role: KeyRole;
    /** The caller's key as the audit log names it (`sha256:` and 12 hex digits), never the key. */
    keyFingerprint: string;
  }
  interface FastifyContextConfig {
    /**
     * A stream route, where `?access_token=` may stand in for the header (browsers' WebSocket and
     * EventSource cannot set it): on upgrade requests only (`websocket`), or on every request of
     * an event-stream route (`always`).
     */
    acceptsQueryToken?: 'websocket' | 'always';
  }
}

export const DEFAULT_TENANT = 'default';
const QUERY_TOKEN = 'access_token';

const digest = (s: string) => createHash('sha256').update(s).digest();

export interface AuthOptions {
  /** key → its tenant and role (API_KEYS); null turns auth off. */
  apiKeys: Map<string, KeyGrant> | null;
  /** Keys made with `POST /keys`, looked up by their SHA-256 (hex); answers are cached for KEY_CACHE_MS. */
  storedKeys?: { grantOf(hash: string): Promise<KeyGrant | undefined> };
  /** Wrong or missing keys one client address may present per minute before it is refused for that minute. */
  maxFailuresPerMinute: number;
  /** METRICS_TOKEN: a bearer token that reads `GET /metrics` and nothing else; set, it guards `/metrics` even with auth off. */
  metricsToken?: string | null;
}

/**
 * Bearer-key auth, by what each route declares (`config.access`, see route-access.ts): public
 * routes (liveness, the A2A agent card, the API documentation, the console's files) need no key.
 * Keys are compared in constant time (over their SHA-256, so the length leaks nothing either). A
 * METRICS_TOKEN opens the `metrics` route alone, so a Prometheus server needs no API key (no
 * tenant, no task) to scrape. WebSocket routes, on an upgrade, may take `?access_token=` instead,
 * spelled exactly so. An address that keeps presenting wrong keys is refused with 429 until its
 * minute is over, whatever key it sends then, so keys cannot be guessed at the rate limit's pace.
 */
export function registerAuth(app: FastifyInstance, opts: AuthOptions): void {
  app.decorateRequest('tenant', DEFAULT_TENANT);
  app.decorateRequest('role', 'admin');
  app.decorateRequest('keyFingerprint', 'anonymous');
  const { apiKeys } = opts;
  const metricsToken = opts.metricsToken ? digest(opts.metricsToken) : null;
  if (!apiKeys && !metricsToken) return;
  const keys = [...(apiKeys ?? [])].map(([key, grant]) => ({ digest: digest(key), grant }));
  const failures = createFailureCounter(opts.maxFailuresPerMinute, 60_000);
  const stored = opts.storedKeys && createKeyCache(opts.storedKeys);
  app.addHook('onRequest', async (request) => {
    // A URL no route answers: any key gets its 404.
    const access = request.is404 ? 'read' : request.routeOptions.config.access;
    if (access === 'public') return;
    const scrape = access === 'metrics';
    // With auth off, a METRICS_TOKEN guards /metrics and nothing else.
    if (!apiKeys && !scrape) return;
    const blocked = failures.blockedFor(request.ip);
    if (blocked > 0) {
      throw new AppError(429, 'too_many_auth_failures', 'too many requests with a wrong API key from this address; retry later', undefined, {
        'retry-after': String(Math.ceil(blocked / 1000)),
      });
    }
    const presented = presentedKey(request);
    if (!presented) {
      failures.add(request.ip);
      throw new AppError(401, 'unauthorized', 'missing API key: send Authorization: Bearer <key>');
    }
    const d = digest(presented);
    if (scrape && metricsToken && timingSafeEqual(metricsToken, d)) {
      request.role = 'read';
      return;
    }
    if (!apiKeys) {
      failures.add(request.ip);
      throw new AppError(401, 'unauthorized', 'invalid metrics token');
    }
    let grant: KeyGrant | undefined;
    for (const k of keys) if (timingSafeEqual(k.digest, d)) grant = k.grant;
    // A key made with POST /keys: found by its hash, which says nothing of the key.
    grant ??= await stored?.(d.toString('hex'));
    if (!grant) {
      failures.add(request.ip);
      throw new AppError(401, 'unauthorized', 'invalid API key');
    }
    request.tenant = grant.tenant;
    request.role = grant.role;
    request.keyFingerprint = fingerprintOf(d);
    const denied = accessDenies(access, grant.role, request.method, request.routeOptions.url ?? request.url.split('?')[0]);
    if (denied) throw new AppError(403, 'forbidden', `a ${grant.role} key ${denied}`);
  });
}

/** How a key appears in the audit log and in `/keys`: `sha256:` and the first 12 hex digits of its hash. */
export const fingerprintOf = (hash: Buffer) => `sha256:${hash.toString('hex').slice(0, 12)}`;
export const keyHash = (key: string) => digest(key).toString('hex');

/** How long an answer about a stored key holds: a revoked key stops working on every instance within it. */
export const KEY_CACHE_MS = 5_000;

/** Stored keys' answers by hash, for KEY_CACHE_MS (a wrong key costs one lookup per window, then the failure counter blocks it). */
function createKeyCache(store: NonNullable<AuthOptions['storedKeys']>) {
  const cache = new Map<string, { grant: KeyGrant | undefined; until: number }>();
  const MAX = 10_000;
  return async (hash: string): Promise<KeyGrant | undefined> => {
    const now = Date.now();
    const hit = cache.get(hash);
    if (hit && hit.until > now) return hit.grant;
    const grant = await store.grantOf(hash);
    if (cache.size >= MAX) cache.clear();
    cache.set(hash, { grant: grant && { tenant: grant.tenant, role: grant.role }, until: now + KEY_CACHE_MS });
    return grant;
  };
}

function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice(7).trim() || undefined;
  const accepts = request.routeOptions.config?.acceptsQueryToken;
  if (accepts !== 'always' && (accepts !== 'websocket' || request.headers.upgrade?.toLowerCase() !== 'websocket')) return undefined;
  // The raw query, not the parsed one: only the canonical spelling authenticates (it is the one
  // the log redaction is sure to catch), never `access%5Ftoken` or other encodings of the name.
  const q = request.url.indexOf('?');
  if (q === -1) return undefined;
  for (const pair of request.url.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq) !== QUERY_TOKEN) continue;
    try {
      return decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' ')) || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Removes every query parameter whose decoded name is `access_token` (any case, any encoding)
 * from a URL before it is logged: a key must never reach the logs.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // undecodable: compared as it is
      }
      return name.trim().toLowerCase() === QUERY_TOKEN ? `${rawName}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${pairs.join('&')}`;
}

/** Failed attempts per address in fixed windows; memory stays bounded however many addresses try. */
function createFailureCounter(max: number, windowMs: number) {
  const seen = new Map<string, { count: number; resetAt: number }>();
  const MAX_ADDRESSES = 100_000;
  return {
    add(ip: string) {
      const now = Date.now();
      const entry = seen.get(ip);
      if (entry && entry.resetAt > now) {
        entry.count++;
        return;
      }
      if (seen.size >= MAX_ADDRESSES) {
        for (const [k, v] of seen) if (v.resetAt <= now) seen.delete(k);
        // Still full: forget the oldest entries (Map order is insertion order).
        for (const k of seen.keys()) {
          if (seen.size < MAX_ADDRESSES) break;
          seen.delete(k);
        }
      }
      seen.set(ip, { count: 1, resetAt: now + windowMs });
    },
    /** Milliseconds until `ip` may try again; 0 when it may now. */
    blockedFor(ip: string): number {
      const entry = seen.get(ip);
      if (!entry) return 0;
      const left = entry.resetAt - Date.now();
      if (left <= 0) {
        seen.delete(ip);
        return 0;
      }
      return entry.count >= max ? left : 0;
    },
  };
}
