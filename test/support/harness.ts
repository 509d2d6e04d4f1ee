import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type App } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { closeDatabase, idleInTransactionFor, openDatabase, type Db } from '../../src/store/database';
import type { Sandbox } from '../../src/sandbox/sandbox';
import { startScriptedModel, type ScriptedModel } from '../../scripted-model/server';
import { testDatabaseUrl } from './postgres';
import { until } from './until';
import { openStream, type StreamMessage } from './ws-client';

export const TEST_API_KEY = 'sk-test-provider-secret-0123456789';

export interface TestService {
  app: App;
  config: Config;
  db: Db;
  model: ScriptedModel;
  dir: string;
  /** Base URL of the listening service, e.g. http://127.0.0.1:12345 */
  url: string;
  inject: App['server']['inject'];
  /** Closes the app (and the model server unless it was passed in). */
  close(): Promise<void>;
}

/**
 * Starts the real app on a fresh SQLite file (a fresh PostgreSQL database with TEST_DATABASE=postgres)
 * and workspace folder, talking over HTTP to a scripted
 * model server. `env` overrides configuration variables as the process environment would.
 */
export async function startService(
  opts: { env?: Record<string, string>; model?: ScriptedModel; dir?: string; sandbox?: Sandbox; logger?: pino.Logger } = {},
): Promise<TestService> {
  const model = opts.model ?? (await startScriptedModel());
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'subagentd-test-'));
  const databaseUrl = await testDatabaseUrl(dir);
  const config = loadConfig({
    DATABASE_PATH: path.join(dir, 'subagentd.db'),
    ...(databaseUrl && { DATABASE_URL: databaseUrl }),
    WORKSPACES_DIR: path.join(dir, 'workspaces'),
    AGENTS_DIR: path.join(dir, 'agents'),
    SKILLS_DIR: path.join(dir, 'skills'),
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: TEST_API_KEY,
    MODEL_MAX_RETRIES: '0',
    LOG_LEVEL: 'silent',
    // Commands run bare unless a test is about the sandbox (test/sandbox.test.ts asks for bwrap),
    // so the suite passes on a machine with only Node and npm.
    BASH_SANDBOX: 'none',
    // No load shedding: a busy test machine (or a test's own synchronous work) must not turn
    // requests into 503 overloaded.
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...opts.env,
  });
  const db = await openDatabase(config.databaseUrl ?? config.databasePath, undefined, { idleInTransactionMs: idleInTransactionFor(config.taskLeaseMs) });
  const app = await createApp({ config, db, logger: opts.logger ?? pino({ level: 'silent' }), sandbox: opts.sandbox });
  await app.server.listen({ port: 0, host: '127.0.0.1' });
  await app.recover();
  const address = app.server.server.address() as { port: number };
  return {
    app,
    config,
    db,
    model,
    dir,
    url: `http://127.0.0.1:${address.port}`,
    inject: app.server.inject.bind(app.server),
    async close() {
      await app.server.close();
      await closeDatabase(db);
      if (!opts.model) await model.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * One service, with its own scripted model (`svc.model`), for the tests of a file: started before
 * them, closed after them. Read `svc` inside the tests, once `beforeAll` has run.
 */
export function serviceForTests(opts: Parameters<typeof startService>[0] = {}): { readonly svc: TestService } {
  let svc: TestService | undefined;
  beforeAll(async () => {
    svc = await startService(opts);
  });
  afterAll(async () => {
    await svc?.close();
  });
  return {
    get svc() {
      if (!svc) throw new Error('the service starts in beforeAll');
      return svc;
    },
  };
}

/** A valid POST /tasks body; `over` replaces top-level fields. */
export function taskBody(over: Record<string, unknown> = {}) {
  return {
    subagent_type: 'general',
    description: 'Test task',
    prompt: 'Do the thing',
    context: { parentTaskId: 'T-1', userId: 'u-1', toolCallId: 'call_1' },
    ...over,
  };
}

let toolRuns = 0;

/**
 * Runs a task whose model makes one tool call, then completes; returns what the model read back
 * from the tool (its result or its error text). The task must complete: a tool failure is data.
 */
export async function toolOnce(
  svc: TestService,
  name: string,
  args: Record<string, unknown>,
  context: { parentTaskId: string; userId: string } = { parentTaskId: 'T-1', userId: 'u-1' },
): Promise<string> {
  const marker = `TOOL-ONCE-${++toolRuns}-${name}`;
  let seen = '';
  svc.model.script(marker, (ctx) => {
    if (ctx.turn === 0) return { toolCalls: [{ name, args }] };
    seen = ctx.toolResults[0]?.content ?? '';
    return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] };
  });
  const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: marker, context }) });
  if (res.statusCode !== 200 || res.json().status !== 'completed') {
    throw new Error(`tool task did not complete: ${res.statusCode} ${res.body}`);
  }
  return seen;
}

/** ws://… URL of a route of the service. */
export const wsUrl = (svc: TestService, route: string) => `${svc.url.replace('http', 'ws')}${route}`;

/** The task once it has ended, as `GET /tasks/:id` answers it (polled, as a client without a socket would). */
export async function taskEnd(svc: TestService, id: string, opts: { key?: string; ms?: number } = {}): Promise<any> {
  let task: any;
  const headers = opts.key ? { authorization: `Bearer ${opts.key}` } : {};
  await until(async () => {
    task = (await svc.inject({ url: `/tasks/${id}`, headers })).json();
    return !['queued', 'running', 'paused'].includes(task.status);
  }, opts.ms ?? 30_000);
  return task;
}

/** Every stored event of a finished task after `after`, as its stream replays them (heartbeats left out). */
export async function storedEvents(svc: TestService, id: string, opts: { key?: string; after?: number } = {}): Promise<StreamMessage[]> {
  const token = opts.key ? `&access_token=${opts.key}` : '';
  const client = await openStream(wsUrl(svc, `/tasks/${id}/stream?after=${opts.after ?? 0}${token}`));
  await client.closed;
  return client.messages.filter((m) => m.type !== 'heartbeat');
}

/** A value of `GET /metrics`: the sample of `name` whose labels include `labels` (0 when absent). */
export async function metric(svc: TestService, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = (await svc.inject({ url: '/metrics' })).body;
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name && wanted.every((w) => (m[2] ?? '').includes(w))) return Number(m[3]);
  }
  return 0;
}

/** What the model read back from the tools, in the last request of the task whose prompt holds `key`. */
export function toolResults(svc: TestService, key: string): string[] {
  return svc.model.requests
    .filter((r) => JSON.stringify(r.body.messages).includes(key))
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
}
