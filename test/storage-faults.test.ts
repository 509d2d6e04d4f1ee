import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, DatabaseNotWritableError, openSqlite } from '../src/store/database';
import { startService, taskBody, type TestService } from './support/harness';
import { openStream } from './support/ws-client';
import { until } from './support/until';

/**
 * A full disk, for real: the database and the workspaces live on a size-limited tmpfs, which a
 * filler file then fills. Mounting needs root; elsewhere the test says so and is skipped.
 */
let dir: string;
let mounted = false;
let why = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', dir], { stdio: 'pipe' });
    mounted = true;
  } catch (err) {
    why = `cannot mount a size-limited tmpfs here (${(err as Error).message.split('\n')[0]}); run the tests as root to include the full-disk test`;
  }
});
afterAll(() => {
  if (mounted) execFileSync('umount', ['-l', dir]);
  rmSync(dir, { recursive: true, force: true });
});

/** Fills the filesystem with one file until the kernel refuses more. */
function fill(file: string) {
  const chunk = Buffer.alloc(64 * 1024, 1);
  let size = 0;
  try {
    for (;;) {
      writeFileSync(file, chunk, { flag: 'a' });
      size += chunk.length;
    }
  } catch {
    return size;
  }
}

// SQLite's file on a full or read-only disk; on PostgreSQL the database is another server's disk.
if (process.env.TEST_DATABASE === 'postgres') {
  console.warn("[storage-faults test] skipped in the PostgreSQL pass: a full or read-only disk under SQLite's file; PostgreSQL's is another server's");
}
describe.skipIf(process.env.TEST_DATABASE === 'postgres')('a full disk', () => {
  let svc: TestService;
  afterAll(async () => svc?.close());

  it('refuses new tasks with 507, reports it in /healthz and /metrics, stops running tasks without losing what was stored, and recovers when space returns', async ({
    skip,
  }) => {
    if (!mounted) skip(why);
    svc = await startService({ dir, env: { BASH_SANDBOX: 'none' } });
    svc.model.script('BEFORE-FULL', [{ toolCalls: [{ name: 'complete', args: { summary: 'fine', paths: [] } }], usage: { input: 10, output: 1 } }]);
    expect((await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'BEFORE-FULL' }) })).json().status).toBe('completed');

    // A task whose first step is billed, then the disk fills while its tool runs (long enough that
    // a loaded machine fills it before the step ends: else no write is left to fail).
    svc.model.script('DURING-FULL', [
      { toolCalls: [{ name: 'bash', args: { command: 'sleep 4' } }], usage: { input: 40, output: 4 } },
      // Its text needs new room in SQLite's WAL: a write that fits in the WAL's old pages succeeds on a full disk.
      { text: 'a long answer '.repeat(100_000), toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 50, output: 5 } },
      { toolCalls: [{ name: 'complete', args: { summary: 'never', paths: [] } }] },
    ]);
    const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'DURING-FULL' }) })).json().id;
    await until(async () => (await svc.inject({ url: `/tasks/${id}` })).json().usage.inputTokens === 40);
    const filler = path.join(dir, 'filler');
    fill(filler);

    // The next write fails; the service notices, refuses work and says so.
    await until(async () => (await svc.inject({ url: '/healthz' })).statusCode === 503);
    const health = (await svc.inject({ url: '/healthz' })).json();
    expect(health.error.code).toBe('storage_full');
    const refused = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'BEFORE-FULL' }) });
    expect(refused.statusCode).toBe(507);
    expect(refused.json().error.code).toBe('storage_full');
    expect((await svc.inject({ url: '/metrics' })).body).toMatch(/^subagentd_storage_writable 0$/m);
    // Reads still work meanwhile.
    expect((await svc.inject({ url: `/tasks/${id}` })).statusCode).toBe(200);

    // Space comes back: held writes land in order, the task ends, new work is admitted.
    rmSync(filler);
    await until(async () => (await svc.inject({ url: '/healthz' })).statusCode === 200);
    await until(async () => !['queued', 'running'].includes((await svc.inject({ url: `/tasks/${id}` })).json().status));
    const ended = (await svc.inject({ url: `/tasks/${id}` })).json();
    expect(ended).toMatchObject({ status: 'error', error: { code: 'storage_full' } });
    expect(ended.usage.inputTokens).toBeGreaterThanOrEqual(40);
    const records = (await svc.inject({ url: `/usage/records?limit=100` })).json().records;
    expect(records.filter((r: { taskId: string }) => r.taskId === id)).toMatchObject([{ status: 'error', inputTokens: ended.usage.inputTokens }]);
    // Its stream is whole: seq without a gap, ending with task.finished.
    const stream = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${id}/stream`);
    await stream.closed;
    expect(stream.messages.map((m) => m.seq)).toEqual(stream.messages.map((_, i) => i + 1));
    expect(stream.messages.at(-1)?.type).toBe('task.finished');
    expect((await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'BEFORE-FULL' }) })).json().status).toBe('completed');
    expect((await svc.inject({ url: '/metrics' })).body).toMatch(/^subagentd_storage_writable 1$/m);
  });
});

describe.skipIf(process.env.TEST_DATABASE === 'postgres')('a database that cannot be written', () => {
  it('is refused at start with a clear error', async () => {
    const ro = mkdtempSync(path.join(tmpdir(), 'subagentd-ro-'));
    try {
      const file = path.join(ro, 'db.sqlite');
      await closeDatabase(openSqlite(file));
      chmodSync(file, 0o444);
      mkdirSync(path.join(ro, 'x'));
      // Root ignores file modes; a read-only bind of the folder is what binds root too.
      let readOnly = false;
      try {
        execFileSync('mount', ['--bind', '-o', 'ro', ro, ro], { stdio: 'pipe' });
        readOnly = true;
      } catch {
        // without mount rights, the file mode does it for a non-root user
      }
      try {
        expect(() => openSqlite(file)).toThrow(DatabaseNotWritableError);
      } finally {
        if (readOnly) execFileSync('umount', [ro]);
      }
    } finally {
      rmSync(ro, { recursive: true, force: true });
    }
  });
});
