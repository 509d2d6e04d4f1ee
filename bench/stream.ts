/** `npm run bench stream`: model chunk → text.delta on a WebSocket, with 1, 100 and 1,000 tasks streaming. */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { bareLoop } from './bare.ts';
import { now, pct, startBenchService, cpuMsOf, threadCpuMsOf, warmUp, submit, memoryOf, loopP99Ms, sleep } from './support.ts';

/**
 * Model chunk emitted → text.delta received on a WebSocket, with N tasks streaming at once; next to
 * it, in the same run on the same model server, the bare loop's reader and a minimal relay
 * (bench/relay.mjs: the model's SSE forwarded over a WebSocket, nothing else).
 */
export async function benchStream(tasks: number) {
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(tasks), MAX_QUEUED_TASKS: String(tasks), HEARTBEAT_MS: '60000' });
  svc.model.script('LATENCY', (ctx) =>
    ctx.turn === 0
      ? // A random phase: independent tasks do not emit in lock-step.
        {
          delayMs: 1500 + Math.random() * 50,
          chunkDelayMs: 50,
          liveChunks: { count: CHUNKS_PER_ANSWER, make: (i) => stamp(i) },
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

/** Text chunks in each streamed answer of the benchmark, 50 ms apart. */
export const CHUNKS_PER_ANSWER = 20;

/** A chunk's text: when the model server made it, and its place in its answer (from 0). */
const stamp = (place: number) => `|t=${now()}|${place}|`;
const STAMP = /\|t=([\d.]+)\|(\d+)\|/g;

/** Latencies of one run by a chunk's place in its answer: the first, the last, and those between. */
export interface ByPlace {
  first: number[];
  middle: number[];
  last: number[];
}

/**
 * Reads text.delta messages on WebSockets until each closes: the chunks' latencies, all and by
 * their place in the answer. Each socket is opened as soon as its task exists
 * (`open`), so that its deltas come live, not replayed.
 */
function deltaReader() {
  const latencies: number[] = [];
  const byPlace: ByPlace = { first: [], middle: [], last: [] };
  let deltas = 0;
  let opened = 0;
  const done: Promise<void>[] = [];
  return {
    /** Sockets open so far. */
    get opened() {
      return opened;
    },
    /** Sockets asked for so far. */
    get created() {
      return done.length;
    },
    open(url: string) {
      const socket = new WebSocket(url);
      socket.once('open', () => opened++);
      done.push(
        new Promise<void>((resolve, reject) => {
          socket.on('message', (raw) => {
            const received = now();
            const e = JSON.parse((raw as Buffer).toString());
            if (e.type !== 'text.delta') return;
            deltas++;
            for (const m of (e.data.text as string).matchAll(STAMP)) {
              const latency = received - Number(m[1]);
              const place = Number(m[2]);
              latencies.push(latency);
              (place === 0 ? byPlace.first : place === CHUNKS_PER_ANSWER - 1 ? byPlace.last : byPlace.middle).push(latency);
            }
          });
          socket.on('close', () => resolve());
          socket.on('error', reject);
        }),
      );
    },
    async finish(): Promise<{ latencies: number[]; byPlace: ByPlace; deltas: number }> {
      await Promise.all(done);
      return { latencies, byPlace, deltas };
    },
  };
}

/** The minimal relay (bench/relay.mjs) as its own process: `tasks` streams at once. */
export async function relayRun(modelUrl: string, tasks: number) {
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

/** One round of one side of the alternating benchmark. */
export interface StreamRound {
  p50: number;
  p99: number;
  max: number;
  chunks: number;
  /** p50 and p99 of the answers' first chunk, of their last, and of those between, ms. */
  byPlace: Record<keyof ByPlace, [number, number]>;
  deltas: number;
  /** Peak resident memory of the side's process during the round (sampled every 100 ms), MiB. */
  peakRssMiB: number;
  /** Worst one-second event-loop delay p99 of the service during the round (its /metrics), ms. */
  loopP99Ms: number;
  /** The side's CPU over the round, % of one core. */
  cpuPct: number;
  /** The side's CPU time over the round (user + system), ms. */
  cpuMs: number;
  /**
   * The side's CPU from the streams' go to the last socket's close (the burst and its backlog), ms:
   * its main thread's, and its other threads' (the collector's helpers, most of it).
   */
  burstCpuMs: { main: number; others: number };
  /** The machine's 1-minute load average at the round's start and end. */
  load: [number, number];
}

/**
 * `tasks` streams at once, live together: the service and the minimal relay in turn, `rounds`
 * times each after a round of each that is not counted (a warm-up), in one benchmark process on
 * one model server, so that a slow spell of this shared machine weighs on both. Every stream's
 * first chunk waits until every stream's model request has arrived and every reader is connected
 * (the scripted model's `waitFor`), then each task streams 20 chunks 50 ms apart (random phase):
 * `tasks` × 20 chunks a second, all live.
 */
export async function benchStreamRounds(tasks: number, rounds = 3) {
  const svc = await startBenchService({
    MAX_CONCURRENT_TASKS: String(tasks),
    MAX_QUEUED_TASKS: String(tasks),
    HEARTBEAT_MS: '60000',
    MAX_QUEUED_PER_TENANT: String(tasks),
  });
  let gate = startGate(tasks);
  svc.model.script('LATENCY', (ctx) => {
    if (ctx.turn !== 0) return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    gate.arrived();
    return {
      waitFor: gate.open,
      delayMs: Math.random() * 50,
      chunkDelayMs: 50,
      liveChunks: { count: CHUNKS_PER_ANSWER, make: (i) => stamp(i) },
      toolCalls: [{ name: 'list_files', args: {} }],
    };
  });
  await warmUp(svc.url);
  const relay = await startRelay(svc.model.url);
  const service: StreamRound[] = [];
  const relayRounds: StreamRound[] = [];
  try {
    // Round -1 warms both sides up and is not counted: a first round runs their stream paths
    // cold (the relay's p99 in it was 2 to 10 times its later rounds').
    for (let round = -1; round < rounds; round++) {
      gate = startGate(tasks);
      const ours = await measureRound(svc.pid, svc.url, gate, async (reader) => {
        await Promise.all(
          Array.from({ length: tasks }, async (_, i) => reader.open(`${svc.url.replace('http', 'ws')}${(await submit(svc.url, `LATENCY ${i}`, i)).streamUrl}`)),
        );
      });
      gate = startGate(tasks);
      const relays = await measureRound(relay.pid, null, gate, async (reader) => {
        for (let i = 0; i < tasks; i++) reader.open(`ws://127.0.0.1:${relay.port}/?prompt=${encodeURIComponent(`LATENCY ${i}`)}`);
      });
      if (round < 0) continue;
      service.push(ours);
      relayRounds.push(relays);
    }
  } finally {
    relay.close();
    await svc.close();
  }
  const median = (xs: number[]) => pct(xs, 50);
  return {
    tasks,
    rounds,
    service,
    relay: relayRounds,
    /** Medians over the rounds; the ratio is the median of each round's service ÷ relay. */
    p99Ratio: median(service.map((s, i) => s.p99 / relayRounds[i].p99)),
    p50Ratio: median(service.map((s, i) => s.p50 / relayRounds[i].p50)),
    median: {
      serviceP50: median(service.map((s) => s.p50)),
      serviceP99: median(service.map((s) => s.p99)),
      relayP50: median(relayRounds.map((s) => s.p50)),
      relayP99: median(relayRounds.map((s) => s.p99)),
      servicePeakRssMiB: median(service.map((s) => s.peakRssMiB)),
      serviceLoopP99Ms: median(service.map((s) => s.loopP99Ms)),
    },
  };
}

/** Holds the streams' first chunks until `tasks` model requests have arrived and the round says go. */
function startGate(tasks: number) {
  let requests = 0;
  let release!: () => void;
  let allArrived!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const arrivedAll = new Promise<void>((r) => (allArrived = r));
  return {
    open,
    arrivedAll,
    arrived() {
      if (++requests === tasks) allArrived();
    },
    release: () => release(),
  };
}

/** Opens the readers (`start`), lets the streams go once all are connected and every request arrived, and reads until every socket closes. */
async function measureRound(
  pid: number,
  serviceUrl: string | null,
  gate: ReturnType<typeof startGate>,
  start: (reader: ReturnType<typeof deltaReader>) => Promise<void>,
): Promise<StreamRound> {
  const load0 = loadavg()[0];
  const reader = deltaReader();
  let peakRss = 0;
  const loopSamples: number[] = [];
  if (serviceUrl) await loopP99Ms(serviceUrl);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memoryOf(pid).rss)), 100);
  const scraper = serviceUrl
    ? setInterval(
        () =>
          void loopP99Ms(serviceUrl).then(
            (v) => loopSamples.push(v),
            () => undefined,
          ),
        1000,
      )
    : null;
  const cpu0 = cpuMsOf(pid);
  const t0 = now();
  try {
    await start(reader);
    await gate.arrivedAll;
    while (reader.opened < reader.created) await sleep(10);
    // The service subscribes a socket's task as it opens; a moment for the last ones.
    await sleep(200);
    const burst0 = threadCpuMsOf(pid);
    gate.release();
    const { latencies, byPlace, deltas } = await reader.finish();
    const burst = threadCpuMsOf(pid);
    if (serviceUrl) loopSamples.push(await loopP99Ms(serviceUrl));
    const wall = now() - t0;
    return {
      p50: pct(latencies, 50),
      p99: pct(latencies, 99),
      max: pct(latencies, 100),
      chunks: latencies.length,
      byPlace: {
        first: [pct(byPlace.first, 50), pct(byPlace.first, 99)],
        middle: [pct(byPlace.middle, 50), pct(byPlace.middle, 99)],
        last: [pct(byPlace.last, 50), pct(byPlace.last, 99)],
      },
      deltas,
      peakRssMiB: peakRss,
      loopP99Ms: loopSamples.length > 0 ? Math.max(...loopSamples) : NaN,
      cpuPct: ((cpuMsOf(pid) - cpu0) / wall) * 100,
      cpuMs: cpuMsOf(pid) - cpu0,
      burstCpuMs: { main: burst.main - burst0.main, others: burst.others - burst0.others },
      load: [load0, loadavg()[0]],
    };
  } finally {
    clearInterval(sampler);
    if (scraper) clearInterval(scraper);
  }
}

/** The minimal relay (bench/relay.mjs) as a warm process of its own. */
async function startRelay(modelUrl: string) {
  const child = spawn(process.execPath, ['bench/relay.mjs'], { env: { ...process.env, OPENAI_BASE_URL: modelUrl }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const { port } = JSON.parse((await lines.next()).value as string) as { port: number };
  return { port, pid: child.pid!, close: () => child.kill('SIGTERM') };
}
