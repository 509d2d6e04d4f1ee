import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

/**
 * `npm pack` makes a package whose `subagentd/client` works in a fresh folder where the server's
 * own dependencies do not exist at all: the import cannot load SQLite or fastify even by accident.
 */
const repo = path.resolve(import.meta.dirname, '..');
const SERVER_ONLY = new Set([
  'fastify', '@fastify', 'fastify-type-provider-zod', 'better-sqlite3', 'drizzle-orm', 'pino', 'prom-client',
  'standardwebhooks', '@pydantic', 're2js', 'vfile', 'vfile-matter', 'ulid', 'undici', 'ajv',
]);
let dir: string;
let svc: TestService;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-pack-'));
  svc = await startService();
}, 180_000);
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('imports subagentd/client and runs a task with none of the server\'s dependencies installed', async () => {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: repo, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
    const app = path.join(dir, 'app');
    const modules = path.join(app, 'node_modules');
    mkdirSync(modules, { recursive: true });
    execFileSync('tar', ['-xzf', path.join(dir, tarball), '-C', dir]);
    renameSync(path.join(dir, 'package'), path.join(modules, 'subagentd'));
    expect(existsSync(path.join(modules, 'subagentd', 'src'))).toBe(false);
    expect(existsSync(path.join(modules, 'subagentd', 'dist', 'client', 'index.d.ts'))).toBe(true);
    // Everything else the repository has installed, minus the server's own dependencies.
    for (const name of readdirSync(path.join(repo, 'node_modules'))) {
      if (!SERVER_ONLY.has(name) && !name.startsWith('.')) symlinkSync(path.join(repo, 'node_modules', name), path.join(modules, name));
    }
    writeFileSync(
      path.join(app, 'check.ts'),
      `import { createSubagentClient, createTaskTool, type TaskOutput } from 'subagentd/client';
const client = createSubagentClient({ baseUrl: process.argv[2]! });
const { id } = await client.tasks.create({ subagent_type: 'shell', description: 'Packed', command: 'echo packed-ok', context: { parentTaskId: 'T-pack', userId: 'u-pack' } });
const done: TaskOutput = await client.tasks.wait(id);
const tool = await createTaskTool({ client, context: { parentTaskId: 'T-pack', userId: 'u-pack' } });
console.log(JSON.stringify({ status: done.status, output: done.output, tool: typeof tool.execute }));
`,
    );
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ type: 'module' }));
    // The declarations type-check a consumer under Node's own resolution.
    execFileSync(
      process.execPath,
      [path.join(repo, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--target', 'es2022', '--types', 'node', 'check.ts'],
      { cwd: app, stdio: 'inherit' },
    );
    execFileSync(process.execPath, [path.join(repo, 'node_modules/typescript/bin/tsc'), '--module', 'nodenext', '--target', 'es2022', '--types', 'node', '--skipLibCheck', 'check.ts'], { cwd: app });
    // Asynchronously: the service answering it runs in this process.
    const { stdout: out } = await promisify(execFile)(process.execPath, ['check.js', svc.url], { cwd: app, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ status: 'completed', output: expect.objectContaining({ exitCode: 0, stdout: 'packed-ok\n' }), tool: 'function' });
  }, 180_000);
});
