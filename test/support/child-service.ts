import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, testDatabaseUrl } from './postgres';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The environment of a service process whose files live in `dir`, on the scripted model at
 * `modelUrl`; commands run bare (these tests are about the process, not the sandbox).
 */
export function childEnv(dir: string, modelUrl: string, apiKey: string): Record<string, string> {
  return {
    DATABASE_PATH: path.join(dir, 'db.sqlite'),
    WORKSPACES_DIR: path.join(dir, 'workspaces'),
    AGENTS_DIR: path.join(dir, 'agents'),
    SKILLS_DIR: path.join(dir, 'skills'),
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: apiKey,
    BASH_SANDBOX: 'none',
  };
}

/** A request to a service process: its status and its JSON body. */
export async function fetchJson(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

export interface ChildService {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs the service as a real child process and waits until it is ready: `src/server.ts` under tsx,
 * or with `built` the compiled `dist/server.js` on bare Node (what `npm start` runs); `built` may
 * name another build's server.js (a benchmark comparing two builds).
 */
export async function startChildService(
  env: Record<string, string>,
  nodeArgs: string[] = [],
  opts: { waitReady?: boolean; built?: boolean | string } = {},
): Promise<ChildService> {
  const port = await freePort();
  // On a PostgreSQL run, the folder's database (the same one each time the folder's service starts).
  const databaseUrl = env.DATABASE_PATH ? await testDatabaseUrl(path.dirname(env.DATABASE_PATH)) : null;
  // A restarted service keeps its instance's name (as a container keeps its hostname), so it takes
  // its own running tasks back at once rather than when their leases expire.
  if (databaseUrl) env = { INSTANCE_ID: `test-${path.basename(path.dirname(env.DATABASE_PATH))}`, ...env, DATABASE_URL: databaseUrl };
  const entry = opts.built
    ? [typeof opts.built === 'string' ? opts.built : path.join(root, 'dist/server.js')]
    : ['--import', 'tsx', path.join(root, 'src/server.ts')];
  const child = spawn(process.execPath, [...nodeArgs, ...entry], {
    cwd: root,
    // No load shedding: a busy test machine must not turn requests into 503 overloaded.
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY_MS: '0', ...env, PORT: env.PORT ?? String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = `http://127.0.0.1:${env.PORT ?? port}`;
  if (opts.waitReady === false) return { child, url, output: () => out, exited };
  // Never outlives the test process (a failed test's afterAll may not reach it).
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  void exited.then(() => process.removeListener('exit', reap));
  // A loaded machine compiles the sources slowly under tsx: 30 s before it counts as not starting.
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early:\n${out}`);
    if (Date.now() > until) {
      // Not left running: it would hold the database and the next start would find it in use.
      child.kill('SIGKILL');
      await exited;
      throw new Error(`service not ready in time:\n${out}`);
    }
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url, output: () => out, exited };
}
