import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { KEY_ROLES } from '../shapes/access.ts';
import { AppError } from '../errors/app-error.ts';
import { contextIdSchema, taskIdParamsSchema, taskOutputSchema } from '../shapes/task.ts';
import { iso } from '../shapes/time.ts';
import type { AccessStore } from '../store/access-store.ts';
import type { LifecycleSystem } from '../tasks/systems/lifecycle-system.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { erasedIdOf } from '../tasks/systems/lifecycle-system.ts';
import { fingerprintOf, keyHash } from './auth.ts';
import { errors, json } from './openapi.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * An audited route: what a successful call is recorded as in the audit log (the action, or a
     * function of the request giving it, and optionally the target; by default the URL's path).
     */
    audit?: string | ((request: FastifyRequest) => { action: string; target?: string });
  }
}

/**
 * The path a request acted on, spelled one way: its route's pattern with the parameters as the
 * route read them (decoded), so `/budgets/user/u%2D1` and `/budgets/user/u-1` are both recorded as
 * `/budgets/user/u-1`, and an erasure that looks for the id finds every entry naming it.
 */
function canonicalPath(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  if (!pattern) return request.url.split('?')[0];
  const params = (request.params ?? {}) as Record<string, unknown>;
  return pattern.replace(/:(\w+)|\*/g, (whole, name: string | undefined) => {
    const value = params[name ?? '*'];
    return typeof value === 'string' ? value : whole;
  });
}

/**
 * The audit log's writer: every audited route's successful answer (below 400) is recorded before
 * it leaves, with the caller key's fingerprint; a created resource's id (from the answer) joins
 * the target.
 */
export function registerAudit(app: FastifyInstance, access: AccessStore, now: () => number): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const audit = request.routeOptions.config?.audit;
    if (!audit || reply.statusCode >= 400) return payload;
    const said = typeof audit === 'string' ? { action: audit } : audit(request);
    let target = said.target ?? canonicalPath(request);
    if (reply.statusCode === 201 && typeof payload === 'string') {
      const id = (JSON.parse(payload) as { id?: unknown }).id;
      if (typeof id === 'string') target = `${target}/${id}`;
    }
    await access.audit({ tenant: request.tenant, key: request.keyFingerprint, action: said.action, target }, now());
    return payload;
  });
}

const keyRoleSchema = z.enum(KEY_ROLES as ['admin', 'submit', 'read']);
const keySchema = z.object({
  id: z.string(),
  tenant: z.string(),
  role: keyRoleSchema,
  name: z.string().nullable(),
  fingerprint: z.string().describe('sha256: and the first 12 hex digits of the key\u2019s hash, as the audit log names it'),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});

/**
 * Data lifecycle and access (admin keys only, see auth.ts): purging a task, erasing a user, keys
 * made at run time, the audit log.
 */
export const accessRoutes: FastifyPluginAsyncZod<{
  tasks: TaskService;
  lifecycle: LifecycleSystem;
  access: AccessStore;
  authRequired: boolean;
  now: () => number;
}> = async (app, { tasks, lifecycle, access, authRequired, now }) => {
  app.delete(
    '/tasks/:id',
    {
      config: { access: 'admin', audit: 'task.purged' },
      schema: {
        operationId: 'purgeTask',
        summary: "Purge a finished task's content (admin)",
        description:
          'Removes its prompt, conversation, events, steering messages, summary and output; its usage (tokens, cost, record, ' +
          'billed calls, roll-ups) stays. The workspace files belong to the parent task and stay. Again: 200, nothing more to ' +
          'do. 409 task_not_finished while it runs (cancel it first).',
        params: taskIdParamsSchema,
        response: { 200: json('The task, purged: true', taskOutputSchema), ...errors(400, 403, 404, 409) },
      },
    },
    async (request) => tasks.output(await lifecycle.deleteTask(request.tenant, request.params.id)),
  );

  app.delete(
    '/users/:userId',
    {
      // The erased id, not the user's: the audit log must not keep what was erased.
      config: { access: 'admin', audit: (r) => ({ action: 'user.erased', target: `/users/${erasedIdOf((r.params as { userId: string }).userId)}` }) },
      schema: {
        operationId: 'eraseUser',
        summary: 'Erase a user: purge every task of theirs and remove their memories, keep their usage under an opaque id (admin)',
        description:
          'Every task of the user (in this tenant) is purged as DELETE /tasks/:id does, and their memory folders (definitions with ' +
          '`memory: user`) are removed; their usage records, roll-ups and standing ' +
          'budget stay, with userId replaced by `erased:<first 16 hex of sha256(userId)>`. 409 user_has_unfinished_tasks while one ' +
          'of their tasks runs, waits or is paused (cancel them first). Erasing again finds nothing: { tasks: 0, events: 0, memories: 0 }.',
        params: z.object({ userId: contextIdSchema }),
        response: {
          200: json(
            'What was purged',
            z.object({
              tasks: z.number().int(),
              events: z.number().int(),
              memories: z.number().int().describe('memory folders removed (one per definition with `memory: user`)'),
              erasedAs: z.string().describe('the id their usage is kept under'),
            }),
          ),
          ...errors(400, 403, 409),
        },
      },
    },
    async (request) => lifecycle.eraseUser(request.tenant, request.params.userId),
  );

  app.get(
    '/audit',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'listAudit',
        summary: 'Who changed what: budgets, webhooks, keys, approvals, deletions (admin)',
        description: 'Newest first. `key` is the caller key\u2019s fingerprint (sha256:…), never the key. Kept past RETENTION_DAYS.',
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100), cursor: z.string().max(64).optional() }),
        response: {
          200: json(
            'A page of the audit log',
            z.object({
              entries: z.array(z.object({ id: z.string(), at: z.string(), key: z.string(), action: z.string(), target: z.string() })),
              nextCursor: z.string().nullable(),
            }),
          ),
          ...errors(400, 403),
        },
      },
    },
    async (request) => {
      const page = await access.auditPage(request.tenant, request.query.limit, request.query.cursor);
      return {
        entries: page.rows.map((e) => ({ id: e.id, at: iso(e.at), key: e.key, action: e.action, target: e.target })),
        nextCursor: page.nextCursor,
      };
    },
  );

  const keyView = (k: Awaited<ReturnType<AccessStore['listKeys']>>[number]) => ({
    id: k.id,
    tenant: k.tenant,
    role: k.role,
    name: k.name,
    fingerprint: fingerprintOf(Buffer.from(k.hash, 'hex')),
    createdAt: iso(k.createdAt),
    revokedAt: iso(k.revokedAt),
  });
  const needsAuth = () => {
    if (!authRequired) throw new AppError(409, 'auth_disabled', 'authentication is off (API_KEYS is unset): keys would not be asked for');
  };

  app.post(
    '/keys',
    {
      config: { access: 'admin', audit: 'key.created' },
      schema: {
        operationId: 'createKey',
        summary: 'Make an API key for this tenant (admin); it is shown once',
        description:
          'Stored as its SHA-256 only. Works on every instance within seconds, beside the keys of API_KEYS; DELETE /keys/:id ' +
          'revokes it (within 5 s everywhere). 409 auth_disabled while API_KEYS is unset.',
        body: z.object({ role: keyRoleSchema.default('submit'), name: z.string().min(1).max(200).optional() }),
        response: { 201: json('The key (its only appearance) and what it is', keySchema.extend({ key: z.string() })), ...errors(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      needsAuth();
      const key = `sk_${randomBytes(24).toString('base64url')}`;
      const row = await access.createKey({ tenant: request.tenant, role: request.body.role, name: request.body.name ?? null, hash: keyHash(key) }, now());
      return reply.code(201).send({ ...keyView(row), key });
    },
  );

  app.get(
    '/keys',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'listKeys',
        summary: "This tenant's keys made with POST /keys (admin), newest first; never the keys themselves",
        response: { 200: json('The keys', z.object({ keys: z.array(keySchema) })), ...errors(403) },
      },
    },
    async (request) => ({ keys: (await access.listKeys(request.tenant)).map(keyView) }),
  );

  app.delete(
    '/keys/:id',
    {
      config: { access: 'admin', audit: 'key.revoked' },
      schema: {
        operationId: 'revokeKey',
        summary: 'Revoke a key made with POST /keys (admin)',
        description: 'It stops working on every instance within 5 s. 404 for an unknown (or already revoked) key of this tenant.',
        params: z.object({ id: z.string().min(1).max(64) }),
        response: { 204: z.undefined().describe('Revoked'), ...errors(403, 404) },
      },
    },
    async (request, reply) => {
      if (!(await access.revokeKey(request.tenant, request.params.id, now()))) throw new AppError(404, 'not_found', `no key ${request.params.id}`);
      return reply.code(204).send();
    },
  );
};
