import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, taskBody } from './support/harness';
import { until } from './support/until';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real receiver on loopback: answers each request with what `answer` says (status, or a delay). */
async function startReceiver(answer: (n: number) => { status: number; delayMs?: number }) {
  const received: Received[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const a = answer(++n);
      setTimeout(() => res.writeHead(a.status).end('ok'), a.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const complete = [{ toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 5, output: 1 } }];
const env = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_TIMEOUT_MS: '500' };

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(() => model.close());

describe('webhooks', () => {
  it('delivers signed, thin task events; retries a failing receiver with the same webhook-id', async () => {
    const svc = await startService({ model, env });
    // Fails twice, then takes everything.
    const receiver = await startReceiver((n) => ({ status: n <= 2 ? 500 : 204 }));
    try {
      const created = await svc.inject({ method: 'POST', url: '/webhooks', payload: { url: receiver.url, events: ['task.finished', 'task.started'] } });
      expect(created.statusCode).toBe(201);
      const hook = created.json();
      expect(hook).toMatchObject({
        id: expect.stringMatching(/^whk_/),
        url: receiver.url,
        events: ['task.finished', 'task.started'],
        secret: expect.stringMatching(/^whsec_/),
      });
      expect((await svc.inject({ url: '/webhooks' })).json().webhooks).toEqual([
        { id: hook.id, url: receiver.url, events: hook.events, createdAt: expect.any(String), failingSince: null, disabled: null },
      ]);

      model.script('HOOKED', complete);
      const task = (
        await svc.inject({
          method: 'POST',
          url: '/tasks?wait=true',
          payload: taskBody({ prompt: 'HOOKED', context: { parentTaskId: 'T-hook', userId: 'u-h', toolCallId: 'call_h' } }),
        })
      ).json();
      await until(async () => new Set(receiver.received.filter((r) => r.headers['webhook-id']).map((r) => r.body)).size === 2 && receiver.received.length >= 4);
      await until(async () =>
        (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries.every((d: { status: string }) => d.status === 'delivered'),
      );

      const verifier = new Webhook(hook.secret);
      const bodies = receiver.received.map(
        (r) => verifier.verify(r.body, r.headers as Record<string, string>) as { type: string; data: Record<string, unknown> },
      );
      const finished = bodies.find((b) => b.type === 'task.finished')!;
      expect(finished.data).toEqual({ taskId: task.id, status: 'completed', parentTaskId: 'T-hook', userId: 'u-h', toolCallId: 'call_h', sessionId: task.id });
      // Every attempt of one delivery carries the same webhook-id.
      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(2);
      const deliveries = (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries;
      expect(deliveries.map((d: { event: string }) => d.event).sort()).toEqual(['task.finished', 'task.started']);
      expect(deliveries.reduce((n: number, d: { attempts: number }) => n + d.attempts, 0)).toBe(receiver.received.length);
      expect(deliveries.some((d: { attempts: number }) => d.attempts > 1)).toBe(true);
      // A forged signature does not verify.
      expect(() => verifier.verify(receiver.received[0].body.replace('T-hook', 'T-evil'), receiver.received[0].headers as Record<string, string>)).toThrow();

      expect((await svc.inject({ method: 'DELETE', url: `/webhooks/${hook.id}` })).statusCode).toBe(204);
      expect((await svc.inject({ url: '/webhooks' })).json().webhooks).toEqual([]);
    } finally {
      await receiver.close();
      await svc.close();
    }
  });

  it('keeps deliveries through a restart while the receiver is down, and sends them once it is back', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-'));
    const receiver = await startReceiver(() => ({ status: 200 }));
    const url = receiver.url;
    await receiver.close();
    const first = await startService({ model, env, dir });
    const hook = (await first.inject({ method: 'POST', url: '/webhooks', payload: { url, events: ['task.finished'] } })).json();
    model.script('HOOK-DOWN', complete);
    const task = (await first.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'HOOK-DOWN' }) })).json();
    await until(async () => (await first.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries[0]?.attempts >= 1);
    await first.close();

    // The receiver comes back on the same port; the service restarts and delivers.
    const port = Number(new URL(url).port);
    const received: Received[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    const second = await startService({ model, env, dir });
    try {
      await until(async () => received.length === 1);
      const delivered = (await second.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries;
      expect(delivered).toMatchObject([{ taskId: task.id, event: 'task.finished', status: 'delivered' }]);
      expect(received[0].headers['webhook-id']).toBe(delivered[0].id);
      expect(new Webhook(hook.secret).verify(received[0].body, received[0].headers as Record<string, string>)).toMatchObject({ data: { taskId: task.id } });
    } finally {
      await second.close();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('delivers for an endpoint registered by another process (on PostgreSQL: one that never looked for it)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-'));
    const receiver = await startReceiver(() => ({ status: 204 }));
    const first = await startService({ model, env, dir });
    const hook = (await first.inject({ method: 'POST', url: '/webhooks', payload: { url: receiver.url, events: ['task.started', 'task.finished'] } })).json();
    await first.close();
    const second = await startService({ model, env, dir });
    try {
      model.script('HOOK-ELSEWHERE', complete);
      const body = taskBody({ prompt: 'HOOK-ELSEWHERE', context: { parentTaskId: 'T-hook-elsewhere', userId: 'u-1' } });
      const task = (await second.inject({ method: 'POST', url: '/tasks?wait=true', payload: body })).json();
      expect(task.status).toBe('completed');
      await until(async () => receiver.received.length === 2);
      const delivered = (await second.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries;
      expect(delivered.map((d: { event: string; taskId: string; status: string }) => [d.event, d.taskId, d.status]).sort()).toEqual([
        ['task.finished', task.id, 'delivered'],
        ['task.started', task.id, 'delivered'],
      ]);
      // Usage is billed once, whatever ran twice to write the deliveries.
      const usage = (await second.inject({ url: '/usage?parentTaskId=T-hook-elsewhere' })).json();
      expect(usage.totals).toMatchObject({ inputTokens: 5, outputTokens: 1 });
    } finally {
      await second.close();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives up on a slow receiver after WEBHOOK_GIVE_UP_MS, and a manual retry sends it again', async () => {
    const svc = await startService({ model, env: { ...env, WEBHOOK_GIVE_UP_MS: '1000' } });
    let slow = true;
    const receiver = await startReceiver(() => (slow ? { status: 200, delayMs: 2000 } : { status: 200 }));
    try {
      const hook = (await svc.inject({ method: 'POST', url: '/webhooks', payload: { url: receiver.url, events: ['task.finished'] } })).json();
      model.script('HOOK-SLOW', complete);
      await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'HOOK-SLOW' }) });
      await until(async () => (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries[0]?.status === 'failed', 10_000);
      const failed = (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries[0];
      expect(failed.lastError).toMatch(/timeout|aborted/i);
      slow = false;
      const retried = await svc.inject({ method: 'POST', url: `/webhooks/deliveries/${failed.id}/retry` });
      expect(retried.statusCode).toBe(202);
      await until(async () => (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries[0]?.status === 'delivered');
    } finally {
      await receiver.close();
      await svc.close();
    }
  });

  it("refuses private, loopback and link-local targets unless WEBHOOK_ALLOW_PRIVATE=true, and other tenants' hooks", async () => {
    const svc = await startService({ model, env: { API_KEYS: 'ka:a,kb:b' } });
    try {
      const register = (url: string) => svc.inject({ method: 'POST', url: '/webhooks', headers: { authorization: 'Bearer ka' }, payload: { url } });
      for (const url of [
        'http://127.0.0.1:9/x',
        'http://[::1]/x',
        'http://[::ffff:127.0.0.1]/x',
        'http://169.254.169.254/latest/meta-data',
        'http://10.1.2.3/x',
        'http://localhost:8080/x',
        'http://[::127.0.0.1]/x',
        'http://[64:ff9b:1::808:808]/x',
        'http://[2002:a00:1::1]/x',
        'http://[::ffff:0:a00:1]/x',
        'http://[100::1]/x',
        'http://[64:ff9b::a9fe:a9fe]/x',
      ]) {
        const res = await register(url);
        expect(res.statusCode, url).toBe(400);
        expect(res.json().error, url).toMatchObject({ code: 'invalid_webhook_url', message: expect.stringMatching(/private|does not resolve/) });
      }
      // Not http(s), or with credentials: refused before any lookup.
      expect((await register('ftp://example.com/x')).json().error.code).toBe('invalid_request');
      expect((await register('http://user:pw@example.com/x')).json().error.code).toBe('invalid_webhook_url');
      expect((await svc.inject({ url: '/webhooks', headers: { authorization: 'Bearer ka' } })).json().webhooks).toEqual([]);
      const other = await svc.inject({ url: '/webhooks', headers: { authorization: 'Bearer kb' } });
      expect(other.json().webhooks).toEqual([]);
      expect(
        (await svc.inject({ method: 'DELETE', url: '/webhooks/whk_00000000000000000000000000', headers: { authorization: 'Bearer kb' } })).statusCode,
      ).toBe(404);
    } finally {
      await svc.close();
    }
  });

  it("sends one tenant's deliveries while another tenant's endpoints hang (each endpoint its own lane)", async () => {
    // Tenant a: 20 endpoints on a receiver that holds every request without answering (the timeout
    // is a minute). Before, the outbox sent one batch of 20, oldest first, and waited for all of it.
    const svc = await startService({ model, env: { ...env, API_KEYS: 'ka:a,kb:b', WEBHOOK_TIMEOUT_MS: '60000', MAX_WEBHOOKS_PER_TENANT: '25' } });
    const held: Array<() => void> = [];
    const hanging = createServer((req, res) => {
      req.resume();
      held.push(() => res.writeHead(204).end());
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    const fast = await startReceiver(() => ({ status: 204 }));
    try {
      const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hook`;
      for (let i = 0; i < 20; i++) {
        const res = await svc.inject({
          method: 'POST',
          url: '/webhooks',
          headers: { authorization: 'Bearer ka' },
          payload: { url: `${hangingUrl}?n=${i}`, events: ['task.started'] },
        });
        expect(res.statusCode).toBe(201);
      }
      await svc.inject({ method: 'POST', url: '/webhooks', headers: { authorization: 'Bearer kb' }, payload: { url: fast.url, events: ['task.started'] } });
      model.script('LANES', complete);
      await svc.inject({ method: 'POST', url: '/tasks?wait=true', headers: { authorization: 'Bearer ka' }, payload: taskBody({ prompt: 'LANES' }) });
      // a's sends are under way (no more than its share at once) ...
      await until(async () => held.length > 0);
      const b = (
        await svc.inject({ method: 'POST', url: '/tasks?wait=true', headers: { authorization: 'Bearer kb' }, payload: taskBody({ prompt: 'LANES' }) })
      ).json();
      // ... and b's task.started arrives while they still hang.
      await until(async () => fast.received.some((r) => r.body.includes(b.id)));
      expect(held.length).toBeGreaterThan(0);
      expect(held.length).toBeLessThanOrEqual(8);
    } finally {
      for (const answer of held.splice(0)) answer();
      // The rest of a's deliveries are sent as the held ones are answered.
      await until(async () => {
        for (const answer of held.splice(0)) answer();
        return (await svc.inject({ url: '/webhooks', headers: { authorization: 'Bearer ka' } })).json().webhooks.length === 20;
      });
      await svc.close();
      hanging.closeAllConnections();
      await new Promise<void>((r) => hanging.close(() => r()));
      await fast.close();
    }
  });

  it('bounds the endpoints of a tenant (409 webhook_limit), not those of another', async () => {
    const svc = await startService({ model, env: { ...env, API_KEYS: 'ka:a,kb:b', MAX_WEBHOOKS_PER_TENANT: '2' } });
    try {
      const register = (key: string) =>
        svc.inject({ method: 'POST', url: '/webhooks', headers: { authorization: `Bearer ${key}` }, payload: { url: 'http://127.0.0.1:9/x' } });
      const first = (await register('ka')).json();
      expect((await register('ka')).statusCode).toBe(201);
      const third = await register('ka');
      expect(third.statusCode).toBe(409);
      expect(third.json().error).toMatchObject({ code: 'webhook_limit', message: expect.stringContaining('at most 2') });
      expect((await register('kb')).statusCode).toBe(201);
      await svc.inject({ method: 'DELETE', url: `/webhooks/${first.id}`, headers: { authorization: 'Bearer ka' } });
      expect((await register('ka')).statusCode).toBe(201);
    } finally {
      await svc.close();
    }
  });

  it('disables an endpoint whose every attempt failed for WEBHOOK_DISABLE_AFTER_MS, says why, and enables it again', async () => {
    let status = 503;
    const receiver = await startReceiver(() => ({ status }));
    const svc = await startService({ model, env: { ...env, WEBHOOK_DISABLE_AFTER_MS: '1000' } });
    try {
      const hook = (await svc.inject({ method: 'POST', url: '/webhooks', payload: { url: receiver.url, events: ['task.started'] } })).json();
      model.script('DISABLED', complete);
      const run = async () => (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'DISABLED' }) })).json().id as string;
      const first = await run();
      const view = async () => (await svc.inject({ url: '/webhooks' })).json().webhooks[0];
      await until(async () => (await view()).disabled !== null);
      const disabled = await view();
      expect(disabled.failingSince).toEqual(expect.any(String));
      expect(disabled.disabled).toEqual({
        at: expect.any(String),
        reason: expect.stringMatching(/^every attempt failed since .*; last: the receiver answered 503$/),
      });
      const deliveries = async () => (await svc.inject({ url: `/webhooks/${hook.id}/deliveries` })).json().deliveries;
      expect(await deliveries()).toEqual([
        expect.objectContaining({ taskId: first, status: 'failed', lastError: expect.stringContaining('endpoint disabled') }),
      ]);
      // Disabled: nothing is queued for it.
      const attempts = receiver.received.length;
      await run();
      expect((await deliveries()).length).toBe(1);
      // Enabled again: new events are delivered, and the failed one can be sent again.
      status = 204;
      const enabled = await svc.inject({ method: 'POST', url: `/webhooks/${hook.id}/enable` });
      expect(enabled.statusCode).toBe(200);
      expect(enabled.json()).toMatchObject({ id: hook.id, disabled: null, failingSince: null });
      const third = await run();
      await until(async () => (await deliveries()).some((d: { taskId: string; status: string }) => d.taskId === third && d.status === 'delivered'));
      const failed = (await deliveries()).find((d: { taskId: string }) => d.taskId === first);
      expect((await svc.inject({ method: 'POST', url: `/webhooks/deliveries/${failed.id}/retry` })).statusCode).toBe(202);
      await until(async () => (await deliveries()).every((d: { status: string }) => d.status === 'delivered'));
      expect(receiver.received.length).toBe(attempts + 2);
      expect((await svc.inject({ method: 'POST', url: '/webhooks/whk_00000000000000000000000000/enable' })).statusCode).toBe(404);
    } finally {
      await svc.close();
      await receiver.close();
    }
  });

  it('takes public IPv4 and IPv6 receivers with the guard on (registered, never sent to)', async () => {
    // No task runs on this service and each endpoint is removed at once: nothing is ever delivered
    // to these public addresses (the suite sends traffic to loopback only).
    const svc = await startService({ model, env: { API_KEYS: 'ka:a' } });
    try {
      for (const url of [
        'https://8.8.8.8/hook',
        'http://93.184.216.34:8080/x',
        'https://[2606:4700:4700::1111]/hook',
        'https://[64:ff9b::808:808]/hook',
        'https://[2002:808:808::1]/x',
      ]) {
        const res = await svc.inject({ method: 'POST', url: '/webhooks', headers: { authorization: 'Bearer ka' }, payload: { url } });
        expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
        const gone = await svc.inject({ method: 'DELETE', url: `/webhooks/${res.json().id}`, headers: { authorization: 'Bearer ka' } });
        expect(gone.statusCode).toBe(204);
      }
      expect((await svc.inject({ url: '/webhooks', headers: { authorization: 'Bearer ka' } })).json().webhooks).toEqual([]);
    } finally {
      await svc.close();
    }
  });
});
