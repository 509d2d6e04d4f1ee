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

  it('defaults the per-tenant concurrency to the global one', () => {
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5' }).maxConcurrentPerTenant).toBe(5);
    expect(loadConfig({ MAX_CONCURRENT_TASKS: '5', MAX_CONCURRENT_PER_TENANT: '2' }).maxConcurrentPerTenant).toBe(2);
  });
});
