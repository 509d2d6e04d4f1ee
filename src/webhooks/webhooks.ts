import { ulid } from '../util/ids.ts';
import type { EventOutbox, WrittenEvent } from '../events/event-log.ts';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../shapes/webhook.ts';
import type { SqlClient } from '../store/sql-client.ts';
import { createTaskStore } from '../store/task-store.ts';
import type { TaskRow } from '../store/schema.ts';
import { createWebhookStore, type PushConfig, type WebhookRow } from '../store/webhook-store.ts';

/** Formats what an A2A endpoint receives for an event of its task. */
export type A2aPayload = (task: TaskRow, event: WrittenEvent, version: string) => string;

/**
 * Webhook endpoints and their outbox. `enqueue` runs inside the event log's transaction: a
 * delivery row exists exactly when its event does, whatever happens to the process after.
 */
export function createWebhooks(
  sql: SqlClient,
  a2aPayload?: A2aPayload,
  /** Several instances share the database (PostgreSQL): deliveries are claimed, nothing is cached. */
  shared = false,
) {
  const store = createWebhookStore(sql);
  /** Tenants with no webhook cost one cached lookup per event batch. */
  const tenantsWithout = new Set<string>();
  /** Shared: tenants that had an endpoint when this instance last looked (their transactions read them). */
  const tenantsWith = new Set<string>();
  const added = (tenant: string) => {
    tenantsWithout.delete(tenant);
    tenantsWith.add(tenant);
  };

  return {
    ...store,

    /** A new endpoint, or null when the tenant already has `max` of them. */
    async create(tenant: string, url: string, events: WebhookEvent[], now: number, max: number): Promise<WebhookRow | null> {
      const row = await store.create(tenant, url, events, now, max);
      if (row) added(tenant);
      return row;
    },
    /** Sets (creates or replaces) a push-notification config of a task. */
    async putPush(tenant: string, config: PushConfig, now: number): Promise<PushConfig> {
      await store.putPush(tenant, config, now);
      added(tenant);
      return config;
    },

    /** Outbox rows for the events just written, one per endpoint that asked for them (`tx`: the events' transaction). */
    async enqueue(tx: SqlClient, events: WrittenEvent[]): Promise<boolean> {
      const outbox = createWebhookStore(tx);
      const hooked = events.filter((e) => (WEBHOOK_EVENTS as readonly string[]).includes(e.type));
      if (shared && hooked.length > 0 && !hooked.some((e) => tenantsWith.has(e.tenant))) {
        // Most tenants have no endpoint: rather than wait for the endpoints' read before its
        // commit (a round trip), the transaction checks there is none as it goes, and is run
        // again, reading them, if there is one after all (another instance added it).
        const tenants = [...new Set(hooked.map((e) => e.tenant))];
        void outbox.failIfEndpoint(tenants, [...new Set(hooked.map((e) => e.taskId))]).then((found) => {
          if (found) for (const t of tenants) tenantsWith.add(t);
        });
        return false;
      }
      let any = false;
      for (const e of events) {
        if (!(WEBHOOK_EVENTS as readonly string[]).includes(e.type) || (!shared && tenantsWithout.has(e.tenant))) continue;
        const endpoints = await outbox.endpointsOf(e.tenant, e.taskId);
        if (endpoints.length === 0) {
          // Only a tenant with no endpoint at all is skipped from now on (a push config is per task).
          // Shared (PostgreSQL): another instance may add one at any time, so nothing is kept.
          if (!shared && !(await outbox.hasAny(e.tenant))) tenantsWithout.add(e.tenant);
          continue;
        }
        const task = await createTaskStore(tx).getById(e.taskId);
        if (!task) continue;
        for (const endpoint of endpoints) {
          if (!(JSON.parse(endpoint.events) as string[]).includes(e.type)) continue;
          if (endpoint.kind === 'a2a' && !a2aPayload) continue;
          const id = `msg_${ulid(e.at)}`;
          const payload =
            endpoint.kind === 'a2a'
              ? a2aPayload!(task, e, endpoint.version ?? '1.0')
              : JSON.stringify({
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
          await outbox.insertDelivery({ id, webhookId: endpoint.id, tenant: e.tenant, event: e.type, taskId: task.id, payload, at: e.at });
          any = true;
        }
      }
      return any;
    },

    /**
     * The ids among `ids` this instance may send now. Shared, each is claimed until `claimUntil`;
     * past it, if this one stopped before recording the attempt, another one sends it.
     */
    async claim(ids: string[], now: number, claimUntil: number): Promise<Set<string>> {
      if (!shared || ids.length === 0) return new Set(ids);
      return store.claim(ids, now, claimUntil);
    },
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;

/**
 * The webhook outbox as the event log takes it: its rows written in the events' own transaction,
 * `poke` (the dispatcher) told once that commits.
 */
export function webhookOutbox(webhooks: Pick<Webhooks, 'enqueue'>, poke: () => void): EventOutbox {
  return { types: WEBHOOK_EVENTS, write: (tx, events) => webhooks.enqueue(tx, events), committed: poke };
}
