import { mkdirSync, mkdtempSync, readFileSync, existsSync, renameSync, rmSync, symlinkSync, writeFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveWorkspacePath } from './path-guard.ts';
import { fileCallsFor, localCalls, pooledCalls } from './file-calls.ts';
import { openInside, openRoot, readHead, replaceContent, walkTree } from './safe-open.ts';

let base: string;
let root: string;
let outside: string;
beforeEach(() => {
  base = mkdtempSync(path.join(tmpdir(), 'safe-open-'));
  root = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  mkdirSync(path.join(root, 'dir'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(root, 'dir', 'f.txt'), 'inside');
  writeFileSync(path.join(outside, 'f.txt'), 'OUTSIDE');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** Replaces ws/dir by a link to the outside folder, as a concurrent process could after the check. */
function swapDirForLink() {
  renameSync(path.join(root, 'dir'), path.join(root, 'dir-old'));
  symlinkSync(outside, path.join(root, 'dir'));
}

// Both ways of making the walk's calls: on the event loop (a local file system) and through the pool.
describe.each([
  ['made on the event loop', localCalls],
  ['made through the pool', pooledCalls],
])('openInside, its calls %s: something swapped in between check and use', (_way, calls) => {
  it('refuses a read through a folder swapped for a link to outside', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true }, root, calls);
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/f.txt', 'read', calls)).rejects.toThrow(/symbolic link.*outside the workspace/);
  });

  it('refuses a write through a swapped folder, leaving the outside file untouched', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true }, root, calls);
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/f.txt', 'write', calls)).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(path.join(outside, 'f.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('creates no file and no folder outside through a folder swapped during folder creation', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/a/b/new.txt', { mustExist: false }, root, calls);
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/a/b/new.txt', 'write', calls)).rejects.toThrow(/outside the workspace/);
    expect(readdirSync(outside)).toEqual(['f.txt']);
  });

  it('refuses the file itself swapped for a link', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true }, root, calls);
    rmSync(path.join(root, 'dir', 'f.txt'));
    symlinkSync(path.join(outside, 'f.txt'), path.join(root, 'dir', 'f.txt'));
    await expect(openInside(root, checked.real, 'dir/f.txt', 'read', calls)).rejects.toThrow(/symbolic link/);
    await expect(openInside(root, checked.real, 'dir/f.txt', 'write', calls)).rejects.toThrow(/symbolic link/);
    expect(readFileSync(path.join(outside, 'f.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('refuses a FIFO at once, for reading and writing, without blocking', async () => {
    execFileSync('mkfifo', [path.join(root, 'dir', 'pipe')]);
    const real = path.join(root, 'dir', 'pipe');
    await expect(openInside(root, real, 'dir/pipe', 'read', calls)).rejects.toThrow(/FIFO/);
    await expect(openInside(root, real, 'dir/pipe', 'write', calls)).rejects.toThrow(/not a regular file/);
    await expect(openInside(root, real, 'dir/pipe', 'any', calls)).rejects.toThrow(/FIFO/);
  });

  it('reads and replaces a file through its descriptor when nothing was swapped', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true }, root, calls);
    const r = await openInside(root, checked.real, 'dir/f.txt', 'read', calls);
    expect((await readHead(r, 100)).toString()).toBe('inside');
    await r.handle.close();
    const w = await openInside(root, checked.real, 'dir/f.txt', 'write', calls);
    await replaceContent(w, 'new');
    await w.handle.close();
    expect(readFileSync(path.join(root, 'dir', 'f.txt'), 'utf8')).toBe('new');
    expect(existsSync(path.join(root, 'dir', 'f.txt'))).toBe(true);
  });
});

describe('replaceContent', () => {
  it('leaves only the new content, shorter or longer than the old, whichever mode opened the file', async () => {
    const real = path.join(root, 'dir', 'f.txt');
    writeFileSync(real, 'a long first content');
    const u = await openInside(root, real, 'dir/f.txt', 'update');
    await replaceContent(u, 'short');
    await u.handle.close();
    expect(readFileSync(real, 'utf8')).toBe('short');
    const w = await openInside(root, real, 'dir/f.txt', 'write');
    await replaceContent(w, 'ab');
    await w.handle.close();
    expect(readFileSync(real, 'utf8')).toBe('ab');
    const longer = await openInside(root, real, 'dir/f.txt', 'update');
    await replaceContent(longer, 'a longer one');
    await longer.handle.close();
    expect(readFileSync(real, 'utf8')).toBe('a longer one');
  });
});

describe('walkTree', () => {
  it('never descends through links, and skips a folder swapped for a link mid-walk', async () => {
    mkdirSync(path.join(root, 'z'));
    writeFileSync(path.join(root, 'z', 'in.txt'), 'x');
    symlinkSync(outside, path.join(root, 'ln'));
    const dir = await openRoot(root);
    const seen: string[] = [];
    for await (const e of walkTree(dir)) {
      seen.push(e.relative);
      // After the first entry, swap z for a link to outside: the walk must not list outside.
      if (seen.length === 1) {
        renameSync(path.join(root, 'z'), path.join(root, 'z-old'));
        symlinkSync(outside, path.join(root, 'z'));
      }
    }
    await dir.close();
    expect(seen.some((s) => s.includes('f.txt') && !s.startsWith('dir'))).toBe(false);
    expect(seen).not.toContain('ln/f.txt');
    expect(seen).not.toContain('z/f.txt');
  });
});

describe('fileCallsFor', () => {
  it('makes the calls on the event loop on a local file system, through the pool on any other', async () => {
    expect((await fileCallsFor(root)).local).toBe(true);
    // procfs stands for any file system not known to be local (NFS, CephFS, FUSE, ...).
    expect((await fileCallsFor('/proc')).local).toBe(false);
  });
});
