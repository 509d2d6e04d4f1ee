import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../errors/app-error.ts';
import { iso } from '../shapes/time.ts';
import { createdWebhookSchema, createWebhookBodySchema, deliveryListSchema, deliverySchema, webhookListSchema, webhookSchema } from '../shapes/webhook.ts';
import { nextPage } from '../store/paging.ts';
import { resolveTarget, WebhookTargetError } from '../network/safe-target.ts';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../shapes/webhook.ts';
import type { DeliveryRow, WebhookRow } from '../store/webhook-store.ts';
import type { Webhooks } from '../webhooks/webhooks.ts';
import { errors, json } from './openapi.ts';

export interface WebhooksRoutesOptions {
  webhooks: Webhooks;
  allowPrivate: boolean;
  /** Endpoints one tenant may register. */
  maxPerTenant: number;
  now: () => number;
}

const view = (w: WebhookRow) => ({
  id: w.id,
  url: w.url,
  events: w.events as WebhookEvent[],
  createdAt: iso(w.createdAt),
  failingSince: w.failingSince === null ? null : iso(w.failingSince),
  disabled: w.disabledAt === null ? null : { at: iso(w.disabledAt), reason: w.disabledReason ?? '' },
});
const deliveryView = (d: DeliveryRow): z.infer<typeof deliverySchema> => ({
  id: d.id,
  event: d.event as WebhookEvent,
  taskId: d.taskId,
  attempts: d.attempts,
  status: d.status,
  lastError: d.lastError,
  createdAt: iso(d.createdAt),
  deliveredAt: iso(d.deliveredAt),
  nextAttemptAt: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
});
const webhookParams = z.object({ id: z.string().regex(/^whk_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a webhook id (whk_<ulid>)') });

export const webhooksRoutes: FastifyPluginAsyncZod<WebhooksRoutesOptions> = async (app, { webhooks, allowPrivate, maxPerTenant, now }) => {
  app.post(
    '/webhooks',
    {
      config: { access: 'admin', audit: 'webhook.created' },
      schema: {
        operationId: 'createWebhook',
        summary: 'Register a webhook endpoint for task events',
        description:
          'Deliveries are POSTed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) with a WebhookPayload ' +
          'body, retried with exponential backoff for WEBHOOK_GIVE_UP_MS (3 days by default). A URL that resolves to a private, ' +
          'loopback or link-local address is refused unless WEBHOOK_ALLOW_PRIVATE=true. A tenant has at most ' +
          'MAX_WEBHOOKS_PER_TENANT endpoints (409 webhook_limit).',
        body: createWebhookBodySchema,
        response: { 201: json('The endpoint, with its secret (shown only here)', createdWebhookSchema), ...errors(400, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      try {
        await resolveTarget(new URL(request.body.url), allowPrivate);
      } catch (err) {
        if (err instanceof WebhookTargetError) throw new AppError(400, 'invalid_webhook_url', err.message);
        throw err;
      }
      const row = await webhooks.create(request.tenant, request.body.url, request.body.events ?? [...WEBHOOK_EVENTS], now(), maxPerTenant);
      if (!row) throw new AppError(409, 'webhook_limit', `a tenant has at most ${maxPerTenant} webhook endpoints (MAX_WEBHOOKS_PER_TENANT): delete one first`);
      return reply.status(201).send({ ...view(row), secret: row.secret });
    },
  );

  app.post(
    '/webhooks/:id/enable',
    {
      config: { access: 'admin', audit: 'webhook.enabled' },
      schema: {
        operationId: 'enableWebhook',
        summary: 'Turn a disabled endpoint back on',
        description: 'New events are queued for it again; deliveries that failed while it was disabled can be sent again with the retry route.',
        params: webhookParams,
        response: { 200: json('The endpoint', webhookSchema), ...errors(400, 404) },
      },
    },
    async (request) => {
      const row = await webhooks.enable(request.tenant, request.params.id);
      if (!row) throw notFound(`webhook ${request.params.id}`);
      return view(row);
    },
  );

  app.get(
    '/webhooks',
    {
      config: { access: 'oversee' },
      schema: {
        operationId: 'listWebhooks',
        summary: "The tenant's webhook endpoints (without secrets)",
        response: { 200: json('The endpoints', webhookListSchema) },
      },
    },
    async (request) => ({ webhooks: (await webhooks.list(request.tenant)).map(view) }),
  );

  app.delete(
    '/webhooks/:id',
    {
      config: { access: 'admin', audit: 'webhook.deleted' },
      schema: {
        operationId: 'deleteWebhook',
        summary: 'Remove a webhook endpoint (its pending deliveries are dropped)',
        params: webhookParams,
        response: { 204: z.undefined().describe('Removed'), ...errors(400, 404) },
      },
    },
    async (request, reply) => {
      if (!(await webhooks.delete(request.tenant, request.params.id))) throw notFound(`webhook ${request.params.id}`);
      return reply.status(204).send();
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { access: 'oversee' },
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: "An endpoint's deliveries, newest first",
        params: webhookParams,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50), cursor: z.string().max(64).optional() }),
        response: { 200: json('One page of deliveries; pass nextCursor as cursor for the next', deliveryListSchema), ...errors(400, 404) },
      },
    },
    async (request) => {
      if (!(await webhooks.get(request.tenant, request.params.id))) throw notFound(`webhook ${request.params.id}`);
      const page = nextPage(await webhooks.deliveries(request.params.id, request.query.limit + 1, request.query.cursor), request.query.limit);
      return { deliveries: page.rows.map(deliveryView), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/webhooks/deliveries/:deliveryId/retry',
    {
      config: { access: 'admin', audit: 'delivery.retried' },
      schema: {
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again now (a failed one becomes pending)',
        params: z.object({ deliveryId: z.string().regex(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be a delivery id (msg_<ulid>)') }),
        response: { 202: json('The delivery, pending', deliverySchema), ...errors(400, 404) },
      },
    },
    async (request, reply) => {
      const row = await webhooks.retry(request.tenant, request.params.deliveryId, now());
      if (!row) throw notFound(`delivery ${request.params.deliveryId}`);
      return reply.status(202).send(deliveryView(row));
    },
  );
};
