import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedTurn } from './support/scripted-model';
import { startService, taskBody, TEST_API_KEY, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { MODEL_MAX_RETRIES: '2', MODEL_STALL_TIMEOUT_MS: '400', BASH_TIMEOUT_MS: '5000' } });
});
afterAll(() => svc.close());

const run = async (marker: string, over: Record<string, unknown> = {}) =>
  (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: marker, ...over }) })).json();
const requestsFor = (marker: string) => svc.model.requests.filter((r) => JSON.stringify(r.body.messages[1]).includes(marker));

describe('provider faults', () => {
  it('retries a 429 (honouring Retry-After) and a 503, then succeeds, billing each step once', async () => {
    svc.model.script('RETRY-OK', (ctx): ScriptedTurn => {
      if (ctx.turn === 0 && ctx.attempt === 1) return { status: 429, headers: { 'retry-after': '0' }, errorMessage: 'slow down' };
      if (ctx.turn === 0) return { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 10, output: 1 } };
      if (ctx.attempt === 1) return { status: 503, headers: { 'retry-after-ms': '20' }, errorMessage: 'overloaded' };
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 20, output: 2 } };
    });
    const out = await run('RETRY-OK');
    expect(out).toMatchObject({ status: 'completed', steps: 2, usage: { inputTokens: 30, outputTokens: 3 } });
    expect(requestsFor('RETRY-OK')).toHaveLength(4);
  });

  it('gives up after the bounded retries: error / provider_error, no key in the message', async () => {
    svc.model.script('RETRY-FAIL', () => ({ status: 500, headers: { 'retry-after-ms': '20' }, errorMessage: 'still broken' }));
    const out = await run('RETRY-FAIL');
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_error' }, steps: 0 });
    expect(out.error.message).toContain('still broken');
    expect(out.error.message).not.toContain(TEST_API_KEY);
    expect(requestsFor('RETRY-FAIL')).toHaveLength(3);
  });

  it('does not retry a client error such as 400', async () => {
    svc.model.script('NO-RETRY-400', () => ({ status: 400, errorMessage: 'bad request' }));
    const out = await run('NO-RETRY-400');
    expect(out.error.code).toBe('provider_error');
    expect(requestsFor('NO-RETRY-400')).toHaveLength(1);
  });

  it('cuts a model that stalls mid-answer (provider_timeout) and keeps the finished steps billed', async () => {
    svc.model.script('STALL', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 40, output: 4 } }
        : { text: 'starting then silence', chunkSize: 4, chunkDelayMs: 5000 },
    );
    const out = await run('STALL');
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_timeout' }, steps: 1, usage: { inputTokens: 40, outputTokens: 4 } });
  });

  it('does not count a long tool run as a model stall', async () => {
    svc.model.script('SLOW-TOOL', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'bash', args: { command: 'sleep 1; echo slept' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] },
    );
    const out = await run('SLOW-TOOL');
    expect(out).toMatchObject({ status: 'completed', stopReason: 'complete' });
  });
});
