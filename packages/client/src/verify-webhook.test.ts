import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from './verify-webhook.ts';

// Signed by the library the service signs with, verified by the client's WebCrypto code.
const secret = `whsec_${Buffer.from('a-secret-of-twenty-four-b').toString('base64')}`;
const body = JSON.stringify({ type: 'task.finished', timestamp: '2026-12-01T00:00:00.000Z', data: { taskId: 'tsk_1' } });
const at = new Date('2026-12-01T10:00:00Z');
const signed = (text = body, id = 'msg_1') => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  'webhook-signature': new Webhook(secret).sign(id, at, text),
});
const now = () => at.getTime() + 10_000;

describe('verifyWebhook', () => {
  it('accepts a delivery the service signed, from a plain object or a Headers, and returns the payload', async () => {
    expect(await verifyWebhook(signed(), body, secret, { now })).toMatchObject({ type: 'task.finished', data: { taskId: 'tsk_1' } });
    expect(await verifyWebhook(new Headers(signed()), new TextEncoder().encode(body), secret, { now })).toMatchObject({ type: 'task.finished' });
    // Several signatures (a rotated secret): any one that matches.
    const h = signed();
    expect(await verifyWebhook({ ...h, 'webhook-signature': `v1,AAAA ${h['webhook-signature']}` }, body, secret, { now })).toBeTruthy();
  });

  it('refuses a changed body, another id, another secret, an old timestamp and missing headers', async () => {
    const h = signed();
    const refused = (p: Promise<unknown>) => expect(p).rejects.toBeInstanceOf(WebhookVerificationError);
    await refused(verifyWebhook(h, body.replace('tsk_1', 'tsk_2'), secret, { now }));
    await refused(verifyWebhook({ ...h, 'webhook-id': 'msg_2' }, body, secret, { now }));
    await refused(verifyWebhook(h, body, `whsec_${Buffer.from('another-secret-of-24-byte').toString('base64')}`, { now }));
    await refused(verifyWebhook(h, body, secret, { now: () => at.getTime() + 301_000 }));
    await refused(verifyWebhook({ 'webhook-id': 'msg_1' }, body, secret, { now }));
  });
});
