import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

/**
 * `npm pack -w @subagentd/client` makes a package an orchestrator installs in seconds: its own
 * dependencies are its peers `ai` and `zod` (installed by npm with it), nothing of the server, no
 * native build. Installed in a fresh folder (from npm's cache: `npm ci` has just fetched the same
 * versions), it type-checks a consumer and runs a task against the service.
 */
const repo = path.resolve(import.meta.dirname, '..');
const SERVER_ONLY = [
  'fastify',
  '@fastify',
  'better-sqlite3',
  'drizzle-orm',
  'pg',
  'pino',
  'prom-client',
  'standardwebhooks',
  '@a2a-js',
  '@agentclientprotocol',
  'ws',
];
let dir: string;
let svc: TestService | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pack-'));
});
afterAll(async () => {
  await svc?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Bytes of every file under `p`. */
function sizeOf(p: string): number {
  const s = statSync(p);
  if (!s.isDirectory()) return s.size;
  return readdirSync(p).reduce((sum, name) => sum + sizeOf(path.join(p, name)), 0);
}

describe('the packed client', () => {
  it('installs light (tens of KB, peers only, no native build), type-checks a consumer and runs a task', async () => {
    execFileSync('npm', ['pack', '-w', '@subagentd/client', '--silent', '--pack-destination', dir], { cwd: repo, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = path.join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.tgz'))!,
    );
    expect(statSync(tarball).size).toBeLessThan(64 * 1024);
    // One version: the client's is the service's.
    const version = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).version;
    expect(path.basename(tarball)).toBe(`subagentd-client-${version}.tgz`);

    const app = path.join(dir, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], {
      cwd: app,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const modules = path.join(app, 'node_modules');
    const installed = readdirSync(modules).filter((n) => !n.startsWith('.'));
    expect(installed).toEqual(expect.arrayContaining(['@subagentd', 'ai', 'zod']));
    for (const name of SERVER_ONLY) expect(installed, name).not.toContain(name);
    // No compiled addon anywhere, and the whole install (ai and zod included) stays small.
    const lock = JSON.parse(readFileSync(path.join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    expect(
      Object.entries(lock.packages)
        .filter(([, p]) => p.hasInstallScript)
        .map(([n]) => n),
    ).toEqual([]);
    expect(Object.keys(lock.packages).length - 1).toBeLessThanOrEqual(16);
    expect(sizeOf(modules)).toBeLessThan(40 * 1024 * 1024);
    expect(existsSync(path.join(modules, '@subagentd', 'client', 'src'))).toBe(false);

    writeFileSync(
      path.join(app, 'check.ts'),
      `import { createSubagentClient, createTaskTool, type TaskOutput } from '@subagentd/client';
const client = createSubagentClient({ baseUrl: process.argv[2]! });
const done: TaskOutput = await client.tasks.run({ subagent_type: 'shell', description: 'Packed', command: 'echo packed-ok', context: { parentTaskId: 'T-pack', userId: 'u-pack' } });
const events: string[] = [];
for await (const m of client.tasks.stream(done.id, { heartbeats: false })) events.push(m.type);
const tool = await createTaskTool({ client, context: { parentTaskId: 'T-pack', userId: 'u-pack' } });
console.log(JSON.stringify({ status: done.status, output: done.output, last: events.at(-1), tool: typeof tool.execute }));
`,
    );
    const tsc = path.join(repo, 'node_modules/typescript/bin/tsc');
    // The declarations type-check a consumer under Node's own resolution, then it runs compiled.
    execFileSync(
      process.execPath,
      [
        tsc,
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--target',
        'es2022',
        '--lib',
        'es2023,dom',
        '--types',
        'node',
        '--typeRoots',
        path.join(repo, 'node_modules/@types'),
        'check.ts',
      ],
      { cwd: app, stdio: 'inherit' },
    );
    // Asynchronously: the service answering it runs in this process.
    // It must also exit once done (a stream left open would hold it for its idle timeout, 45 s).
    // Started now: the synchronous steps above would have held its event loop (503 overloaded).
    svc = await startService();
    const { stdout: out } = await promisify(execFile)(process.execPath, ['check.js', svc.url], { cwd: app, encoding: 'utf8', timeout: 30_000 });
    expect(JSON.parse(out)).toEqual({
      status: 'completed',
      output: expect.objectContaining({ exitCode: 0, stdout: 'packed-ok\n' }),
      last: 'task.finished',
      tool: 'function',
    });
  }, 180_000);
});
