import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { resolveTarget } from '../network/safe-target.ts';
import { createTicker } from '../util/ticker.ts';
import type { DueDelivery } from '../store/webhook-store.ts';
import type { Webhooks } from './webhooks.ts';

export interface DispatcherOptions {
  store: Webhooks;
  logger: Logger;
  now: () => number;
  allowPrivate: boolean;
  /** First retry after this; each next one waits twice as long, at most an hour. */
  retryBaseMs: number;
  /** A delivery still failing this long after its event is given up (`failed`). */
  giveUpAfterMs: number;
  /** An endpoint whose every attempt has failed this long is disabled. */
  disableAfterMs: number;
  timeoutMs: number;
}

/** What is read of a receiver's answer, at most (its status is what counts). */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Sends in flight at once, in all; of one tenant; of one endpoint (its deliveries go in order). */
const MAX_IN_FLIGHT = 32;
const MAX_IN_FLIGHT_PER_TENANT = 8;
/** Endpoint heads read per pass: more than can be sent at once, so busy ones can be skipped. */
const HEADS = 256;

/**
 * Which heads to send now: every endpoint at most once and not while it is busy, tenants in turn
 * (each one's oldest first), within the caps. A tenant whose endpoints never answer holds at most
 * its own share of the sends; the others' deliveries go out beside it.
 */
export function pickFair<D extends { webhookId: string; tenant: string }>(
  heads: D[],
  busy: { endpoints: ReadonlySet<string>; perTenant: ReadonlyMap<string, number>; total: number },
): D[] {
  const byTenant = new Map<string, D[]>();
  for (const h of heads) {
    if (busy.endpoints.has(h.webhookId)) continue;
    const list = byTenant.get(h.tenant) ?? [];
    list.push(h);
    byTenant.set(h.tenant, list);
  }
  const taken = new Map<string, number>();
  const picked: D[] = [];
  let room = MAX_IN_FLIGHT - busy.total;
  for (let round = 0, more = true; room > 0 && more; round++) {
    more = false;
    for (const [tenant, list] of byTenant) {
      const head = list[round];
      if (!head || room === 0) continue;
      const used = (busy.perTenant.get(tenant) ?? 0) + (taken.get(tenant) ?? 0);
      if (used >= MAX_IN_FLIGHT_PER_TENANT) continue;
      picked.push(head);
      taken.set(tenant, (taken.get(tenant) ?? 0) + 1);
      room--;
      more = true;
    }
  }
  return picked;
}

/**
 * Sends the outbox: every pending delivery whose time has come is POSTed, signed per the Standard
 * Webhooks specification (`webhook-id` = the delivery id, the same on every attempt). A 2xx answer
 * delivers it; anything else (a status, a timeout, a refused address) is retried with exponential
 * backoff until `giveUpAfterMs` after the event. Redirects are not followed, the connection goes to
 * the address that was checked, and at most 64 KiB of an answer is read.
 *
 * Each endpoint is a lane of its own: one send at a time, in order, and a new send starts as soon
 * as any finishes (no batch waits for its slowest member), so an endpoint that never answers delays
 * only its own deliveries. Tenants take turns within the caps above. An endpoint failing every
 * attempt for `disableAfterMs` is disabled.
 */
export function createDispatcher(opts: DispatcherOptions) {
  const { store, logger } = opts;
  const ticker = createTicker({ everyMs: Math.max(50, Math.min(1000, opts.retryBaseMs / 2)), tick: () => void pump() });
  let pumping = false;
  let closed = false;
  let again = false;
  /** Endpoint id → its tenant, for every send in flight. */
  const busy = new Map<string, string>();
  const perTenant = new Map<string, number>();
  const sends = new Set<Promise<void>>();

  async function send(delivery: DueDelivery): Promise<void> {
    const url = new URL(delivery.url);
    const target = await resolveTarget(url, opts.allowPrivate);
    // Connect to the checked address only: a second lookup could answer another one.
    const dispatcher = new Agent({
      connect: {
        lookup: (_host, _options, callback) => callback(null, [{ address: target.address, family: target.family }]),
        timeout: opts.timeoutMs,
      },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    try {
      const timestamp = new Date(opts.now());
      // A webhook is signed (Standard Webhooks); an A2A push config carries its own credential.
      const auth =
        delivery.kind === 'a2a'
          ? {
              ...(delivery.authorization && { authorization: delivery.authorization }),
              ...(delivery.token && { 'x-a2a-notification-token': delivery.token }),
            }
          : { 'webhook-signature': new Webhook(delivery.secret).sign(delivery.id, timestamp, delivery.payload) };
      const res = await request(url, {
        method: 'POST',
        dispatcher,
        body: delivery.payload,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'subagentd-webhooks',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          ...auth,
          // The caller's trace goes on with the task's events.
          ...(delivery.traceparent && { traceparent: delivery.traceparent }),
        },
        // undici follows no redirect unless asked to: a 3xx is an answer like any other non-2xx.
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      let read = 0;
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_ANSWER_BYTES) break;
      }
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`the receiver answered ${res.statusCode}`);
    } finally {
      void dispatcher.close().catch(() => {});
    }
  }

  /** One attempt of one delivery, recorded whatever happens. */
  async function attempt(delivery: DueDelivery): Promise<void> {
    try {
      await send(delivery);
      await store.delivered(delivery.id, delivery.webhookId, opts.now());
    } catch (err) {
      const message = (err as Error).message;
      const attempts = delivery.attempts + 1;
      const wait = Math.min(opts.retryBaseMs * 2 ** (attempts - 1), 3_600_000);
      const next = opts.now() + wait;
      const giveUp = next - delivery.createdAt > opts.giveUpAfterMs;
      await store.attemptFailed(delivery.id, message, giveUp ? null : next);
      const disabled = await store.endpointFailed(delivery.webhookId, opts.now(), opts.disableAfterMs, message);
      logger.warn({ delivery: delivery.id, webhook: delivery.webhookId, attempts, err: message, giveUp, disabled }, 'webhook delivery failed');
    }
  }

  function start(delivery: DueDelivery) {
    busy.set(delivery.webhookId, delivery.tenant);
    perTenant.set(delivery.tenant, (perTenant.get(delivery.tenant) ?? 0) + 1);
    const done: Promise<void> = attempt(delivery)
      .catch((err) => logger.error({ err, delivery: delivery.id }, 'could not record a webhook attempt; it is sent again'))
      .finally(() => {
        busy.delete(delivery.webhookId);
        const left = (perTenant.get(delivery.tenant) ?? 1) - 1;
        if (left > 0) perTenant.set(delivery.tenant, left);
        else perTenant.delete(delivery.tenant);
        sends.delete(done);
        // A lane is free: its next delivery, or another tenant's, goes now.
        void pump();
      });
    sends.add(done);
  }

  async function pump(): Promise<void> {
    if (pumping || closed) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        if (busy.size >= MAX_IN_FLIGHT) break;
        const heads = await store.dueHeads(opts.now(), HEADS);
        const picked = pickFair(heads, { endpoints: new Set(busy.keys()), perTenant, total: busy.size });
        // A send takes at most three timeouts (connect, headers, body); its claim outlasts it.
        const mine = await store.claim(
          picked.map((d) => d.id),
          opts.now(),
          opts.now() + 3 * opts.timeoutMs + 5_000,
        );
        for (const d of picked) if (mine.has(d.id) && !closed) start(d);
      } while (again && !closed);
    } catch (err) {
      logger.error({ err }, 'webhook dispatch failed; retrying');
    } finally {
      pumping = false;
    }
  }

  return {
    start() {
      store.dropOrphans().catch((err) => logger.error({ err }, 'could not drop the deliveries of deleted webhooks'));
      ticker.start();
      void pump();
    },
    /** New deliveries were written: send them now rather than at the next tick. */
    poke() {
      setImmediate(() => void pump());
    },
    async close() {
      closed = true;
      ticker.stop();
      while (pumping || sends.size > 0) await Promise.race([...sends, new Promise((r) => setTimeout(r, 20))]);
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
