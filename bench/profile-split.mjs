/**
 * Where a profiled service's busy time goes (BENCHMARKS.md, issue 57): reads a `.cpuprofile` (from
 * `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>"`) and charges each sample to the first of the
 * categories below met walking its stack from the leaf up (a `writev` under `ws` is fan-out, a
 * `JSON.parse` under the SDK's parser is parsing). `--from <s> --to <s>` keeps a window of the run
 * (seconds from the profile's start; `--timeline` prints the busy share per second to find it).
 *
 *   node bench/profile-split.mjs <file.cpuprofile> [--from 13 --to 20] [--timeline]
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const prof = JSON.parse(readFileSync(args[0], 'utf8'));
const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const CATEGORIES = [
  ['GC', (f) => f === '(garbage collector)'],
  ['idle', (f) => f === '(idle)'],
  [
    'fan-out to readers (feed, WebSocket sends)',
    (f, u) =>
      /node_modules\/ws\/|dist\/events\/(feed|socket-sink|sse-sink|event-listeners|follow)\.js|dist\/http\/stream-routes/.test(u) ||
      (f === 'publish' && /event-log/.test(u)),
  ],
  ['coalescing', (f, u) => /delta-coalescer/.test(u)],
  ['event JSON (pendingOf, envelope)', (f, u) => /dist\/events\/event-rows\.js|dist\/shapes\/time\.js/.test(u)],
  [
    'SQLite and the write queue (events, steps, usage, task rows)',
    (f, u) => /better-sqlite3|dist\/store\/|dist\/events\/(event-log|event-writer|event-numbering)\.js|dist\/tasks\/writes\//.test(u),
  ],
  ['provider: zod checks of chunks', (f, u) => /node_modules\/zod\//.test(u)],
  [
    'provider: SSE framing and JSON parse (provider-utils, eventsource-parser, the provider package)',
    (f, u) => /@ai-sdk\/(provider-utils|openai|anthropic|google|openai-compatible|provider\/)|eventsource-parser/.test(u),
  ],
  ['provider: web streams', (f, u) => /internal\/webstreams/.test(u)],
  ['provider: undici (HTTP client)', (f, u) => /undici/.test(u)],
  [
    'provider: model guard, stall guard, model fetch, provider seam',
    (f, u) => /dist\/loop\/(model-guard|stall-guard|model-provider|provider-fetch|request-fetch|providers\/)/.test(u),
  ],
  ['ai SDK (ai package)', (f, u) => /node_modules\/ai\//.test(u)],
  ['tools and workspace', (f, u) => /dist\/(tools|workspace|sandbox)\//.test(u)],
  [
    'HTTP server (fastify, routes: submit, upgrade, metrics)',
    (f, u) => /fastify|find-my-way|avvio|dist\/http\/|_http_server|_http_common|_http_incoming|_http_outgoing/.test(u) || f === 'parserOnHeadersComplete',
  ],
  ['agent loop and task bookkeeping', (f, u) => /dist\/(loop|tasks|webhooks|definitions|money|hooks|metrics)\//.test(u) || /prom-client/.test(u)],
  ['module loading', (f, u) => /modules\/(cjs|esm)/.test(u) || /compileSourceTextModule|wrapSafe/.test(f)],
];
const memo = new Map();
function categoryOf(id) {
  if (memo.has(id)) return memo.get(id);
  let found = 'other (Node internals: timers, sockets, microtasks)';
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const { functionName, url } = nodes.get(cur).callFrame;
    const hit = CATEGORIES.find(([, match]) => match(functionName, url));
    if (hit) {
      found = hit[0];
      break;
    }
  }
  memo.set(id, found);
  return found;
}

const from = opt('--from', 0) * 1e6;
const to = opt('--to', Infinity) * 1e6;
const by = new Map();
const perSecond = [];
let clock = 0;
for (let i = 0; i < prof.samples.length; i++) {
  clock += prof.timeDeltas[i];
  const dt = prof.timeDeltas[i + 1] ?? prof.timeDeltas[i];
  const c = categoryOf(prof.samples[i]);
  const s = Math.floor(clock / 1e6);
  perSecond[s] ??= { busy: 0, all: 0 };
  perSecond[s].all += dt;
  if (c !== 'idle') perSecond[s].busy += dt;
  if (clock < from || clock > to) continue;
  by.set(c, (by.get(c) ?? 0) + dt);
}
if (args.includes('--timeline')) console.log(perSecond.map((x, s) => `${s}s ${Math.round((100 * x.busy) / x.all)}%`).join('  '));
const busy = [...by].filter(([c]) => c !== 'idle').reduce((a, [, v]) => a + v, 0);
console.log(`window ${from / 1e6}-${Math.min(to, clock) / 1e6} s: busy ${(busy / 1e6).toFixed(2)} s, idle ${((by.get('idle') ?? 0) / 1e6).toFixed(2)} s`);
console.log('| where | ms | % of busy |\n|---|---:|---:|');
for (const [c, v] of [...by].filter(([c]) => c !== 'idle').sort((a, b) => b[1] - a[1]))
  console.log(`| ${c} | ${(v / 1e3).toFixed(0)} | ${((100 * v) / busy).toFixed(1)} |`);
