import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, startChildService, type ChildService } from './support/child-service';

/**
 * A full workspace disk, for real: the workspaces live on a size-limited tmpfs, which a filler
 * file then fills, while the database stays on a disk with room. Mounting needs root; elsewhere
 * the test says so and is skipped.
 */
let dir: string;
let workspaces: string;
let mounted = false;
let why = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-wsfull-'));
  workspaces = path.join(dir, 'workspaces');
  mkdirSync(workspaces);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', workspaces], { stdio: 'pipe' });
    mounted = true;
  } catch (err) {
    why = `cannot mount a size-limited tmpfs here (${(err as Error).message.split('\n')[0]}); run the tests as root to include the full-workspace-disk test`;
  }
});
afterAll(() => {
  if (mounted) execFileSync('umount', ['-l', workspaces]);
  rmSync(dir, { recursive: true, force: true });
});

/** Fills the filesystem with one file until the kernel refuses more. */
function fill(file: string) {
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeFileSync(file, chunk, { flag: 'a' });
  } catch {
    // full
  }
}

describe('a full workspace disk', () => {
  let svc: ChildService | undefined;
  afterAll(() => {
    svc?.child.kill('SIGKILL');
  });

  it('answers an upload 507 storage_full with Retry-After, changes nothing, stays healthy, takes the retry once there is room, and shuts down cleanly', async ({
    skip,
  }) => {
    if (!mounted) skip(why);
    // Uploads need no model: any address does.
    svc = await startChildService({ ...childEnv(dir, 'http://127.0.0.1:9/v1', 'sk-unused'), WORKSPACES_DIR: workspaces });
    const put = (file: string, body: Buffer | string) => fetch(`${svc!.url}/workspaces/T-full/files/${file}`, { method: 'PUT', body });
    expect((await put('before.txt', 'room enough')).status).toBe(201);

    const filler = path.join(workspaces, 'filler');
    fill(filler);
    // Larger than a socket's buffers: the caller is still sending when the service gives up.
    const upload = Buffer.alloc(5_000_000, 7);
    const refused = await put('data.bin', upload);
    expect(refused.status).toBe(507);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ code: 'storage_full', message: expect.stringContaining('full') });
    // Nothing of the refused upload stays behind, not even its temporary file.
    expect(readdirSync(path.join(workspaces, 'T-full'))).toEqual(['before.txt']);
    // The service itself is fine: its database is on another disk.
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
    expect(await fetch(`${svc.url}/workspaces/T-full/files/before.txt`).then((r) => r.text())).toBe('room enough');

    rmSync(filler);
    const retried = await put('data.bin', upload);
    expect(retried.status).toBe(201);
    expect(Buffer.from(await (await fetch(`${svc.url}/workspaces/T-full/files/data.bin`)).arrayBuffer()).equals(upload)).toBe(true);

    // Full again: a refused upload holds nothing open that keeps the service from stopping.
    fill(filler);
    expect((await put('again.bin', upload)).status).toBe(507);
    svc.child.kill('SIGTERM');
    const exit = await svc.exited;
    if (exit.code !== 0) console.log(svc.output().slice(-3000));
    expect(exit).toEqual({ code: 0, signal: null });
    rmSync(filler);
  }, 60_000);
});
