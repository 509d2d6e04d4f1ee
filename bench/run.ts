/**
 * `npm run bench [goals|compare|stream|load|crash|usage|tracing|instances]`: the benchmarks of BENCHMARKS.md
 * (`goals`: only those of issue 16, each next to the bare loop's figure from the same run). Everything
 * runs on this machine over loopback: the service and the bare loop as their own processes, the
 * scripted model server and the clients in this one.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import WebSocket from 'ws';
import { closeDatabase, openSqlite } from '../src/store/database';
import { rebuildRollups } from '../src/store/rollups';
import { ensureDatabase, startTestPostgres } from '../test/support/postgres';
import { startChildService, type ChildService } from '../test/support/child-service';
import { startScriptedModel } from '../scripted-model/server';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const f = (n: number, d = 1) => n.toFixed(d);

/** The service's environment for a benchmark: its files in `dir`, the scripted model, no limits in the way. */
function benchEnv(dir: string, modelUrl: string): Record<string, string> {
  return {
    DATABASE_PATH: path.join(dir, 'db.sqlite'),
    WORKSPACES_DIR: path.join(dir, 'workspaces'),
    AGENTS_DIR: path.join(dir, 'agents'),
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'bench',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    // The load benchmark submits 1,000 tasks in one burst: measure, do not shed.
    MAX_EVENT_LOOP_DELAY_MS: '0',
  };
}

/**
 * The service as its own process (what `npm start` runs), so that the model server and the
 * clients of the benchmark, which run here, do not share its event loop.
 */
async function startBenchService(env: Record<string, string>, opts: { dir?: string } = {}) {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'subagentd-bench-'));
  const model = await startScriptedModel();
  model.script('WARMUP', [
    { text: 'warming up', toolCalls: [{ name: 'list_files', args: {} }] },
    { toolCalls: [{ name: 'complete', args: { summary: 'warm', paths: [] } }] },
  ]);
  const svc = await startChildService(
    { ...benchEnv(dir, model.url), ...env },
    // e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service.
    process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean),
    // What production runs: the build main() made, on bare Node.
    { built: true },
  );
  return {
    model,
    url: svc.url,
    pid: svc.child.pid!,
    async close() {
      svc.child.kill('SIGTERM');
      await svc.exited;
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Current and peak resident memory of a process, from /proc (MiB). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** CPU time (user + system) a process has used so far, in ms. */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks at USER_HZ=100
}

/** The service's event-loop delay p99 since the previous scrape (prom-client resets it on each). */
async function loopP99Ms(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1]) * 1000;
}

/**
 * One full task before measuring: the first run of a process loads and compiles modules lazily
 * (tens of ms with the event loop blocked), which is start-up cost, not steady state.
 */
async function warmUp(url: string) {
  const res = await fetch(`${url}/tasks?wait=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body('WARMUP', 0)),
  });
  if (res.status !== 200) throw new Error(`warm-up answered ${res.status}`);
}

const body = (prompt: string, i: number) => ({
  subagent_type: 'general',
  description: 'bench',
  prompt,
  context: { parentTaskId: `P-${i % 50}`, userId: `u-${i % 20}` },
});

async function submit(url: string, prompt: string, i: number): Promise<{ id: string; streamUrl: string }> {
  const res = await fetch(`${url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(prompt, i)) });
  if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: string; streamUrl: string };
}

/** Model chunk emitted → text.delta received on a WebSocket, with N tasks streaming at once. */
async function benchStream(tasks: number) {
  const chunks = 20;
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(tasks), MAX_QUEUED_TASKS: String(tasks), HEARTBEAT_MS: '60000' });
  svc.model.script('LATENCY', (ctx) =>
    ctx.turn === 0
      ? // A random phase: independent tasks do not emit in lock-step.
        { delayMs: 1500 + Math.random() * 50, chunkDelayMs: 50, liveChunks: { count: chunks, make: () => `|t=${now()}|` }, toolCalls: [{ name: 'list_files', args: {} }] }
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
          const e = JSON.parse(raw.toString());
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

/** 1,000 tasks at once, 2 s per model step, MAX_CONCURRENT_TASKS=1000. */
async function benchLoad(tasks = 1000) {
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(tasks), MAX_QUEUED_TASKS: String(tasks), HEARTBEAT_MS: '15000' });
  svc.model.script('LOAD', (ctx) =>
    ctx.turn === 0
      ? { delayMs: 2000, text: 'Listing the workspace.', toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 300, output: 20 } }
      : { delayMs: 2000, toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 400, output: 30 } },
  );
  await warmUp(svc.url);
  const before = memoryOf(svc.pid);
  await loopP99Ms(svc.url);
  let peakRss = 0;
  const loopSamples: number[] = [];
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memoryOf(svc.pid).rss)), 100);
  const scraper = setInterval(() => void loopP99Ms(svc.url).then((v) => loopSamples.push(v)), 1000);
  const started = now();
  const accepted = await Promise.all(Array.from({ length: tasks }, (_, i) => submit(svc.url, `LOAD ${i}`, i)));
  const submitMs = now() - started;
  const ids = new Set(accepted.map((a) => a.id));
  // Completed tasks, from the service's own counter (the warm-up task included).
  const completedCount = async () =>
    Number(/^subagentd_tasks_total\{status="completed",subagent_type="general"\} (\S+)$/m.exec(await (await fetch(`${svc.url}/metrics`)).text())?.[1] ?? 0) - 1;
  while ((await completedCount()) < tasks && now() - started < 120_000) await sleep(100);
  const wall = now() - started;
  clearInterval(sampler);
  clearInterval(scraper);
  loopSamples.push(await loopP99Ms(svc.url));
  const finished = await Promise.all(
    [...ids].map(async (id) => ((await (await fetch(`${svc.url}/tasks/${id}`)).json()) as { status: string }).status),
  );
  const usage = (await (await fetch(`${svc.url}/usage`)).json()) as { totals: { tasks: number; inputTokens: number } };
  const after = memoryOf(svc.pid);
  // The bare loop running the same 1,000 tasks at once on the same model server.
  const bare = await bareLoop(svc.model.url, tasks, tasks, ['--marker', 'LOAD', '--sample']);
  await svc.close();
  return {
    tasks,
    bare: { wallMs: bare.wallMs, peakRssMiB: bare.peakRssMiB!, loopP99Ms: bare.loopP99Ms! },
    completed: finished.filter((st) => st === 'completed').length,
    submitMs,
    wallMs: wall,
    rssBeforeMiB: before.rss,
    peakRssMiB: Math.max(peakRss, after.peak),
    loopP99Ms: Math.max(...loopSamples),
    billedTasks: usage.totals.tasks - 1,
    billedInput: usage.totals.inputTokens - 200,
  };
}

/** Tasks each side of the compare benchmark runs before measuring (the WARMUP task included). */
const WARMUP_TASKS = 20;
/** The compare benchmark's tasks come in this many alternating rounds per side and measure. */
const ROUNDS = 3;

/** The same 4-call task for the service and the bare loop: write, read, list, complete. */
function scriptCompare(model: Awaited<ReturnType<typeof startScriptedModel>>) {
  const usage = { input: 500, output: 50 };
  model.script('COMPARE', (ctx) => {
    switch (ctx.turn) {
      case 0:
        return { text: 'Writing the notes.', toolCalls: [{ name: 'write_file', args: { path: 'notes/a.md', content: 'x'.repeat(2000) } }], usage };
      case 1:
        return { toolCalls: [{ name: 'read_file', args: { path: 'notes/a.md' } }], usage };
      case 2:
        return { toolCalls: [{ name: 'list_files', args: { path: 'notes' } }], usage };
      default:
        return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: ['notes/a.md'] } }], usage };
    }
  });
}

interface BareRun {
  wallMs: number;
  latencies: number[];
  chunkLatencies?: number[];
  peakRssMiB?: number;
  loopP99Ms?: number;
}

/** The bare loop (bench/bare-loop.mjs) as its own process against `modelUrl` (the model server runs here). */
async function bareLoop(modelUrl: string, tasks: number, concurrency: number, extra: string[] = []): Promise<BareRun> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['bench/bare-loop.mjs', '--tasks', String(tasks), '--concurrency', String(concurrency), ...extra],
    { env: { ...process.env, OPENAI_BASE_URL: modelUrl }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

/**
 * The bare loop as a warm process that runs tasks one at a time on demand (`--serve`), so that the
 * compare benchmark can alternate it with the service.
 */
async function startBareServer(modelUrl: string, warmup: number) {
  const child = spawn(process.execPath, ['bench/bare-loop.mjs', '--serve', '--warmup', String(warmup)], {
    env: { ...process.env, OPENAI_BASE_URL: modelUrl },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const answer = async () => JSON.parse((await lines.next()).value as string);
  await answer(); // { ready: true } once warm
  return {
    /** Runs `n` tasks `concurrency` at a time. */
    async run(n: number, concurrency = 1): Promise<{ wallMs: number; latencies: number[] }> {
      child.stdin!.write(`run ${n} ${concurrency}\n`);
      return answer();
    },
    async close() {
      child.stdin!.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/**
 * The service against a bare ai-SDK loop doing the same work on the same scripted model, in the
 * same run: one task at a time (latency), then `total` tasks `concurrency` at a time (wall time).
 */
async function benchCompare(total = 300, concurrency = 32, sequential = 60) {
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(concurrency), MAX_QUEUED_TASKS: String(total) });
  scriptCompare(svc.model);
  await warmUp(svc.url);
  const once = async (i: number) => {
    const t = now();
    const res = await fetch(`${svc.url}/tasks?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(`COMPARE ${i}`, i)) });
    const out = JSON.parse(await res.text()) as { status: string };
    if (out.status !== 'completed') throw new Error(`task ended ${out.status}`);
    return now() - t;
  };
  // Steady state, not start-up: both warm up with the same number of tasks before measuring (the
  // JIT compiles hot code after some runs; the service has more of it than the bare loop).
  for (let i = 1; i < WARMUP_TASKS; i++) await once(-i);
  const bareFrom = svc.model.requests.length;
  const bare = await startBareServer(svc.model.url, WARMUP_TASKS);
  // Both measures in rounds that alternate the two sides, so that a slow spell of this shared
  // machine weighs on both alike: one task at a time, then `concurrency` at a time.
  const serviceSeq: number[] = [];
  const bareSeq: number[] = [];
  let serviceWall = 0;
  let bareWall = 0;
  let index = 0;
  const concurrently = async (n: number) => {
    let left = n;
    const started = now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await once(index++);
      }),
    );
    return now() - started;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < sequential / ROUNDS; i++) serviceSeq.push(await once(index++));
    bareSeq.push(...(await bare.run(sequential / ROUNDS)).latencies);
  }
  for (let round = 0; round < ROUNDS; round++) {
    serviceWall += await concurrently(total / ROUNDS);
    bareWall += (await bare.run(total / ROUNDS, concurrency)).wallMs;
  }
  await bare.close();
  // The size of each side's first model request (system prompt, tools, kickoff) as sent on the wire.
  const firstRequest = (from: number, to: number, prompt: string) =>
    JSON.stringify(svc.model.requests.slice(from, to).find((r) => JSON.stringify(r.body.messages).includes(prompt))?.body ?? {}).length;
  const requestBytes = { service: firstRequest(0, bareFrom, 'COMPARE -1'), bare: firstRequest(bareFrom, Infinity, 'COMPARE -1') };
  await svc.close();
  return {
    total,
    concurrency,
    sequential,
    service: { p50: pct(serviceSeq, 50), p99: pct(serviceSeq, 99), wallMs: serviceWall },
    bare: { p50: pct(bareSeq, 50), p99: pct(bareSeq, 99), wallMs: bareWall },
    requestBytes,
  };
}

/** Busy and total CPU time of the whole machine so far (/proc/stat, clock ticks). */
function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = ticks[3] + ticks[4];
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/**
 * Throughput with 1, 2 and 3 instances on one PostgreSQL database (a local cluster, fsync off):
 * `total` 4-call tasks (the compare script) submitted round-robin, `concurrency` at a time, each
 * waited for (?wait=true) on the instance it was sent to, whichever instance runs it.
 */
async function benchInstances(total = 300, concurrency = 48) {
  const postgres = await startTestPostgres();
  const model = await startScriptedModel();
  scriptCompare(model);
  model.script('WARMUP', [{ toolCalls: [{ name: 'complete', args: { summary: 'warm', paths: [] } }] }]);
  const rows: Array<{
    instances: number;
    wallMs: number;
    perSecond: number;
    p50: number;
    p99: number;
    serviceCpuPct: number;
    machineCpuPct: number;
    completed: number;
    commitsPerTask: number;
  }> = [];
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  const commits = async (db: string) =>
    Number((await admin.query('SELECT pg_stat_clear_snapshot(), xact_commit FROM pg_stat_database WHERE datname = $1', [db])).rows[0].xact_commit);
  try {
    for (const n of [1, 2, 3]) {
      const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-instances-'));
      await ensureDatabase(postgres.url, `instances_${n}`);
      const { DATABASE_PATH: _file, ...env } = benchEnv(dir, model.url);
      const services: ChildService[] = [];
      for (let i = 0; i < n; i++) {
        services.push(
          await startChildService(
            {
              ...env,
              DATABASE_URL: postgres.urlOf(`instances_${n}`),
              INSTANCE_ID: `bench-${i}`,
              MAX_CONCURRENT_TASKS: String(concurrency),
              MAX_CONCURRENT_PER_TENANT: String(concurrency * 3),
              MAX_QUEUED_TASKS: String(total),
            },
            [],
            { built: true },
          ),
        );
      }
      try {
        for (const svc of services) for (let w = 0; w < WARMUP_TASKS; w++) await warmUp(svc.url);
        const latencies: number[] = [];
        let next = 0;
        let completed = 0;
        const cpuBefore = services.map((s) => cpuMsOf(s.child.pid!));
        const machineBefore = machineCpu();
        const commitsBefore = await commits(`instances_${n}`);
        const started = now();
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            for (let i = next++; i < total; i = next++) {
              const t = now();
              const res = await fetch(`${services[i % n].url}/tasks?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(`COMPARE ${i}`, i)) });
              const out = (await res.json()) as { status: string };
              if (out.status === 'completed') completed++;
              latencies.push(now() - t);
            }
          }),
        );
        const wallMs = now() - started;
        const machineAfter = machineCpu();
        // The statistics collector reports with a delay of up to half a second.
        await sleep(1000);
        const commitsPerTask = ((await commits(`instances_${n}`)) - commitsBefore) / total;
        const serviceCpuMs = services.reduce((sum, s, i) => sum + cpuMsOf(s.child.pid!) - cpuBefore[i], 0);
        rows.push({
          instances: n,
          wallMs,
          perSecond: (total / wallMs) * 1000,
          p50: pct(latencies, 50),
          p99: pct(latencies, 99),
          serviceCpuPct: (serviceCpuMs / wallMs) * 100,
          machineCpuPct: ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100,
          completed,
          commitsPerTask,
        });
      } finally {
        for (const svc of services) {
          svc.child.kill('SIGTERM');
          await svc.exited;
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await admin.end();
    await model.close();
    await postgres.stop();
  }
  return { total, concurrency, rows };
}

/** GET /usage over 1,000,000 seeded records, per groupBy, over HTTP to the service process. */
async function benchUsage(records = 1_000_000, runs = 30) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-'));
  const seedStart = now();
  const db = openSqlite(path.join(dir, 'db.sqlite'));
  const insert = db.sqlite!.prepare(
    `INSERT INTO subagent_records (id, task_id, tenant, subagent_type, parent_task_id, user_id, tool_call_id, description, model, steps,
       input_tokens, output_tokens, total_tokens, cached_input_tokens, reasoning_tokens, status, started_at, completed_at, duration_ms)
     VALUES (?, ?, 'default', ?, ?, ?, NULL, 'bench', ?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?, ?)`,
  );
  const types = ['general', 'explore', 'shell', 'reviewer', 'writer'];
  const models = ['gpt-4.1-mini', 'gpt-4.1', 'qwen2.5', 'llama3'];
  const t0 = Date.parse('2026-09-01T00:00:00Z');
  db.sqlite!.transaction(() => {
    for (let i = 0; i < records; i++) {
      const input = 100 + (i % 5000);
      const output = 10 + (i % 700);
      const started = t0 + Math.floor((i / records) * 90 * 86_400_000);
      const key = `${String(started).padStart(14, '0')}${String(i).padStart(8, '0')}`;
      insert.run(`rec_${key}`, `tsk_${key}`, types[i % 5], `P-${i % 10_000}`, `u-${i % 1000}`, models[i % 4], 1 + (i % 9), input, output, input + output, i % 3 ? 0 : 50, i % 11 ? 0 : 7, started, started + 5000, 5000);
    }
  })();
  // The records were written by hand, not through the store: build their roll-ups as the migration does.
  const rollupStart = now();
  await rebuildRollups(db.sql);
  const rollupMs = now() - rollupStart;
  db.sqlite!.exec('ANALYZE');
  await closeDatabase(db);
  const seedMs = now() - seedStart;
  const svc = await startBenchService({}, { dir });
  const queries: Array<[string, string]> = [
    ['totals', '/usage'],
    ['by user', '/usage?groupBy=user'],
    ['by parent task (a page: 1,000 groups)', '/usage?groupBy=parentTask'],
    ['by parent task, a later page', '/usage?groupBy=parentTask&cursor=P-5000'],
    ['by parent task, all 10,000 in one answer', '/usage?groupBy=parentTask&limit=10000'],
    ['by subagent type', '/usage?groupBy=subagentType'],
    ['by model', '/usage?groupBy=model'],
    ['by day', '/usage?groupBy=day'],
    ['one user', '/usage?userId=u-7'],
    ['one user by day', '/usage?userId=u-7&groupBy=day'],
    ['one parent task', '/usage?parentTaskId=P-42'],
    ['one month by type', '/usage?from=2026-10-01&to=2026-11-01&groupBy=subagentType'],
    ['raw records, first page', '/usage/records?limit=100'],
    ['by user, from the raw records', '/usage?groupBy=user&source=records'],
  ];
  const rows = [];
  for (const [name, url] of queries) {
    const times: number[] = [];
    let groups = 0;
    for (let r = 0; r < runs; r++) {
      const t = now();
      const res = await fetch(`${svc.url}${url}`);
      const json = (await res.json()) as { groups?: unknown[]; records?: unknown[] };
      times.push(now() - t);
      if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
      groups = (json.groups ?? json.records ?? []).length;
    }
    rows.push({ name, url, groups, p50: pct(times, 50), p99: pct(times, 99) });
  }
  // The aggregates run on a reader thread: the service keeps answering meanwhile.
  const health: number[] = [];
  let busy = true;
  const heavy = Promise.all(Array.from({ length: 5 }, () => fetch(`${svc.url}/usage?groupBy=user`).then((r) => r.json()))).then(() => (busy = false));
  while (busy) {
    const t = now();
    await fetch(`${svc.url}/healthz`);
    health.push(now() - t);
    await sleep(5);
  }
  await heavy;
  await svc.close();
  return { records, seedMs, rollupMs, rows, healthDuring: { n: health.length, p50: pct(health, 50), p99: pct(health, 99) } };
}

/**
 * Kill -9 at random moments under load, `rounds` times, then compare what the model server served
 * (answers whose usage chunk and [DONE] left it in full) with what the records bill. An answer the
 * dead process may never have read (still in its socket buffer at the kill) cannot be billed by
 * anyone; to tell those apart, the bench probes `/healthz` every 20 ms: an answer served more than
 * `marginMs` before the last probe the service answered had been read by its event loop. Answers
 * after that point are counted as in flight, billed or not.
 */
async function benchCrash(rounds = 20, tasksPerRound = 24, marginMs = 100) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-crash-bench-'));
  const model = await startScriptedModel();
  const env = { ...benchEnv(dir, model.url), MAX_CONCURRENT_TASKS: '16', BASH_SANDBOX: 'none' };
  // Four steps: two with a short command (a kill can land while it runs), one listing, then complete.
  const script = [
    { text: 'looking around', chunkSize: 4, chunkDelayMs: 10, toolCalls: [{ name: 'bash', args: { command: 'sleep 0.2' } }], usage: { input: 1000, output: 10 } },
    { toolCalls: [{ name: 'list_files', args: {} }], chunkDelayMs: 20, usage: { input: 1000, output: 10 } },
    { text: 'one more', chunkSize: 2, chunkDelayMs: 15, toolCalls: [{ name: 'bash', args: { command: 'sleep 0.1' } }], usage: { input: 1000, output: 10 } },
    { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 1000, output: 10 } },
  ];
  const taskOf = new Map<string, string>(); // prompt marker → task id
  const kills: number[] = [];
  /** Per kill: the send time of the last /healthz probe answered before it. */
  const lastAlive: number[] = [];
  /** Per round: when its process was started (an answer served before it went to a dead one). */
  const starts: number[] = [];
  let n = 0;
  const submit = async (url: string) => {
    const marker = `CRASH-BENCH-${++n}`;
    model.script(marker, script);
    const res = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subagent_type: 'general', description: 'crash bench', prompt: marker, context: { parentTaskId: 'P-crash', userId: `u-${n % 5}` } }),
    });
    if (res.status !== 202) throw new Error(`submit answered ${res.status}`);
    taskOf.set(marker, ((await res.json()) as { id: string }).id);
  };
  for (let round = 0; round < rounds; round++) {
    starts.push(Date.now());
    const svc = await startChildService(env, [], { built: true });
    await Promise.all(Array.from({ length: tasksPerRound }, () => submit(svc.url)));
    let alive = Date.now();
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const sent = Date.now();
        const ok = await fetch(`${svc.url}/healthz`).then((r) => r.ok, () => false);
        if (ok && probing) alive = sent;
        await sleep(20);
      }
    })();
    await sleep(300 + Math.random() * 2200);
    probing = false;
    lastAlive.push(alive);
    kills.push(Date.now());
    svc.child.kill('SIGKILL');
    await svc.exited;
    await probe;
  }
  // A last start: recovery ends what was running, the queued tasks run to their end.
  const last = await startChildService(env, [], { built: true });
  const end = Date.now() + 120_000;
  for (;;) {
    const open = await fetch(`${last.url}/tasks?status=queued&limit=1`).then((r) => r.json() as Promise<{ tasks: unknown[] }>);
    const running = await fetch(`${last.url}/tasks?status=running&limit=1`).then((r) => r.json() as Promise<{ tasks: unknown[] }>);
    if (open.tasks.length + running.tasks.length === 0 || Date.now() > end) break;
    await sleep(200);
  }
  last.child.kill('SIGTERM');
  await last.exited;
  spawnSync('pkill', ['-f', 'sleep 0\\.[12]']);

  const db = openSqlite(path.join(dir, 'db.sqlite'));
  const billedRows = db.sqlite!.prepare('SELECT task_id AS taskId, count(*) AS n, sum(input_tokens) AS input FROM usage_reports GROUP BY task_id').all() as Array<{ taskId: string; n: number; input: number }>;
  const records = db.sqlite!.prepare('SELECT task_id AS taskId, input_tokens AS input, status FROM subagent_records').all() as Array<{ taskId: string; input: number; status: string }>;
  const unfinished = (db.sqlite!.prepare("SELECT count(*) FROM tasks WHERE status IN ('queued', 'running')").pluck().get() as number);
  await closeDatabase(db);
  const billedOf = new Map(billedRows.map((r) => [r.taskId, r]));
  const recordOf = new Map(records.map((r) => [r.taskId, r]));
  let served = 0;
  let inFlight = 0;
  let billed = 0;
  let lost = 0;
  let duplicated = 0;
  let inFlightBilled = 0;
  let recordMismatch = 0;
  const settled = (at: number) => {
    const i = kills.findIndex((k) => k >= at);
    if (i === -1) return true; // the last, clean run
    // Served to the process of round i, long enough before it stopped answering.
    return at > starts[i] && at < lastAlive[i] - marginMs;
  };
  for (const [marker, taskId] of taskOf) {
    const answers = model.served.filter((s) => s.prompt === marker);
    const sure = answers.filter((a) => settled(a.at)).length;
    const maybe = answers.length - sure;
    const b = billedOf.get(taskId)?.n ?? 0;
    served += sure;
    inFlight += maybe;
    billed += b;
    if (b < sure) {
      lost += sure - b;
      if (process.env.BENCH_DEBUG) {
        const gaps = answers.map((a) => {
          const i = kills.findIndex((x) => x >= a.at);
          return `turn ${a.turn}: round ${i}, ${i === -1 ? 'after the last kill' : `${kills[i] - a.at} ms before its kill, ${lastAlive[i] - a.at} ms before its last probe`}`;
        });
        console.error('lost', marker, taskId, 'billed', b, recordOf.get(taskId)?.status, '|', gaps.join(' | '));
      }
    }
    if (b > sure + maybe) duplicated += b - sure - maybe;
    inFlightBilled += Math.min(Math.max(b - sure, 0), maybe);
    if ((recordOf.get(taskId)?.input ?? 0) !== (billedOf.get(taskId)?.input ?? 0)) recordMismatch++;
  }
  await model.close();
  rmSync(dir, { recursive: true, force: true });
  return { rounds, tasks: taskOf.size, served, inFlight, inFlightBilled, billed, lost, duplicated, recordMismatch, unfinished, records: records.length };
}

/**
 * The cost of tracing: sequential 3-step tasks (?wait=true, one at a time) with OpenTelemetry off,
 * then on (exporting to an OTLP/HTTP receiver on loopback that counts the spans it gets).
 */
async function benchTracing(tasks = 200) {
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

/** The `general` agent's first model request when issue 16 was filed ("5.8 KB"): no regression past it. */
const REQUEST_BYTES_BEFORE = 5843;

/** Issue 16's goals, each next to the bare loop's figure from the same run. */
interface GoalRow {
  goal: string;
  service: string;
  bare: string;
  ratio?: number;
  target: string;
  met: boolean;
}

async function main() {
  const which = process.argv[2] ?? 'all';
  // BENCH_DATABASE=postgres: the service on PostgreSQL (a throwaway local cluster, fsync off, as
  // the tests use: the figures leave out a production server's commit flushes).
  const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startTestPostgres() : null;
  if (postgres) process.env.TEST_POSTGRES_URL = postgres.url;
  try {
    await benchmarks(which);
  } finally {
    await postgres?.stop();
  }
}

async function benchmarks(which: string) {
  const sqliteOnly = process.env.BENCH_DATABASE === 'postgres';
  const goals: GoalRow[] = [];
  const wants = (name: string) => which === 'all' || which === 'goals' || which === name;
  console.log(`subagentd benchmarks — node ${process.version}, ${new Date().toISOString()}, ${sqliteOnly ? 'PostgreSQL' : 'SQLite'}\n`);
  // The service runs as built (`node dist/server.js`, as `npm start` does), not under tsx.
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
  if (wants('compare')) {
    const r = await benchCompare();
    console.log(`The service against a bare ai-SDK streamText loop in one process (bench/bare-loop.mjs), same scripted model, same 4-call task (write, read, list, complete), measured in this run`);
    console.log('| measure | service | bare loop | ratio | goal |');
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| one task at a time, p50 (${r.sequential} tasks, ${ROUNDS} alternating rounds) | ${f(r.service.p50)} ms | ${f(r.bare.p50)} ms | ${f(r.service.p50 / r.bare.p50, 2)}× | ≤ 1.2× |`);
    console.log(`| one task at a time, p99 | ${f(r.service.p99)} ms | ${f(r.bare.p99)} ms | ${f(r.service.p99 / r.bare.p99, 2)}× | |`);
    console.log(`| ${r.total} tasks, ${r.concurrency} at a time (${ROUNDS} alternating rounds), wall | ${f(r.service.wallMs, 0)} ms | ${f(r.bare.wallMs, 0)} ms | ${f(r.service.wallMs / r.bare.wallMs, 2)}× | ≤ 1.15× |`);
    console.log(`| first model request (general: 10 tools; bare loop: 4) | ${r.requestBytes.service} B | ${r.requestBytes.bare} B | | ≤ ${REQUEST_BYTES_BEFORE} B |`);
    console.log();
    const seq = r.service.p50 / r.bare.p50;
    const conc = r.service.wallMs / r.bare.wallMs;
    goals.push(
      { goal: `${r.total} tasks, ${r.concurrency} at a time: wall time`, service: `${f(r.service.wallMs, 0)} ms`, bare: `${f(r.bare.wallMs, 0)} ms`, ratio: conc, target: '≤ 1.15×', met: conc <= 1.15 },
      { goal: 'one 4-call task at a time: p50 latency', service: `${f(r.service.p50)} ms`, bare: `${f(r.bare.p50)} ms`, ratio: seq, target: '≤ 1.2×', met: seq <= 1.2 },
      { goal: 'first model request size (no regression)', service: `${r.requestBytes.service} B`, bare: `${r.requestBytes.bare} B`, target: `≤ ${REQUEST_BYTES_BEFORE} B`, met: r.requestBytes.service <= REQUEST_BYTES_BEFORE },
    );
  }
  if (wants('stream')) {
    console.log('Stream latency: model server emits a text chunk → WebSocket client receives the text.delta (bare loop: → its stream reader)');
    console.log('| subscribed tasks | chunks measured | text.delta events | p50 ms | p99 ms | max ms | bare loop p50 / p99 ms | service CPU | bench process CPU |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const counts = which === 'goals' ? '100,1000' : (process.env.BENCH_STREAM_TASKS ?? '1,100,1000');
    for (const n of counts.split(',').map(Number)) {
      const r = await benchStream(n);
      console.log(
        `| ${r.tasks} | ${r.chunks} | ${r.deltas} | ${f(r.p50, 2)} | ${f(r.p99, 2)} | ${f(r.max, 2)} | ${f(r.bareP50, 2)} / ${f(r.bareP99, 2)} | ${f(r.serviceCpuPct, 0)}% | ${f(r.benchCpuPct, 0)}% |`,
      );
      const target = n >= 1000 ? 20 : 5;
      if (n === 100 || n === 1000) {
        goals.push({ goal: `chunk → client p99, ${n} tasks streaming`, service: `${f(r.p99, 1)} ms`, bare: `${f(r.bareP99, 1)} ms`, ratio: r.p99 / r.bareP99, target: `< ${target} ms`, met: r.p99 < target });
      }
    }
    console.log();
  }
  if (wants('load')) {
    const r = await benchLoad();
    console.log('1,000 tasks submitted at once, MAX_CONCURRENT_TASKS=1000, scripted model 2 s per step (2 steps); the bare loop runs the same 1,000 at once');
    console.log('| tasks | completed | all accepted in | all finished in | service RSS before | peak RSS | event-loop delay p99 (worst 1 s window) | billed tasks | billed input tokens | bare loop: finished in / peak RSS / loop p99 |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    console.log(
      `| ${r.tasks} | ${r.completed} | ${f(r.submitMs, 0)} ms | ${f(r.wallMs, 0)} ms | ${f(r.rssBeforeMiB, 0)} MiB | ${f(r.peakRssMiB, 0)} MiB | ${f(r.loopP99Ms)} ms | ${r.billedTasks} | ${r.billedInput} | ${f(r.bare.wallMs, 0)} ms / ${f(r.bare.peakRssMiB, 0)} MiB / ${f(r.bare.loopP99Ms)} ms |`,
    );
    console.log();
    goals.push(
      { goal: '1,000 running tasks: peak RSS', service: `${f(r.peakRssMiB, 0)} MiB`, bare: `${f(r.bare.peakRssMiB, 0)} MiB`, ratio: r.peakRssMiB / r.bare.peakRssMiB, target: '< 300 MiB', met: r.peakRssMiB < 300 },
      { goal: '1,000 running tasks: event-loop delay p99', service: `${f(r.loopP99Ms)} ms`, bare: `${f(r.bare.loopP99Ms)} ms`, ratio: r.loopP99Ms / r.bare.loopP99Ms, target: '< 50 ms', met: r.loopP99Ms < 50 },
    );
  }
  // These two read and seed the SQLite file directly.
  if (sqliteOnly && ['all', 'crash', 'usage'].includes(which)) console.log('(crash and usage benches: SQLite only)\n');
  if (!sqliteOnly && (which === 'all' || which === 'crash')) {
    const r = await benchCrash();
    console.log(`kill -9 at a random moment under load, ${r.rounds} rounds, then one clean start (4-step tasks, 2 with a command)`);
    console.log('| tasks | answers served (settled) | billed of them | lost | duplicated | in flight at a kill | billed of them | records ≠ their reports | tasks left unfinished |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    console.log(
      `| ${r.tasks} | ${r.served} | ${r.served - r.lost} | ${r.lost} | ${r.duplicated} | ${r.inFlight} | ${r.inFlightBilled} | ${r.recordMismatch} | ${r.unfinished} |`,
    );
    console.log();
  }
  if (which === 'all' || which === 'tracing') {
    const rows = await benchTracing();
    console.log('Sequential 3-step tasks (?wait=true), OpenTelemetry off and on (OTLP/HTTP to a receiver on loopback)');
    console.log('| tracing | tasks | mean ms | p50 ms | p99 ms | spans exported |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.mode} | ${r.tasks} | ${f(r.mean)} | ${f(r.p50)} | ${f(r.p99)} | ${r.spans} |`);
    console.log('');
  }
  if (!sqliteOnly && (which === 'all' || which === 'usage')) {
    const r = await benchUsage();
    console.log(`GET /usage over ${r.records.toLocaleString("en")} records (seeded in ${f(r.seedMs / 1000)} s, roll-ups built in ${f(r.rollupMs / 1000)} s), 30 requests each`);
    console.log('| query | groups/rows | p50 ms | p99 ms |');
    console.log('|---|---:|---:|---:|');
    for (const row of r.rows) console.log(`| ${row.name} (\`${row.url}\`) | ${row.groups} | ${f(row.p50)} | ${f(row.p99)} |`);
    console.log(`\nGET /healthz while 5 \`groupBy=user\` aggregates run: ${r.healthDuring.n} requests, p50 ${f(r.healthDuring.p50)} ms, p99 ${f(r.healthDuring.p99)} ms`);
    console.log();
  }
  if (which === 'instances') {
    const r = await benchInstances();
    console.log(`Instances on one PostgreSQL database (local cluster, fsync off): ${r.total} 4-call tasks, ${r.concurrency} at a time, sent round-robin, each waited for where it was sent`);
    console.log('| instances | completed | wall | tasks/s | task p50 | task p99 | commits per task | CPU of the instances (100% = one core) | machine CPU busy (2 cores) |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of r.rows) {
      console.log(
        `| ${row.instances} | ${row.completed} | ${f(row.wallMs, 0)} ms | ${f(row.perSecond)} | ${f(row.p50)} ms | ${f(row.p99)} ms | ${f(row.commitsPerTask)} | ${f(row.serviceCpuPct, 0)}% | ${f(row.machineCpuPct, 0)}% |`,
      );
    }
    console.log();
  }
  if (goals.length > 0) {
    console.log('Goals (issue 16), each against the bare loop measured in this run');
    console.log('| goal | service | bare loop | service ÷ bare | target | met |');
    console.log('|---|---:|---:|---:|---:|:---:|');
    for (const g of goals) console.log(`| ${g.goal} | ${g.service} | ${g.bare} | ${g.ratio === undefined ? '' : `${f(g.ratio, 2)}×`} | ${g.target} | ${g.met ? 'yes' : 'no'} |`);
    console.log();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
