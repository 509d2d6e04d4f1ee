import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/*
 * Which addresses a webhook (or an A2A push notification) may reach unless
 * WEBHOOK_ALLOW_PRIVATE=true: public unicast only. ipaddr.js names the special ranges; the rules
 * are an allow-list (only `unicast` passes, and for IPv6 only global unicast 2000::/3), so a
 * range nobody listed is refused rather than let through. Node's BlockList was used before and
 * got it wrong: its IPv6 rule ::ffff:0:0/96 also matched every plain IPv4 address.
 */

/** A public IPv4 address: none of the special ranges (private, loopback, link-local, CGNAT, reserved, ...). */
function publicV4(v4: ipaddr.IPv4): boolean {
  return v4.range() === 'unicast';
}

/** The IPv4 address in bytes 12..15 or 2..5 of an IPv6 address. */
const v4At = (bytes: number[], at: number) => new ipaddr.IPv4(bytes.slice(at, at + 4));

/**
 * A public IPv6 address. The forms that carry an IPv4 address are judged by it: IPv4-mapped
 * (::ffff:a.b.c.d), the NAT64 well-known prefix (64:ff9b::/96) and 6to4 (2002::/16). Refused
 * outright: IPv4-compatible ::/96, IPv4-translated ::ffff:0:0:0/96, local-use NAT64
 * 64:ff9b:1::/48, Teredo, discard 100::/64, ULA, link-local, multicast, documentation and the
 * other reserved ranges.
 */
function publicV6(v6: ipaddr.IPv6): boolean {
  const bytes = v6.toByteArray();
  if (bytes.slice(0, 12).every((b) => b === 0)) return false;
  const range = v6.range();
  if (range === 'ipv4Mapped') return publicV4(v4At(bytes, 12));
  if (range === 'rfc6052') return v6.match(ipaddr.IPv6.parse('64:ff9b::'), 96) && publicV4(v4At(bytes, 12));
  if (range === '6to4') return publicV4(v4At(bytes, 2));
  return range === 'unicast' && (bytes[0] & 0xe0) === 0x20;
}

/**
 * An IPv6 literal with a dotted IPv4 tail written as two hex groups: ipaddr.js reads
 * `::a.b.c.d` as IPv4-mapped, which is another address (IPv4-compatible, refused).
 */
function hexTail(address: string): string {
  const m = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (!m) return address;
  const [a, b, c, d] = m.slice(2).map(Number) as [number, number, number, number];
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

export class WebhookTargetError extends Error {}

/**
 * Whether `address` (an IP literal as DNS or a URL gives it) is one webhooks must not reach:
 * anything but a public unicast address, and anything that is not an IP address at all.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return !publicV4(ipaddr.IPv4.parse(bare));
  if (family === 6) return !publicV6(ipaddr.IPv6.parse(hexTail(bare)));
  return true;
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
