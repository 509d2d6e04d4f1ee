import { mkdirSync, mkdtempSync, readFileSync, existsSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveWorkspacePath } from './path-guard';
import { openInside, overwrite } from './safe-open';

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

describe('openInside: a link swapped in between check and use', () => {
  it('refuses a read through a folder swapped for a link to outside', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true });
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/f.txt', 'read')).rejects.toThrow(/outside the workspace/);
  });

  it('refuses a write through a swapped folder, leaving the outside file untouched', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true });
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/f.txt', 'write')).rejects.toThrow(/outside the workspace/);
    expect(readFileSync(path.join(outside, 'f.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('removes a file it created outside through a swapped folder', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/new.txt', { mustExist: false });
    swapDirForLink();
    await expect(openInside(root, checked.real, 'dir/new.txt', 'write')).rejects.toThrow(/outside the workspace/);
    expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
  });

  it('refuses when the file itself became a link', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true });
    rmSync(path.join(root, 'dir', 'f.txt'));
    symlinkSync(path.join(outside, 'f.txt'), path.join(root, 'dir', 'f.txt'));
    await expect(openInside(root, checked.real, 'dir/f.txt', 'read')).rejects.toThrow(/symbolic link/);
    await expect(openInside(root, checked.real, 'dir/f.txt', 'write')).rejects.toThrow(/symbolic link/);
    expect(readFileSync(path.join(outside, 'f.txt'), 'utf8')).toBe('OUTSIDE');
  });

  it('reads and writes normally when nothing changed', async () => {
    const checked = await resolveWorkspacePath(root, 'dir/f.txt', { mustExist: true });
    const r = await openInside(root, checked.real, 'dir/f.txt', 'read');
    expect(await r.readFile('utf8')).toBe('inside');
    await r.close();
    await overwrite(await openInside(root, checked.real, 'dir/f.txt', 'write'), 'new');
    expect(readFileSync(path.join(root, 'dir', 'f.txt'), 'utf8')).toBe('new');
  });
});
