import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('refuses an OPENAI_BASE_URL without an http(s) scheme, naming the variable', () => {
    for (const url of ['localhost:11434/v1', 'ftp://example.com/v1', 'api.openai.com']) {
      expect(() => loadConfig({ OPENAI_BASE_URL: url }), url).toThrow(ConfigError);
      expect(() => loadConfig({ OPENAI_BASE_URL: url })).toThrow(/OPENAI_BASE_URL: must be an http\(s\) URL/);
    }
    expect(loadConfig({ OPENAI_BASE_URL: 'http://localhost:11434/v1' }).openaiBaseUrl).toBe('http://localhost:11434/v1');
    expect(loadConfig({ OPENAI_BASE_URL: 'https://api.openai.com/v1' }).openaiBaseUrl).toBe('https://api.openai.com/v1');
  });

  it("refuses a tenant's name that is not one folder's name, and takes those that are", () => {
    for (const tenant of ['..', '../acme', 'acme/../other', 'a/b', '.hidden', 'x'.repeat(129), 'a b']) {
      expect(() => loadConfig({ API_KEYS: `key-0123456789:${tenant}` }), tenant).toThrow(/API_KEYS: a tenant's name is a folder's name/);
    }
    // A bare key is its own tenant: one with a slash (base64) is refused, with the way out in the message.
    expect(() => loadConfig({ API_KEYS: 'ab/cd+ef==' })).toThrow(/give a key with other characters one, key:tenant/);
    const keys = loadConfig({ API_KEYS: 'ab/cd+ef==:acme,k2:team-2.prod_x:read,k3:u+1@corp=x' }).apiKeys!;
    expect([...keys.values()]).toEqual([
      { tenant: 'acme', role: 'admin' },
      { tenant: 'team-2.prod_x', role: 'read' },
      { tenant: 'u+1@corp=x', role: 'admin' },
    ]);
  });

  it('refuses one key given for two tenants or two roles', () => {
    expect(() => loadConfig({ API_KEYS: 'k1:alice,k1:bob' })).toThrow(/one key is given twice, for tenants "alice" and "bob"/);
    expect(() => loadConfig({ API_KEYS: 'k1:alice,k1:alice:read' })).toThrow(/one key is given twice/);
    // The same entry twice says the same thing.
    expect([...loadConfig({ API_KEYS: 'k1:alice,k1:alice' }).apiKeys!.values()]).toEqual([{ tenant: 'alice', role: 'admin' }]);
  });

  it('defaults the per-tenant concurrency to the global one', () => {
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5' }).maxConcurrentPerTenant).toBe(5);
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5', MAX_CONCURRENT_PER_TENANT: '2' }).maxConcurrentPerTenant).toBe(2);
  });

  it('slices the event loop every 15 ms unless told 0 (off) or another bound up to 1000 ms', () => {
    expect(loadConfig({}).loopSliceMs).toBe(15);
    expect(loadConfig({ LOOP_SLICE_MS: '0' }).loopSliceMs).toBe(0);
    expect(loadConfig({ LOOP_SLICE_MS: '25' }).loopSliceMs).toBe(25);
    for (const bad of ['-1', '1001', '2.5', 'often']) expect(() => loadConfig({ LOOP_SLICE_MS: bad }), bad).toThrow(/LOOP_SLICE_MS/);
  });

  it("bounds the heap's growth at 30 % unless told 0 or another percent from 10 to 300", () => {
    expect(loadConfig({}).heapGrowingPercent).toBe(30);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '150' }).heapGrowingPercent).toBe(150);
    // Set to spaces only, it is unset (it read as 0, which turned the bound off).
    expect(loadConfig({ HEAP_GROWING_PERCENT: ' ' }).heapGrowingPercent).toBe(30);
    expect(loadConfig({ MAX_EVENT_LOOP_DELAY_MS: '\t' }).maxEventLoopDelayMs).toBe(1000);
    for (const bad of ['5', '301', '-1', '2.5', 'lots']) {
      expect(() => loadConfig({ HEAP_GROWING_PERCENT: bad }), bad).toThrow(/HEAP_GROWING_PERCENT/);
    }
  });
});

describe('SANDBOX=container', () => {
  it('needs SANDBOX_IMAGE, and reads DOCKER_HOST and the TLS settings', () => {
    expect(() => loadConfig({ SANDBOX: 'container' })).toThrow(/SANDBOX_IMAGE: is required with SANDBOX=container/);
    const c = loadConfig({
      SANDBOX: 'container',
      SANDBOX_IMAGE: 'debian:bookworm',
      DOCKER_HOST: 'tcp://engine.internal:2376',
      DOCKER_TLS_VERIFY: '1',
      DOCKER_CERT_PATH: '/etc/docker-certs',
    });
    expect(c).toMatchObject({
      sandbox: 'container',
      sandboxImage: 'debian:bookworm',
      docker: { host: 'tcp://engine.internal:2376', tlsVerify: true, certPath: '/etc/docker-certs' },
    });
    expect(loadConfig({}).sandbox).toBe('bwrap');
  });

  it('refuses a malformed image, DOCKER_HOST, or TLS without its files, naming the variable', () => {
    expect(() => loadConfig({ SANDBOX: 'container', SANDBOX_IMAGE: 'Debian;rm -rf /' })).toThrow(/SANDBOX_IMAGE: must be an image reference/);
    expect(() => loadConfig({ SANDBOX: 'container', SANDBOX_IMAGE: 'debian', DOCKER_HOST: 'http://x' })).toThrow(/DOCKER_HOST: must be unix:\/\/\/path/);
    expect(() => loadConfig({ SANDBOX: 'container', SANDBOX_IMAGE: 'debian', DOCKER_HOST: 'tcp://x:2376', DOCKER_TLS_VERIFY: '1' })).toThrow(
      /DOCKER_CERT_PATH: is required with DOCKER_TLS_VERIFY=1/,
    );
    expect(() => loadConfig({ SANDBOX: 'vm' })).toThrow(/SANDBOX:/);
  });
});
