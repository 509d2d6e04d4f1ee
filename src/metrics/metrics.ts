import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { TaskRow } from '../store/schema.ts';
import type { TokenUsage } from '../shapes/usage.ts';

/** Prometheus metrics of one app instance (its own registry: no global state between apps). */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const tasks = new Counter({
    name: 'subagentd_tasks_total',
    help: 'Tasks that ended, by status and subagent type',
    labelNames: ['status', 'subagent_type'],
    registers: [registry],
  });
  const calls = new Counter({
    name: 'subagentd_model_calls_total',
    help: 'Model calls whose usage was billed (one per call that reported usage)',
    registers: [registry],
  });
  const cost = new Counter({
    name: 'subagentd_model_cost_usd_total',
    help: 'What the billed model calls cost, in US dollars (the exact sums are in /usage, in micro-dollars)',
    registers: [registry],
  });
  const unpriced = new Counter({ name: 'subagentd_unpriced_tokens_total', help: 'Tokens of billed calls to models with no price', registers: [registry] });
  const tokens = new Counter({
    name: 'subagentd_tokens_total',
    help: 'Tokens of billed model calls, by kind (input, output, cached_input, reasoning)',
    labelNames: ['kind'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'subagentd_task_duration_seconds',
    help: "Seconds from a task's start to its end, by subagent type",
    labelNames: ['subagent_type'],
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900],
    registers: [registry],
  });
  let depth = async () => ({ queued: 0, running: 0 });
  new Gauge({
    name: 'subagentd_tasks_queued',
    help: 'Tasks waiting to run (on PostgreSQL: across the instances)',
    registers: [registry],
    async collect() {
      // While the database cannot be read the gauge keeps its last value (metrics never fail).
      const d = await depth().catch(() => null);
      if (d) this.set(d.queued);
    },
  });
  new Gauge({
    name: 'subagentd_tasks_running',
    help: 'Tasks running now (in this instance)',
    registers: [registry],
    async collect() {
      const d = await depth().catch(() => null);
      if (d) this.set(d.running);
    },
  });

  const http = new Histogram({
    name: 'subagentd_http_request_duration_seconds',
    help: 'HTTP requests by route (the pattern, not the URL), method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300],
    registers: [registry],
  });
  const providerErrors = new Counter({
    name: 'subagentd_provider_errors_total',
    help: 'Model provider failures that ended a task, by kind (provider_error, provider_timeout)',
    labelNames: ['kind'],
    registers: [registry],
  });
  const providerHttp = new Counter({
    name: 'subagentd_provider_http_errors_total',
    help: 'Error answers of the model provider (each is retried within MODEL_MAX_RETRIES when retryable), by status',
    labelNames: ['status'],
    registers: [registry],
  });
  const streams = new Map<string, () => number>();
  new Gauge({
    name: 'subagentd_stream_connections',
    help: 'Open progress streams, by transport (websocket, sse)',
    labelNames: ['transport'],
    registers: [registry],
    collect() {
      for (const [transport, count] of streams) this.set({ transport }, count());
    },
  });
  let storage = () => ({ writable: true, waiting: 0 });
  new Gauge({
    name: 'subagentd_storage_writable',
    help: '1 while the database takes writes, 0 while the disk is full or the database unwritable',
    registers: [registry],
    collect() {
      this.set(storage().writable ? 1 : 0);
    },
  });
  new Gauge({
    name: 'subagentd_storage_waiting_writes',
    help: 'Writes held in memory until the database takes them again',
    registers: [registry],
    collect() {
      this.set(storage().waiting);
    },
  });

  let database = () => ({ statements: 0, transactions: 0 });
  new Counter({
    name: 'subagentd_db_statements_total',
    help: 'Statements this instance sent to its database (BEGIN and COMMIT included)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(database().statements);
    },
  });
  new Counter({
    name: 'subagentd_db_transactions_total',
    help: 'Transactions this instance committed',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(database().transactions);
    },
  });

  const purged = new Counter({
    name: 'subagentd_tasks_purged_total',
    help: 'Tasks whose content was purged (their usage kept), by why: delete, retention, erasure',
    labelNames: ['reason'],
    registers: [registry],
  });
  const workspacesRemoved = new Counter({
    name: 'subagentd_workspaces_removed_total',
    help: 'Workspaces removed after WORKSPACE_RETENTION_DAYS untouched',
    registers: [registry],
  });
  return {
    workspacesRemoved(n: number) {
      workspacesRemoved.inc(n);
    },
    tasksPurged(reason: 'delete' | 'retention' | 'erasure', n: number) {
      purged.inc({ reason }, n);
    },
    registry,
    /** Where the database counters read their values. */
    watchDatabase(read: () => { statements: number; transactions: number }) {
      database = read;
    },
    /** Where the storage gauges read their values. */
    watchStorage(read: () => { writable: boolean; waiting: number }) {
      storage = read;
    },
    taskFinished(row: TaskRow, durationMs: number) {
      tasks.inc({ status: row.status, subagent_type: row.subagentType });
      duration.observe({ subagent_type: row.subagentType }, durationMs / 1000);
      if (row.errorCode === 'provider_error' || row.errorCode === 'provider_timeout') providerErrors.inc({ kind: row.errorCode });
    },
    httpRequest(route: string, method: string, status: number, seconds: number) {
      http.observe({ route, method, status: String(status) }, seconds);
    },
    providerHttpError(status: number) {
      providerHttp.inc({ status: String(status) });
    },
    /** Where the stream gauge reads its value for one transport. */
    watchStreams(transport: 'websocket' | 'sse', count: () => number) {
      streams.set(transport, count);
    },
    /** A model call was billed: its tokens, and its cost (null: the model has no price). */
    callBilled(u: TokenUsage, costMicroUsd: number | null) {
      calls.inc();
      if (costMicroUsd === null) unpriced.inc(u.totalTokens);
      else cost.inc(costMicroUsd / 1_000_000);
      tokens.inc({ kind: 'input' }, u.inputTokens);
      tokens.inc({ kind: 'output' }, u.outputTokens);
      tokens.inc({ kind: 'cached_input' }, u.cachedInputTokens);
      tokens.inc({ kind: 'reasoning' }, u.reasoningTokens);
    },
    /** Where the queue gauges read their values, when the metrics are read. */
    watchQueue(read: () => Promise<{ queued: number; running: number }>) {
      depth = read;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
