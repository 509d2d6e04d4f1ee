import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(() => svc.close());

describe('service routes', () => {
  it('GET /healthz', async () => {
    const res = await svc.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /agents lists the built-ins with resolved model, limit and tools', async () => {
    const { agents } = (await svc.inject({ url: '/agents' })).json();
    const byType = Object.fromEntries(agents.map((a: any) => [a.type, a]));
    expect(Object.keys(byType)).toEqual(['general', 'explore', 'plan', 'shell']);
    expect(byType.general).toMatchObject({ model: 'gpt-4.1-mini', maxSteps: 50 });
    expect(byType.general.tools.sort()).toEqual(['bash', 'complete', 'edit_file', 'glob', 'grep', 'list_files', 'read_file', 'write_file']);
    expect(byType.explore.tools.sort()).toEqual(['complete', 'glob', 'grep', 'list_files', 'read_file']);
    expect(byType.shell).toMatchObject({ model: null, tools: ['bash'] });
    for (const a of agents) expect(a.tools).not.toEqual(expect.arrayContaining(['task']));
  });

  it('serves the OpenAPI document generated from the zod schemas, and its UI', async () => {
    const doc = (await svc.inject({ url: '/docs/json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    for (const p of ['/tasks', '/tasks/{id}', '/tasks/{id}/cancel', '/usage', '/usage/records', '/agents', '/healthz']) {
      expect(Object.keys(doc.paths)).toContain(p);
    }
    const body = doc.components.schemas.CreateTaskBody;
    expect(body.required).toEqual(expect.arrayContaining(['description', 'context']));
    // Left out, it means a fork (and is refused without `fork`).
    expect(body.properties.subagent_type.default).toBe('fork');
    expect(body.properties.description.maxLength).toBe(80);
    const ui = await svc.inject({ url: '/docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toContain('text/html');
  });

  it('GET /metrics exposes task, step, token, duration and queue metrics', async () => {
    svc.model.script('METRICS-RUN', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 11, output: 7 } }]);
    await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: { subagent_type: 'general', description: 'm', prompt: 'METRICS-RUN', context: { parentTaskId: 'T-m', userId: 'u' } },
    });
    const res = await svc.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toContain('subagentd_tasks_total{status="completed",subagent_type="general"} 1');
    expect(res.body).toContain('subagentd_model_calls_total 1');
    expect(res.body).toContain('subagentd_tokens_total{kind="input"} 11');
    expect(res.body).toContain('subagentd_tokens_total{kind="output"} 7');
    expect(res.body).toContain('subagentd_task_duration_seconds_count{subagent_type="general"} 1');
    expect(res.body).toContain('subagentd_tasks_queued 0');
    // HTTP durations by route pattern and status, open sockets, provider failures by kind.
    expect(res.body).toMatch(/subagentd_http_request_duration_seconds_count\{route="\/tasks",method="POST",status="200"\} [1-9]/);
    expect(res.body).toContain('subagentd_stream_connections{transport="websocket"} 0');
    expect(res.body).toContain('subagentd_stream_connections{transport="sse"} 0');
    // Process metrics under the names standard dashboards look for.
    expect(res.body).toMatch(/^process_resident_memory_bytes \d/m);
    expect(res.body).toMatch(/^nodejs_eventloop_lag_p99_seconds \d/m);
    expect(res.body).not.toContain('subagentd_process_');
    // Every help text is there, and a metric with a unit in its name says it in its help.
    expect(res.body).toContain('# HELP subagentd_model_cost_usd_total What the billed model calls cost, in US dollars');
  });

  it('GET /metrics counts provider error answers and the failures that ended tasks', async () => {
    svc.model.script('METRICS-FAIL', () => ({ status: 503, errorMessage: 'down' }));
    const out = (
      await svc.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: { subagent_type: 'general', description: 'm', prompt: 'METRICS-FAIL', context: { parentTaskId: 'T-m', userId: 'u' } },
      })
    ).json();
    expect(out.error.code).toBe('provider_error');
    const res = await svc.inject({ url: '/metrics' });
    expect(res.body).toMatch(/subagentd_provider_http_errors_total\{status="503"\} [1-9]/);
    expect(res.body).toContain('subagentd_provider_errors_total{kind="provider_error"} 1');
  });
});

describe('tracing off', () => {
  it('loads no OpenTelemetry code while OTEL_EXPORTER_OTLP_ENDPOINT is unset', async () => {
    svc.model.script('NO-OTEL', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: { subagent_type: 'explore', description: 'o', prompt: 'NO-OTEL', context: { parentTaskId: 'T-o', userId: 'u' } },
    });
    // (The ai SDK itself loads @opentelemetry/api, a few kilobytes of no-op interfaces.)
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => /@opentelemetry\/(sdk-|exporter-|otlp-|resources|core)/.test(k));
    expect(loaded).toEqual([]);
  });
});
