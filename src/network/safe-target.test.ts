import { describe, expect, it } from 'vitest';
import { isPrivateAddress, resolveTarget } from './safe-target.ts';

describe('isPrivateAddress', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '52.94.236.248',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '2001:4860:4860::8888',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('lets the public address %s pass', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  it.each([
    // IPv4 special ranges
    '0.0.0.0',
    '10.1.2.3',
    '100.64.0.1',
    '127.0.0.1',
    '169.254.169.254',
    '172.16.0.1',
    '192.0.0.1',
    '192.0.2.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6 special ranges
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    '3fff::1',
    // forms that embed an IPv4 address
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '::8.8.8.8',
    '::808:808',
    '::127.0.0.1', // IPv4-compatible ::/96
    '::ffff:0:808:808',
    '::ffff:0:7f00:1', // IPv4-translated
    '64:ff9b::127.0.0.1',
    '64:ff9b::a00:1',
    '64:ff9b:1::808:808', // NAT64: private embedded, local-use prefix
    '2002:7f00:1::1',
    '2002:a00:1::1',
    '2002:a9fe:a9fe::1', // 6to4 of private addresses
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '100::1',
    '100::ffff:ffff:ffff:ffff', // discard
    'example.com',
    '',
  ])('refuses %s', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });
});

describe('resolveTarget', () => {
  // Literals only: the suite never resolves or connects to a public host.
  it('takes a URL with a public IP literal, IPv4 or IPv6', async () => {
    await expect(resolveTarget(new URL('https://8.8.8.8/hook'), false)).resolves.toEqual({ address: '8.8.8.8', family: 4 });
    await expect(resolveTarget(new URL('https://[2606:4700:4700::1111]:8443/hook'), false)).resolves.toMatchObject({ family: 6 });
  });

  it('refuses loopback written in the forms a URL parser accepts', async () => {
    for (const url of [
      'http://127.1/',
      'http://0x7f000001/',
      'http://2130706433/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::127.0.0.1]/',
      'http://[64:ff9b::7f00:1]/',
    ]) {
      await expect(resolveTarget(new URL(url), false), url).rejects.toThrow(/private, loopback or link-local/);
    }
  });

  it('lets private addresses through when they are allowed', async () => {
    await expect(resolveTarget(new URL('http://127.0.0.1:9/'), true)).resolves.toEqual({ address: '127.0.0.1', family: 4 });
  });
});
