import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Addresses a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE=true: private, loopback, link-local and the like. */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

export class WebhookTargetError extends Error {}

/** Whether `address` is one webhooks must not reach. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  return blocked.check(address, family);
}

/**
 * The addresses a webhook URL resolves to, checked: every one must be public unless private ones
 * are allowed. The caller connects to the first of these addresses, not to a name resolved again
 * later (a second lookup could answer a private address: DNS rebinding).
 */
export async function resolveTarget(url: URL, allowPrivate: boolean): Promise<{ address: string; family: number }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WebhookTargetError('the URL must be http or https');
  if (url.username || url.password) throw new WebhookTargetError('the URL must not carry credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const answers = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true }).catch(() => []);
  if (answers.length === 0) throw new WebhookTargetError(`${host} does not resolve`);
  if (!allowPrivate) {
    const inside = answers.find((a) => isPrivateAddress(a.address));
    if (inside) throw new WebhookTargetError(`${host} resolves to ${inside.address}, a private, loopback or link-local address`);
  }
  return answers[0];
}
