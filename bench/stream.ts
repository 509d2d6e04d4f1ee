/** `npm run bench stream`: model chunk → text.delta on a WebSocket, with 1, 100 and 1,000 tasks streaming. */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { bareLoop } from './bare.ts';
import { now, pct, startBenchService, cpuMsOf, warmUp, submit } from './support.ts';

/**
 * Model chunk emitted → text.delta received on a WebSocket, with N tasks streaming at once; next to
 * it, in the same run on the same model server, the bare loop's reader and a minimal relay
 * (bench/relay.mjs: the model's SSE forwarded over a WebSocket, nothing else).
 */
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
  const started = now();
  const serviceCpu0 = cpuMsOf(svc.pid);
  const benchCpu0 = process.cpuUsage();
  const reader = deltaReader();
  for (let i = 0; i < tasks; i++) reader.open(`${svc.url.replace('http', 'ws')}${(await submit(svc.url, `LATENCY ${i}`, i)).streamUrl}`);
  const service = await reader.finish();
  const wall = now() - started;
  const serviceCpu = cpuMsOf(svc.pid) - serviceCpu0;
  const b = process.cpuUsage(benchCpu0);
  // The bare loop reading the same chunks, the same number of tasks at once, on the same model server.
  const bare = await bareLoop(svc.model.url, tasks, tasks, ['--marker', 'LATENCY', '--stream']);
  const relay = await relayRun(svc.model.url, tasks);
  await svc.close();
  return {
    tasks,
    bareP50: pct(bare.chunkLatencies!, 50),
    bareP99: pct(bare.chunkLatencies!, 99),
    relayP50: pct(relay.latencies, 50),
    relayP99: pct(relay.latencies, 99),
    chunks: service.latencies.length,
    deltas: service.deltas,
    p50: pct(service.latencies, 50),
    p99: pct(service.latencies, 99),
    max: pct(service.latencies, 100),
    wallMs: wall,
    serviceCpuPct: (serviceCpu / wall) * 100,
    benchCpuPct: ((b.user + b.system) / 1000 / wall) * 100,
  };
}

/**
 * Reads text.delta messages on WebSockets until each closes: the chunks' latencies. Each socket is
 * opened as soon as its task exists (`open`), so that its deltas come live, not replayed.
 */
function deltaReader() {
  const latencies: number[] = [];
  let deltas = 0;
  const done: Promise<void>[] = [];
  return {
    open(url: string) {
      const socket = new WebSocket(url);
      done.push(
        new Promise<void>((resolve, reject) => {
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
    },
    async finish(): Promise<{ latencies: number[]; deltas: number }> {
      await Promise.all(done);
      return { latencies, deltas };
    },
  };
}

/** The minimal relay (bench/relay.mjs) as its own process: `tasks` streams at once. */
async function relayRun(modelUrl: string, tasks: number) {
  const child = spawn(process.execPath, ['bench/relay.mjs'], { env: { ...process.env, OPENAI_BASE_URL: modelUrl }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const { port } = JSON.parse((await lines.next()).value as string) as { port: number };
    const reader = deltaReader();
    for (let i = 0; i < tasks; i++) reader.open(`ws://127.0.0.1:${port}/?prompt=${encodeURIComponent(`LATENCY ${i}`)}`);
    return await reader.finish();
  } finally {
    child.kill('SIGTERM');
  }
}
