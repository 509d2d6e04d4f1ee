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

  it('defaults the per-tenant concurrency to the global one', () => {
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5' }).maxConcurrentPerTenant).toBe(5);
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5', MAX_CONCURRENT_PER_TENANT: '2' }).maxConcurrentPerTenant).toBe(2);
  });
});
