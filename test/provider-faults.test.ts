import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../scripted-model/server';
import { until } from './support/until';
import { startService, taskBody, taskEnd, TEST_API_KEY, type TestService } from './support/harness';

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

  it('does not follow a redirect of the model endpoint: provider_error with its status, nothing sent to where it points', async () => {
    const elsewhere = createServer((_req, res) => res.end('{}'));
    let reached = 0;
    elsewhere.on('request', () => reached++);
    elsewhere.listen(0, '127.0.0.1');
    await once(elsewhere, 'listening');
    try {
      const target = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/v1/chat/completions`;
      svc.model.script('REDIRECTED', () => ({ status: 307, headers: { location: target }, errorMessage: 'moved' }));
      const out = await run('REDIRECTED');
      expect(out).toMatchObject({ status: 'error', error: { code: 'provider_error' }, steps: 0 });
      expect(requestsFor('REDIRECTED')).toHaveLength(1);
      expect(reached).toBe(0);
    } finally {
      elsewhere.close();
    }
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

  it('bills usage that arrived before the connection was cut (usage chunk, no [DONE])', async () => {
    svc.model.script('CUT-AFTER-USAGE', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 40, output: 4 } }
        : { text: 'half an answer', usage: { input: 50, output: 5 }, fault: 'cut-after-usage' },
    );
    const out = await run('CUT-AFTER-USAGE');
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_error' }, steps: 1, usage: { inputTokens: 90, outputTokens: 9 } });
  });

  it('bills usage received before a cancel, while the model still held the connection', async () => {
    svc.model.script('HOLD-AFTER-USAGE', [{ text: 'held', usage: { input: 70, output: 7 }, fault: 'hold-after-usage' }]);
    const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'HOLD-AFTER-USAGE' }) })).json().id;
    // The usage chunk is billed the moment the cut or cancel ends the call: wait until it was sent,
    // and until the service had read it (each chunk it reads moves the task's lastActivityAt).
    await until(async () => svc.model.usageSent.some((u) => u.prompt.includes('HOLD-AFTER-USAGE')));
    const sentAt = svc.model.usageSent.find((u) => u.prompt.includes('HOLD-AFTER-USAGE'))!.at;
    await until(async () => Date.parse((await svc.inject({ url: `/tasks/${id}` })).json().progress?.lastActivityAt ?? 0) >= sentAt);
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    const ended = await taskEnd(svc, id);
    expect(ended).toMatchObject({ status: 'aborted', error: { code: 'cancelled' }, usage: { inputTokens: 70, outputTokens: 7 } });
  });

  it('never completes on a stream that ends without a finish reason, mid-text or mid-tool-call', async () => {
    svc.model.script('NO-FINISH-TEXT', [{ text: 'truncated answ', fault: 'no-finish' }]);
    expect(await run('NO-FINISH-TEXT')).toMatchObject({ status: 'error', error: { code: 'provider_error' } });
    svc.model.script('NO-FINISH-TOOL', [{ toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [] } }], fault: 'no-finish' }]);
    const out = await run('NO-FINISH-TOOL');
    expect(out.status).not.toBe('completed');
    expect(out.error.message).toMatch(/without a finish reason/);
  });

  it('retries a 200 with an HTML or empty body, then completes; gives up with provider_error', async () => {
    svc.model.script('HTML-THEN-OK', (ctx): ScriptedTurn =>
      ctx.attempt === 1
        ? { fault: 'html' }
        : ctx.attempt === 2
          ? { fault: 'empty' }
          : { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] },
    );
    expect(await run('HTML-THEN-OK')).toMatchObject({ status: 'completed', stopReason: 'complete', summary: 'ok' });
    expect(requestsFor('HTML-THEN-OK')).toHaveLength(3);
    svc.model.script('HTML-ALWAYS', () => ({ fault: 'html' }));
    const out = await run('HTML-ALWAYS');
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_error' }, summary: null });
    expect(requestsFor('HTML-ALWAYS')).toHaveLength(3);
  });

  it('takes a complete answer with no text as an answer: not retried, billed once', async () => {
    svc.model.script('EMPTY-BUT-FINISHED', [{ text: '', usage: { input: 12, output: 0 } }]);
    const out = await run('EMPTY-BUT-FINISHED');
    expect(out).toMatchObject({ status: 'completed', stopReason: 'text', usage: { inputTokens: 12 } });
    expect(requestsFor('EMPTY-BUT-FINISHED')).toHaveLength(1);
  });

  it('ends a provider that sends only keep-alive comments as provider_timeout', async () => {
    svc.model.script('KEEPALIVE-ONLY', [{ fault: 'keepalive-only', chunkDelayMs: 50 }]);
    expect(await run('KEEPALIVE-ONLY')).toMatchObject({ status: 'error', error: { code: 'provider_timeout' } });
  });

  it('ends silence before the first byte as provider_timeout after one stall timeout, without retrying it', async () => {
    svc.model.script('SILENT-START', [{ text: 'too late', delayMs: 3000 }]);
    const started = Date.now();
    const out = await run('SILENT-START');
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_timeout' } });
    expect(requestsFor('SILENT-START')).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(2500);
  });
});
