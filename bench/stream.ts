/** `npm run bench stream`: model chunk → text.delta on a WebSocket, with 1, 100 and 1,000 tasks streaming. */
import WebSocket from 'ws';
import { bareLoop } from './bare.ts';
import { now, pct, startBenchService, cpuMsOf, warmUp, submit } from './support.ts';

/** Model chunk emitted → text.delta received on a WebSocket, with N tasks streaming at once. */
export async function benchStream(tasks: number) {
  const chunks = 20;
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(tasks), MAX_QUEUED_TASKS: String(tasks), HEARTBEAT_MS: '60000' });
  svc.model.script('LATENCY', (ctx) =>
    ctx.turn === 0
      ? // A random phase: independent tasks do not emit in lock-step.
        {
          delayMs: 1500 + Math.random() * 50,
          chunkDelayMs: 50,
          liveChunks: { count: chunks, make: () => `|t=${now()}|` },
          toolCalls: [{ name: 'list_files', args: {} }],
        }
      : { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] },
  );
  await warmUp(svc.url);
  const latencies: number[] = [];
  let deltas = 0;
  const done: Promise<void>[] = [];
  const started = now();
  const serviceCpu0 = cpuMsOf(svc.pid);
  const benchCpu0 = process.cpuUsage();
  for (let i = 0; i < tasks; i++) {
    const { streamUrl } = await submit(svc.url, `LATENCY ${i}`, i);
    const socket = new WebSocket(`${svc.url.replace('http', 'ws')}${streamUrl}`);
    done.push(
      new Promise((resolve, reject) => {
        socket.on('message', (raw) => {
          const received = now();
          const e = JSON.parse((raw as Buffer).toString());
          if (e.type !== 'text.delta') return;
          deltas++;
          for (const m of (e.data.text as string).matchAll(/\|t=([\d.]+)\|/g)) latencies.push(received - Number(m[1]));
        });
        socket.on('close', () => resolve());
        socket.on('error', reject);
      }),
    );
  }
  await Promise.all(done);
  const wall = now() - started;
  const serviceCpu = cpuMsOf(svc.pid) - serviceCpu0;
  const b = process.cpuUsage(benchCpu0);
  // The bare loop reading the same chunks, the same number of tasks at once, on the same model server.
  const bare = await bareLoop(svc.model.url, tasks, tasks, ['--marker', 'LATENCY', '--stream']);
  await svc.close();
  return {
    tasks,
    bareP50: pct(bare.chunkLatencies!, 50),
    bareP99: pct(bare.chunkLatencies!, 99),
    chunks: latencies.length,
    deltas,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    max: pct(latencies, 100),
    wallMs: wall,
    serviceCpuPct: (serviceCpu / wall) * 100,
    benchCpuPct: ((b.user + b.system) / 1000 / wall) * 100,
  };
}
