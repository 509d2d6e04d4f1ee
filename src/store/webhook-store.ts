import { randomBytes } from 'node:crypto';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../shapes/webhook.ts';
import { ulid } from '../util/ids.ts';
import { rowReader } from './rows.ts';
import { webhookDeliveries as d, webhooks as w } from './schema.ts';
import type { SqlClient } from './sql-client.ts';
import { isRunAgain } from './sql-errors.ts';

export type WebhookRow = typeof w.$inferSelect;
export type DeliveryRow = typeof d.$inferSelect;

/** An A2A push-notification config as stored (one task's, in the webhook outbox's endpoints). */
export interface PushConfig {
  configId: string;
  taskId: string;
  url: string;
  token: string | null;
  authorization: string | null;
  version: string;
}

/** A pending delivery with what sending it takes. */
export type DueDelivery = DeliveryRow & {
  url: string;
  secret: string;
  kind: 'webhook' | 'a2a';
  token: string | null;
  authorization: string | null;
  traceparent: string | null;
};

/** A live endpoint an event may go to: the events it asked for (JSON), its kind, its A2A version. */
export interface EndpointOf {
  id: string;
  events: string;
  kind: string;
  version: string | null;
}

/** An outbox row, written in its event's transaction. */
export interface NewDelivery {
  id: string;
  webhookId: string;
  tenant: string;
  event: string;
  taskId: string;
  payload: string;
  at: number;
}

const ENDPOINTS_OF =
  'SELECT id, events, kind, a2a_version AS version FROM webhooks WHERE tenant = ? AND (task_id IS NULL OR task_id = ?) AND disabled_at IS NULL';
const INSERT_DELIVERY = `INSERT INTO webhook_deliveries (id, webhook_id, tenant, event, task_id, payload, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)`;
// The oldest due delivery of each endpoint: an endpoint's deliveries go one at a time, in order.
const DUE_HEADS = `SELECT d.*, w.url, w.secret, w.kind, w.token, w."authorization", t.trace_parent AS traceparent
     FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS n
           FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ?) f
     JOIN webhook_deliveries d ON d.id = f.id JOIN webhooks w ON w.id = d.webhook_id LEFT JOIN tasks t ON t.id = d.task_id
     WHERE f.n = 1 ORDER BY d.next_attempt_at, d.id LIMIT ?`;
const INSERT_WEBHOOK = `INSERT INTO webhooks (id, tenant, url, events, secret, created_at, kind, task_id, config_id, token, "authorization", a2a_version)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const PUSH = `tenant = ? AND kind = 'a2a' AND task_id = ?`;
/**
 * Goes with a transaction of events that commits without reading the endpoints, and fails it
 * (SQLSTATE `RUN_AGAIN_SQLSTATE`: run again, reading the endpoints) if one exists after all.
 */
const NO_ENDPOINT = `SELECT subagentd_run_again('webhook endpoints') WHERE EXISTS (SELECT 1 FROM webhooks
     WHERE tenant = ANY(CAST(? AS TEXT[])) AND disabled_at IS NULL AND (task_id IS NULL OR task_id = ANY(CAST(? AS TEXT[]))))`;

const webhookOf = rowReader(w);
const deliveryOf = rowReader(d);

/** Webhook endpoints (a tenant's, and A2A push configs of a task) and their outbox of deliveries. */
export function createWebhookStore(sql: SqlClient) {
  return {
    /** A new endpoint, or null when the tenant already has `max` of them. */
    async create(tenant: string, url: string, events: WebhookEvent[], now: number, max: number): Promise<WebhookRow | null> {
      const id = `whk_${ulid(now)}`;
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const added = await sql.transaction(async (tx) => {
        const count = await tx.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhooks WHERE tenant = ? AND kind = 'webhook'`, [tenant]);
        if (Number(count?.n ?? 0) >= max) return false;
        await tx.run(INSERT_WEBHOOK, [id, tenant, url, JSON.stringify(events), secret, now, 'webhook', null, null, null, null, null]);
        return true;
      });
      if (!added) return null;
      return webhookOf((await sql.get('SELECT * FROM webhooks WHERE id = ?', [id]))!);
    },
    /** Turns a disabled endpoint back on (its failed deliveries can then be retried). */
    async enable(tenant: string, id: string): Promise<WebhookRow | undefined> {
      await sql.run(`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL WHERE tenant = ? AND id = ? AND kind = 'webhook'`, [
        tenant,
        id,
      ]);
      const raw = await sql.get(`SELECT * FROM webhooks WHERE tenant = ? AND id = ? AND kind = 'webhook'`, [tenant, id]);
      return raw && webhookOf(raw);
    },
    async list(tenant: string): Promise<WebhookRow[]> {
      return (await sql.all(`SELECT * FROM webhooks WHERE tenant = ? AND kind = 'webhook' ORDER BY id`, [tenant])).map(webhookOf);
    },
    async get(tenant: string, id: string): Promise<WebhookRow | undefined> {
      const raw = await sql.get(`SELECT * FROM webhooks WHERE tenant = ? AND id = ? AND kind = 'webhook'`, [tenant, id]);
      return raw && webhookOf(raw);
    },
    async delete(tenant: string, id: string): Promise<boolean> {
      return (await sql.run(`DELETE FROM webhooks WHERE tenant = ? AND id = ? AND kind = 'webhook'`, [tenant, id])) > 0;
    },

    /** Sets (creates or replaces) a push-notification config of a task. */
    async putPush(tenant: string, config: PushConfig, now: number): Promise<PushConfig> {
      await sql.transaction(async (tx) => {
        await tx.run(`DELETE FROM webhooks WHERE ${PUSH} AND config_id = ?`, [tenant, config.taskId, config.configId]);
        await tx.run(INSERT_WEBHOOK, [
          `whk_${ulid(now)}`,
          tenant,
          config.url,
          JSON.stringify(WEBHOOK_EVENTS),
          `whsec_${randomBytes(24).toString('base64')}`,
          now,
          'a2a',
          config.taskId,
          config.configId,
          config.token,
          config.authorization,
          config.version,
        ]);
      });
      return config;
    },
    /** A task's push-notification configs, oldest first (`configId` narrows to one). */
    async pushConfigs(tenant: string, taskId: string, configId?: string): Promise<PushConfig[]> {
      const rows =
        configId === undefined
          ? await sql.all(`SELECT * FROM webhooks WHERE ${PUSH} ORDER BY id`, [tenant, taskId])
          : await sql.all(`SELECT * FROM webhooks WHERE ${PUSH} AND config_id = ? ORDER BY id`, [tenant, taskId, configId]);
      return rows
        .map(webhookOf)
        .map((r) => ({ configId: r.configId!, taskId, url: r.url, token: r.token, authorization: r.authorization, version: r.a2aVersion ?? '1.0' }));
    },
    async deletePush(tenant: string, taskId: string, configId: string): Promise<boolean> {
      return (await sql.run(`DELETE FROM webhooks WHERE ${PUSH} AND config_id = ?`, [tenant, taskId, configId])) > 0;
    },

    /** The live endpoints an event of `taskId` may go to: the tenant's, and the task's push configs. */
    async endpointsOf(tenant: string, taskId: string): Promise<EndpointOf[]> {
      return sql.all<EndpointOf>(ENDPOINTS_OF, [tenant, taskId]);
    },
    /** Does the tenant have any endpoint at all, disabled or a push config included? */
    async hasAny(tenant: string): Promise<boolean> {
      return Boolean(await sql.get('SELECT 1 AS one FROM webhooks WHERE tenant = ? LIMIT 1', [tenant]));
    },
    /**
     * Inside a transaction of events (PostgreSQL): fails it at its commit if one of `tenants` has a
     * live endpoint (for any task, or one of `taskIds`) after all, so that it runs again reading
     * them. Settles true when it did.
     */
    failIfEndpoint(tenants: string[], taskIds: string[]): Promise<boolean> {
      return sql.defer(NO_ENDPOINT, [tenants, taskIds]).then(
        () => false,
        (err: unknown) => isRunAgain(err),
      );
    },
    async insertDelivery(n: NewDelivery): Promise<void> {
      await sql.run(INSERT_DELIVERY, [n.id, n.webhookId, n.tenant, n.event, n.taskId, n.payload, n.at, n.at]);
    },

    /**
     * The oldest due delivery of each endpoint with one, oldest first, with its endpoint: the
     * dispatcher picks among them fairly and claims what it sends.
     */
    async dueHeads(now: number, limit: number): Promise<DueDelivery[]> {
      return (await sql.all(DUE_HEADS, [now, limit])).map((raw) => ({
        ...deliveryOf(raw),
        url: raw.url as string,
        secret: raw.secret as string,
        kind: raw.kind as DueDelivery['kind'],
        token: (raw.token as string | null) ?? null,
        authorization: (raw.authorization as string | null) ?? null,
        traceparent: (raw.traceparent as string | null) ?? null,
      }));
    },
    /**
     * Claims the deliveries among `ids` still due until `claimUntil` (their next attempt moved past
     * the send, in one statement: another instance that read the same head finds it no longer
     * due); the ids claimed.
     */
    async claim(ids: string[], now: number, claimUntil: number): Promise<Set<string>> {
      const rows = await sql.rows(
        `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ANY(?) AND status = 'pending' AND next_attempt_at <= ? RETURNING id`,
        [claimUntil, ids, now],
      );
      return new Set(rows.map((r) => r[0] as string));
    },
    /** Deliveries of an endpoint whose endpoint was deleted are dropped. */
    async dropOrphans(): Promise<void> {
      await sql.run(`DELETE FROM webhook_deliveries WHERE status = 'pending' AND webhook_id NOT IN (SELECT id FROM webhooks)`);
    },
    async delivered(id: string, webhookId: string, now: number): Promise<void> {
      await sql.transaction(async (tx) => {
        await tx.run(`UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?`, [
          now,
          id,
        ]);
        await tx.run(`UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL`, [webhookId]);
      });
    },
    /**
     * Notes a failed attempt against its endpoint. One that has failed every attempt for
     * `disableAfterMs` is disabled (when and why kept for the tenant) and its pending deliveries
     * fail with that reason. True when this attempt disabled it.
     */
    async endpointFailed(webhookId: string, now: number, disableAfterMs: number, error: string): Promise<boolean> {
      return sql.transaction(async (tx) => {
        await tx.run(`UPDATE webhooks SET failing_since = ? WHERE id = ? AND failing_since IS NULL`, [now, webhookId]);
        const since = Number(
          (await tx.get<{ since: number }>(`SELECT failing_since AS since FROM webhooks WHERE id = ? AND disabled_at IS NULL`, [webhookId]))?.since ?? now,
        );
        if (now - since < disableAfterMs) return false;
        const reason = `every attempt failed since ${new Date(since).toISOString()}; last: ${error}`.slice(0, 500);
        if ((await tx.run(`UPDATE webhooks SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL`, [now, reason, webhookId])) === 0)
          return false;
        await tx.run(`UPDATE webhook_deliveries SET status = 'failed', last_error = ? WHERE webhook_id = ? AND status = 'pending'`, [
          `endpoint disabled: ${reason}`.slice(0, 500),
          webhookId,
        ]);
        return true;
      });
    },
    async attemptFailed(id: string, error: string, next: number | null): Promise<void> {
      await sql.run(
        next === null
          ? `UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = ?, status = 'failed' WHERE id = ?`
          : `UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?`,
        next === null ? [error.slice(0, 500), id] : [error.slice(0, 500), next, id],
      );
    },
    /** A delivery again at once (a failed one becomes pending); undefined when it is not this tenant's. */
    async retry(tenant: string, id: string, now: number): Promise<DeliveryRow | undefined> {
      await sql.run(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE tenant = ? AND id = ? AND status IN ('failed', 'pending')`, [
        now,
        tenant,
        id,
      ]);
      const raw = await sql.get('SELECT * FROM webhook_deliveries WHERE tenant = ? AND id = ?', [tenant, id]);
      return raw && deliveryOf(raw);
    },
    /** An endpoint's deliveries, newest first; `cursor` is the id of the last of the previous page. */
    async deliveries(webhookId: string, limit: number, cursor?: string): Promise<DeliveryRow[]> {
      const rows = cursor
        ? await sql.all('SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?', [webhookId, cursor, limit])
        : await sql.all('SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?', [webhookId, limit]);
      return rows.map(deliveryOf);
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
