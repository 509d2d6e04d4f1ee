import { randomBytes } from 'node:crypto';
import { and, desc, eq, lt, sql } from 'drizzle-orm';
import { ulid } from 'ulid';
import type { WrittenEvent } from '../events/event-log.ts';
import type { Db } from '../store/database.ts';
import { webhookDeliveries as d, webhooks as w } from '../store/schema.ts';
import type { TaskStore } from '../store/task-store.ts';

/** The task events a webhook can ask for. */
export const WEBHOOK_EVENTS = ['task.started', 'task.finished', 'task.paused', 'task.resumed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export type WebhookRow = typeof w.$inferSelect;
export type DeliveryRow = typeof d.$inferSelect;
export type TaskRowOf = NonNullable<ReturnType<TaskStore['getById']>>;

/** An A2A push-notification config as stored (one task's, in the webhook outbox's endpoints). */
export interface PushConfig {
  configId: string;
  taskId: string;
  url: string;
  token: string | null;
  authorization: string | null;
  version: string;
}

/** Formats what an A2A endpoint receives for an event of its task. */
export type A2aPayload = (task: TaskRowOf, event: WrittenEvent, version: string) => string;

/**
 * Webhook endpoints and their outbox. `enqueue` runs inside the event log's transaction: a
 * delivery row exists exactly when its event does, whatever happens to the process after.
 */
export function createWebhookStore(db: Db, store: TaskStore, a2aPayload?: A2aPayload) {
  const sqlite = db.$client;
  const endpointsOf = sqlite.prepare(
    'SELECT id, events, kind, a2a_version AS version FROM webhooks WHERE tenant = ? AND (task_id IS NULL OR task_id = ?)',
  );
  const anyEndpoint = sqlite.prepare('SELECT 1 FROM webhooks WHERE tenant = ? LIMIT 1');
  const webhook = eq(w.kind, 'webhook');
  const insertDelivery = sqlite.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_id, tenant, event, task_id, payload, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  const dueSql = sqlite.prepare(
    `SELECT d.id, d.webhook_id AS webhookId, d.tenant, d.event, d.task_id AS taskId, d.payload, d.status, d.attempts,
             d.next_attempt_at AS nextAttemptAt, d.last_error AS lastError, d.created_at AS createdAt, d.delivered_at AS deliveredAt,
             w.url, w.secret, w.kind, w.token, w.authorization, t.trace_parent AS traceparent
           FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id LEFT JOIN tasks t ON t.id = d.task_id
           WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at LIMIT ?`,
  );
  /** Tenants with no webhook cost one cached lookup per event batch. */
  const tenantsWithout = new Set<string>();

  return {
    create(tenant: string, url: string, events: WebhookEvent[], now: number): WebhookRow {
      const row = { id: `whk_${ulid(now)}`, tenant, url, events, secret: `whsec_${randomBytes(24).toString('base64')}`, createdAt: now };
      db.insert(w).values(row).run();
      tenantsWithout.delete(tenant);
      return db.select().from(w).where(eq(w.id, row.id)).get()!;
    },
    list(tenant: string): WebhookRow[] {
      return db.select().from(w).where(and(eq(w.tenant, tenant), webhook)).orderBy(w.id).all();
    },
    get(tenant: string, id: string): WebhookRow | undefined {
      return db.select().from(w).where(and(eq(w.tenant, tenant), eq(w.id, id), webhook)).get();
    },
    delete(tenant: string, id: string): boolean {
      return db.delete(w).where(and(eq(w.tenant, tenant), eq(w.id, id), webhook)).run().changes > 0;
    },

    /** Sets (creates or replaces) a push-notification config of a task. */
    putPush(tenant: string, config: PushConfig, now: number): PushConfig {
      sqlite.transaction(() => {
        db.delete(w).where(and(eq(w.tenant, tenant), eq(w.kind, 'a2a'), eq(w.taskId, config.taskId), eq(w.configId, config.configId))).run();
        db.insert(w)
          .values({
            id: `whk_${ulid(now)}`,
            tenant,
            url: config.url,
            events: [...WEBHOOK_EVENTS],
            secret: `whsec_${randomBytes(24).toString('base64')}`,
            createdAt: now,
            kind: 'a2a',
            taskId: config.taskId,
            configId: config.configId,
            token: config.token,
            authorization: config.authorization,
            a2aVersion: config.version,
          })
          .run();
      })();
      tenantsWithout.delete(tenant);
      return config;
    },
    /** A task's push-notification configs, oldest first (`configId` narrows to one). */
    pushConfigs(tenant: string, taskId: string, configId?: string): PushConfig[] {
      const where = and(eq(w.tenant, tenant), eq(w.kind, 'a2a'), eq(w.taskId, taskId), configId === undefined ? undefined : eq(w.configId, configId));
      return db
        .select()
        .from(w)
        .where(where)
        .orderBy(w.id)
        .all()
        .map((r) => ({ configId: r.configId!, taskId, url: r.url, token: r.token, authorization: r.authorization, version: r.a2aVersion ?? '1.0' }));
    },
    deletePush(tenant: string, taskId: string, configId: string): boolean {
      return db.delete(w).where(and(eq(w.tenant, tenant), eq(w.kind, 'a2a'), eq(w.taskId, taskId), eq(w.configId, configId))).run().changes > 0;
    },

    /** Outbox rows for the events just written, one per endpoint that asked for them. */
    enqueue(events: WrittenEvent[]): boolean {
      let any = false;
      for (const e of events) {
        if (!(WEBHOOK_EVENTS as readonly string[]).includes(e.type) || tenantsWithout.has(e.tenant)) continue;
        const endpoints = endpointsOf.all(e.tenant, e.taskId) as Array<{ id: string; events: string; kind: string; version: string | null }>;
        if (endpoints.length === 0) {
          // Only a tenant with no endpoint at all is skipped from now on (a push config is per task).
          if (!anyEndpoint.get(e.tenant)) tenantsWithout.add(e.tenant);
          continue;
        }
        const task = store.getById(e.taskId);
        if (!task) continue;
        for (const endpoint of endpoints) {
          if (!(JSON.parse(endpoint.events) as string[]).includes(e.type)) continue;
          if (endpoint.kind === 'a2a' && !a2aPayload) continue;
          const id = `msg_${ulid(e.at)}`;
          const payload = endpoint.kind === 'a2a' ? a2aPayload!(task, e, endpoint.version ?? '1.0') : JSON.stringify({
            type: e.type,
            timestamp: new Date(e.at).toISOString(),
            data: {
              taskId: task.id,
              status: task.status,
              parentTaskId: task.parentTaskId,
              userId: task.userId,
              toolCallId: task.toolCallId,
              sessionId: task.sessionId ?? task.id,
            },
          });
          insertDelivery.run(id, endpoint.id, e.tenant, e.type, task.id, payload, e.at, e.at);
          any = true;
        }
      }
      return any;
    },

    /** Pending deliveries whose time has come, oldest first, with their endpoint. */
    due(now: number, limit: number): DueDelivery[] {
      return dueSql.all(now, limit) as DueDelivery[];
    },
    /** Deliveries of an endpoint whose endpoint was deleted are dropped. */
    dropOrphans(): void {
      sqlite.exec(`DELETE FROM webhook_deliveries WHERE status = 'pending' AND webhook_id NOT IN (SELECT id FROM webhooks)`);
    },
    delivered(id: string, now: number): void {
      db.update(d).set({ status: 'delivered', deliveredAt: now, attempts: sql`${d.attempts} + 1`, lastError: null }).where(eq(d.id, id)).run();
    },
    attemptFailed(id: string, error: string, next: number | null): void {
      db.update(d)
        .set({ attempts: sql`${d.attempts} + 1`, lastError: error.slice(0, 500), ...(next === null ? { status: 'failed' as const } : { nextAttemptAt: next }) })
        .where(eq(d.id, id))
        .run();
    },
    /** A delivery again at once (a failed one becomes pending); undefined when it is not this tenant's. */
    retry(tenant: string, id: string, now: number): DeliveryRow | undefined {
      db.update(d).set({ status: 'pending', nextAttemptAt: now }).where(and(eq(d.tenant, tenant), eq(d.id, id), eq(d.status, 'failed'))).run();
      db.update(d).set({ nextAttemptAt: now }).where(and(eq(d.tenant, tenant), eq(d.id, id), eq(d.status, 'pending'))).run();
      return db.select().from(d).where(and(eq(d.tenant, tenant), eq(d.id, id))).get();
    },
    /** An endpoint's deliveries, newest first; `cursor` is the id of the last of the previous page. */
    deliveries(webhookId: string, limit: number, cursor?: string): DeliveryRow[] {
      const where = cursor ? and(eq(d.webhookId, webhookId), lt(d.id, cursor)) : eq(d.webhookId, webhookId);
      return db.select().from(d).where(where).orderBy(desc(d.id)).limit(limit).all();
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;

/** A pending delivery with what sending it takes. */
export type DueDelivery = DeliveryRow & {
  url: string;
  secret: string;
  kind: 'webhook' | 'a2a';
  token: string | null;
  authorization: string | null;
  traceparent: string | null;
};
