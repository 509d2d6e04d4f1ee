/** `npm run bench tracing`: sequential tasks with OpenTelemetry off and on. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { now, sleep, pct, startBenchService } from './support.ts';

/**
 * The cost of tracing: sequential 3-step tasks (?wait=true, one at a time) with OpenTelemetry off,
 * then on (exporting to an OTLP/HTTP receiver on loopback that counts the spans it gets).
 */
export async function benchTracing(tasks = 200) {
  let spans = 0;
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      spans += (body.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const rows = [];
  for (const mode of ['off', 'on'] as const) {
    spans = 0;
    const svc = await startBenchService(mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '200' } : {});
    const times: number[] = [];
    for (let i = 0; i < tasks; i++) {
      const marker = `TRACE-BENCH-${mode}-${i}`;
      svc.model.script(marker, [
        { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 100, output: 10 } },
        { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 100, output: 10 } },
        { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 100, output: 10 } },
      ]);
      const t = now();
      const res = await fetch(`${svc.url}/tasks?wait=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
        body: JSON.stringify({ subagent_type: 'general', description: 'trace bench', prompt: marker, context: { parentTaskId: 'P-trace', userId: 'u' } }),
      });
      await res.json();
      times.push(now() - t);
    }
    await sleep(500);
    await svc.close();
    rows.push({ mode, tasks, p50: pct(times, 50), p99: pct(times, 99), mean: times.reduce((a, b) => a + b, 0) / times.length, spans });
  }
  await new Promise<void>((r) => receiver.close(() => r()));
  return rows;
}
