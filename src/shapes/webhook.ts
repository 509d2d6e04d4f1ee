import { z } from 'zod';

/** The task events a webhook can ask for: the one list (the store, the routes and the document read it). */
export const webhookEventSchema = z.enum(['task.started', 'task.finished', 'task.paused', 'task.resumed', 'approval.requested', 'tool.requested']);
export const WEBHOOK_EVENTS = webhookEventSchema.options;
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

export const createWebhookBodySchema = z.object({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048),
  events: z.array(webhookEventSchema).min(1).max(WEBHOOK_EVENTS.length).optional().describe('default: every event'),
});

export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(webhookEventSchema),
  createdAt: z.string(),
  failingSince: z.string().nullable().describe('when its current run of failed attempts began; null while it delivers'),
  disabled: z
    .object({ at: z.string(), reason: z.string() })
    .nullable()
    .describe('set when every attempt failed for WEBHOOK_DISABLE_AFTER_MS: nothing is queued for it until POST /webhooks/{id}/enable'),
});

export const createdWebhookSchema = webhookSchema.extend({
  secret: z.string().describe('whsec_…: verify deliveries with it (Standard Webhooks); shown only in this answer'),
});

export const webhookListSchema = z.object({ webhooks: z.array(webhookSchema) });

export const deliverySchema = z.object({
  id: z.string().describe('the webhook-id header of every attempt'),
  event: webhookEventSchema,
  taskId: z.string(),
  attempts: z.number().int(),
  status: z.enum(['pending', 'delivered', 'failed']),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  deliveredAt: z.string().nullable(),
  nextAttemptAt: z.string().nullable().describe('while pending'),
});

export const deliveryListSchema = z.object({ deliveries: z.array(deliverySchema), nextCursor: z.string().nullable() });

/** The body every delivery POSTs (thin: the task's ids and status; read the rest with GET /tasks/{id}). */
export const webhookPayloadSchema = z.object({
  type: webhookEventSchema,
  timestamp: z.string(),
  data: z.object({
    taskId: z.string(),
    status: z.string(),
    parentTaskId: z.string(),
    userId: z.string(),
    toolCallId: z.string().nullable(),
    sessionId: z.string(),
  }),
});
