import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { resolveTarget } from './safe-target.ts';
import type { DueDelivery, WebhookStore } from './webhook-store.ts';

export interface DispatcherOptions {
  store: WebhookStore;
  logger: Logger;
  now: () => number;
  allowPrivate: boolean;
  /** First retry after this; each next one waits twice as long, at most an hour. */
  retryBaseMs: number;
  /** A delivery still failing this long after its event is given up (`failed`). */
  giveUpAfterMs: number;
  timeoutMs: number;
}

/** What is read of a receiver's answer, at most (its status is what counts). */
const MAX_ANSWER_BYTES = 64 * 1024;
const BATCH = 20;

/**
 * Sends the outbox: every pending delivery whose time has come is POSTed, signed per the Standard
 * Webhooks specification (`webhook-id` = the delivery id, the same on every attempt). A 2xx answer
 * delivers it; anything else (a status, a timeout, a refused address) is retried with exponential
 * backoff until `giveUpAfterMs` after the event. Redirects are not followed, the connection goes to
 * the address that was checked, and at most 64 KiB of an answer is read.
 */
export function createDispatcher(opts: DispatcherOptions) {
  const { store, logger } = opts;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let closed = false;
  let again = false;

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

  async function tick(): Promise<void> {
    if (running || closed) {
      again = true;
      return;
    }
    running = true;
    try {
      for (;;) {
        again = false;
        // A send takes at most three timeouts (connect, headers, body); its claim outlasts it.
        const due = await store.due(opts.now(), BATCH, opts.now() + 3 * opts.timeoutMs + 5_000);
        await Promise.all(
          due.map(async (delivery) => {
            try {
              await send(delivery);
              await store.delivered(delivery.id, opts.now());
            } catch (err) {
              const attempts = delivery.attempts + 1;
              const wait = Math.min(opts.retryBaseMs * 2 ** (attempts - 1), 3_600_000);
              const next = opts.now() + wait;
              const giveUp = next - delivery.createdAt > opts.giveUpAfterMs;
              await store.attemptFailed(delivery.id, (err as Error).message, giveUp ? null : next);
              logger.warn({ delivery: delivery.id, webhook: delivery.webhookId, attempts, err: (err as Error).message, giveUp }, 'webhook delivery failed');
            }
          }),
        );
        if (closed || (due.length < BATCH && !again)) break;
      }
    } catch (err) {
      logger.error({ err }, 'webhook dispatch failed; retrying');
    } finally {
      running = false;
    }
  }

  return {
    start() {
      store.dropOrphans().catch((err) => logger.error({ err }, 'could not drop the deliveries of deleted webhooks'));
      timer = setInterval(() => void tick(), Math.max(50, Math.min(1000, opts.retryBaseMs / 2)));
      timer.unref();
      void tick();
    },
    /** New deliveries were written: send them now rather than at the next tick. */
    poke() {
      setImmediate(() => void tick());
    },
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      while (running) await new Promise((r) => setTimeout(r, 20));
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
