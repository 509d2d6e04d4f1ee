/** What every benchmark uses: the service as its own process, the scripted model, /proc readings, percentiles. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startChildService } from '../test/support/child-service.ts';
import { startScriptedModel } from '../scripted-model/server.ts';

export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function pct(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
export const f = (n: number, d = 1) => n.toFixed(d);

/** The service's environment for a benchmark: its files in `dir`, the scripted model, no limits in the way. */
export function benchEnv(dir: string, modelUrl: string): Record<string, string> {
  return {
    DATABASE_PATH: path.join(dir, 'db.sqlite'),
    WORKSPACES_DIR: path.join(dir, 'workspaces'),
    AGENTS_DIR: path.join(dir, 'agents'),
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'bench',
    // The scripted model server speaks Anthropic's and Gemini's protocols too.
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'bench',
    GOOGLE_BASE_URL: modelUrl,
    GOOGLE_GENERATIVE_AI_API_KEY: 'bench',
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
export async function startBenchService(env: Record<string, string>, opts: { dir?: string } = {}) {
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
    // What production runs: the build main() made, on bare Node (BENCH_SERVICE_ENTRY: another
    // build's dist/server.js, to compare two builds).
    { built: process.env.BENCH_SERVICE_ENTRY || true },
  );
  return {
    model,
    url: svc.url,
    pid: svc.child.pid!,
    /** Where its files are (its workspaces under `workspaces/`). */
    dir,
    async close() {
      svc.child.kill('SIGTERM');
      await svc.exited;
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Current and peak resident memory of a process, from /proc (MiB). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** CPU time (user + system) in a `/proc` stat file (a process's, or one thread's), in ms. */
function statCpuMs(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // The fields after the command's name, which may itself hold ") ".
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks at USER_HZ=100
}

/** CPU time (user + system) a process has used so far, in ms. */
export function cpuMsOf(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time of a process's main thread, and of all its other threads together (V8's collector
 * helpers, libuv's pool, workers; the process's total less the main thread's), so far, in ms.
 */
export function threadCpuMsOf(pid: number): { main: number; others: number } {
  const main = statCpuMs(`/proc/${pid}/task/${pid}/stat`);
  return { main, others: cpuMsOf(pid) - main };
}

/** The service's event-loop delay p99 since the previous scrape (prom-client resets it on each). */
export async function loopP99Ms(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1]) * 1000;
}

/** Statements and transactions the service has sent to its database so far (its /metrics). */
export async function dbCountsOf(url: string): Promise<{ statements: number; transactions: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return { statements: read('subagentd_db_statements_total'), transactions: read('subagentd_db_transactions_total') };
}

/**
 * One full task before measuring: the first run of a process loads and compiles modules lazily
 * (tens of ms with the event loop blocked), which is start-up cost, not steady state.
 */
export async function warmUp(url: string) {
  const res = await fetch(`${url}/tasks?wait=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body('WARMUP', 0)),
  });
  if (res.status !== 200) throw new Error(`warm-up answered ${res.status}`);
}

export const body = (prompt: string, i: number) => ({
  subagent_type: 'general',
  description: 'bench',
  prompt,
  context: { parentTaskId: `P-${i % 50}`, userId: `u-${i % 20}` },
});

export async function submit(url: string, prompt: string, i: number): Promise<{ id: string; streamUrl: string }> {
  const res = await fetch(`${url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(prompt, i)) });
  if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: string; streamUrl: string };
}

/** Busy and total CPU time of the whole machine so far (/proc/stat, clock ticks). */
export function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = ticks[3] + ticks[4];
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}
