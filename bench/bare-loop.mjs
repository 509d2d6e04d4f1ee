/**
 * The bare loop `npm run bench` measures the service against: an ai SDK `streamText` loop in one
 * process, on the same scripted model, doing the same file work with tools written the plain way
 * (fs calls, no confinement, no events, no store). Run as its own process so that it shares its
 * event loop with nothing, like the service, and in plain JavaScript, so that it runs on bare Node as
 * the built service does (`node dist/server.js`). Prints one JSON line:
 * - `--tasks N --concurrency C [--marker M] [--warmup W]`: `{ wallMs, latencies }` (per-task wall
 *   times), after W warm-up tasks (1 by default);
 * - `--stream`: also `chunkLatencies`, model chunk (`|t=<ms since epoch>|` in its text) → the loop's
 *   reader, per chunk;
 * - `--sample`: also `peakRssMiB` and `loopP99Ms` (worst one-second window of event-loop delay);
 * - `--provider anthropic|google`: the same loop on that provider (OpenAI by default);
 * - `--serve`: after the warm-up, runs `run N [C]` lines from stdin (N tasks, C at a time, 1 by
 *   default), answering `{ wallMs, latencies }` per line, so that the benchmark can alternate it
 *   with the service.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { hasToolCall, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const tasks = Number(arg('tasks', '30'));
const concurrency = Number(arg('concurrency', '1'));
const marker = arg('marker', 'COMPARE');
const streaming = process.argv.includes('--stream');
const sampling = process.argv.includes('--sample');
// `--provider anthropic|google`: the same loop over that provider's own package and protocol.
const provider = arg('provider', 'openai');
const baseURL = process.env.OPENAI_BASE_URL;
const languageModel =
  provider === 'anthropic'
    ? createAnthropic({ baseURL, apiKey: 'bench' })('claude-sonnet-4-5')
    : provider === 'google'
      ? createGoogleGenerativeAI({ baseURL, apiKey: 'bench' })('gemini-2.5-flash')
      : createOpenAI({ baseURL, apiKey: 'bench' }).chat('gpt-4.1-mini');
const root = mkdtempSync(path.join(tmpdir(), 'bare-loop-'));
// Its workspaces go with it (every exit of this script is process.exit or the end of its input).
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
const chunkLatencies = [];

async function runTask(i, m = marker) {
  const dir = path.join(root, `P-${i % 50}`);
  await mkdir(dir, { recursive: true });
  const started = performance.now();
  const result = streamText({
    model: languageModel,
    system: 'You are a subagent working in a workspace folder.',
    messages: [{ role: 'user', content: `${m} ${i}` }],
    tools: {
      write_file: tool({
        inputSchema: z.object({ path: z.string(), content: z.string() }),
        execute: async ({ path: p, content }) => {
          await mkdir(path.dirname(path.join(dir, p)), { recursive: true });
          await writeFile(path.join(dir, p), content);
          return `wrote ${content.length} bytes`;
        },
      }),
      read_file: tool({ inputSchema: z.object({ path: z.string() }), execute: async ({ path: p }) => readFile(path.join(dir, p), 'utf8') }),
      list_files: tool({ inputSchema: z.object({ path: z.string().optional() }), execute: async () => (await readdir(dir)).join('\n') }),
      complete: tool({
        inputSchema: z.object({ summary: z.string(), paths: z.array(z.string()) }),
        execute: async ({ summary, paths }) => ({
          summary,
          artifacts: await Promise.all(paths.map(async (p) => ({ path: p, size: (await stat(path.join(dir, p))).size }))),
        }),
      }),
    },
    stopWhen: [hasToolCall('complete'), stepCountIs(10)],
  });
  for await (const part of result.fullStream) {
    if (part.type === 'error') throw part.error;
    if (streaming && part.type === 'text-delta') {
      const received = performance.timeOrigin + performance.now();
      for (const t of part.text.matchAll(/\|t=([\d.]+)\|/g)) chunkLatencies.push(received - Number(t[1]));
    }
  }
  return performance.now() - started;
}

// Modules load and compile on the first tasks: start-up, not steady state (the service warms up
// with as many).
await runTask(0, 'WARMUP');
for (let i = 1; i < Number(arg('warmup', '1')); i++) await runTask(-i);
if (process.argv.includes('--serve')) {
  // Driven by the benchmark, alternating with the service: each line `run N [C]` on stdin runs N
  // tasks C at a time and answers `{ wallMs, latencies }` on one line; the process stays warm.
  const { createInterface } = await import('node:readline');
  let next = 0;
  console.log(JSON.stringify({ ready: true }));
  for await (const line of createInterface({ input: process.stdin })) {
    const [, n, c] = /^run (\d+)(?: (\d+))?$/.exec(line.trim()) ?? [];
    const latencies = [];
    let left = Number(n ?? 0);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: Number(c ?? 1) }, async () => {
        while (left-- > 0) latencies.push(await runTask(next++));
      }),
    );
    console.log(JSON.stringify({ wallMs: performance.now() - started, latencies }));
  }
  process.exit(0);
}
let peakRss = 0;
let loopP99 = 0;
const delay = monitorEventLoopDelay({ resolution: 10 });
const samplers = [];
if (sampling) {
  delay.enable();
  samplers.push(setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100));
  samplers.push(
    setInterval(() => {
      loopP99 = Math.max(loopP99, delay.percentile(99) / 1e6);
      delay.reset();
    }, 1000),
  );
}
const latencies = [];
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < tasks) latencies.push(await runTask(next++));
  }),
);
const wallMs = performance.now() - started;
samplers.forEach(clearInterval);
if (sampling) loopP99 = Math.max(loopP99, delay.percentile(99) / 1e6);
console.log(
  JSON.stringify({
    wallMs,
    latencies,
    ...(streaming ? { chunkLatencies } : {}),
    ...(sampling ? { peakRssMiB: Math.max(peakRss, process.memoryUsage.rss()) / 1024 / 1024, loopP99Ms: loopP99 } : {}),
  }),
);
