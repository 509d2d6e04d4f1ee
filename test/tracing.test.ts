import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { until } from './support/until';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number; message?: string };
}

/** A real OTLP/HTTP receiver: decodes what the exporter POSTs to /v1/traces (OTLP JSON). */
let receiver: Server;
const spans: OtlpSpan[] = [];
let svc: TestService;
beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  // The standard variables, read by the official SDK (this file runs in its own process).
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  svc = await startService();
});
afterAll(async () => {
  await svc.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  await new Promise<void>((r) => receiver.close(() => r()));
});

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue));
};

describe('OpenTelemetry', () => {
  it("exports the task as invoke_agent with GenAI attributes, model calls and tool calls as its children, under the caller's trace", async () => {
    svc.model.script('TRACED', [
      { toolCalls: [{ name: 'read_file', args: { path: 'missing.txt' } }], usage: { input: 40, output: 4 } },
      { toolCalls: [{ name: 'complete', args: { summary: 'traced', paths: [] } }], usage: { input: 60, output: 6 } },
    ]);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
      payload: taskBody({ prompt: 'TRACED', context: { parentTaskId: 'T-trace', userId: 'u-t' } }),
    });
    const task = JSON.parse(res.body);
    expect(task.status).toBe('completed');
    await until(async () => spans.some((s) => s.name === 'invoke_agent general' && attr(s, 'subagentd.task.id') === task.id), 10_000);

    const root = spans.find((s) => s.name === 'invoke_agent general' && attr(s, 'subagentd.task.id') === task.id)!;
    expect(root.traceId).toBe(traceId);
    expect(root.parentSpanId).toBe(callerSpan);
    expect(attr(root, 'gen_ai.operation.name')).toBe('invoke_agent');
    expect(attr(root, 'gen_ai.agent.name')).toBe('general');
    expect(attr(root, 'gen_ai.conversation.id')).toBe('T-trace');
    expect(attr(root, 'gen_ai.request.model')).toBe('gpt-4.1-mini');
    expect(attr(root, 'gen_ai.usage.input_tokens')).toBe(100);
    expect(attr(root, 'gen_ai.usage.output_tokens')).toBe(10);

    await until(async () => spans.filter((s) => s.parentSpanId === root.spanId).length >= 4, 10_000);
    const children = spans.filter((s) => s.parentSpanId === root.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['chat gpt-4.1-mini', 'chat gpt-4.1-mini', 'execute_tool complete', 'execute_tool read_file']);
    expect(children.every((s) => s.traceId === traceId)).toBe(true);
    const chats = children.filter((s) => s.name.startsWith('chat'));
    expect(chats.map((s) => attr(s, 'gen_ai.usage.input_tokens')).sort()).toEqual([40, 60]);
    // The failed tool call is recorded as an error.
    const failed = children.find((s) => s.name === 'execute_tool read_file')!;
    expect(failed.status?.code).toBe(2);
    expect(failed.status?.message).toMatch(/does not exist/);
  });

  it('gives a compaction call its own chat span under the task', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-trace-compact-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(
      path.join(dir, 'agents', 'compacting.md'),
      '---\nname: compacting\ndescription: c\ncompactAtTokens: 1000\ncompactionModel: compactor\n---\nWork.\n',
    );
    const other = await startService({ model: svc.model, dir });
    try {
      svc.model.script('TRACE-COMPACT', (ctx) => {
        if (ctx.model === 'compactor') return { text: 'SUMMARY', usage: { input: 300, output: 30 } };
        if (JSON.stringify(ctx.messages).includes('SUMMARY')) return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
        return { toolCalls: [{ name: 'list_files', args: { path: `TRACE-COMPACT-${ctx.turn}` } }], usage: { input: 1200, output: 5 } };
      });
      const task = (
        await other.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ subagent_type: 'compacting', prompt: 'TRACE-COMPACT' }) })
      ).json();
      expect(task.usage.compactions).toBe(1);
      await until(async () => spans.some((s) => attr(s, 'subagentd.task.id') === task.id), 10_000);
      const root = spans.find((s) => attr(s, 'subagentd.task.id') === task.id)!;
      await until(async () => spans.some((s) => s.parentSpanId === root.spanId && s.name === 'chat compactor'), 10_000);
      const compactions = spans.filter((s) => s.parentSpanId === root.spanId && s.name === 'chat compactor');
      expect(compactions).toHaveLength(1);
      const compaction = compactions[0];
      expect(attr(compaction, 'gen_ai.usage.input_tokens')).toBe(300);
    } finally {
      await other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
