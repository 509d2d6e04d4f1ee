import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInside, resolveWorkspacePath } from './path-guard.ts';

let base: string;
let root: string;
beforeAll(() => {
  base = mkdtempSync(path.join(tmpdir(), 'path-guard-'));
  root = path.join(base, 'T-1');
  mkdirSync(path.join(root, 'a'), { recursive: true });
  mkdirSync(path.join(base, 'T-10'));
  writeFileSync(path.join(root, 'a', 'f.txt'), 'x');
  symlinkSync(path.join(root, 'a'), path.join(root, 'inner-link'));
  symlinkSync(path.join(base, 'T-10'), path.join(root, 'outer-link'));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('isInside', () => {
  it('is not fooled by a shared prefix', () => {
    expect(isInside('/ws/T-1', '/ws/T-1')).toBe(true);
    expect(isInside('/ws/T-1', '/ws/T-1/a/b')).toBe(true);
    expect(isInside('/ws/T-1', '/ws/T-10/a')).toBe(false);
    expect(isInside('/ws/T-1', '/ws')).toBe(false);
  });
});

describe('resolveWorkspacePath', () => {
  it('resolves relative, absolute-inside and root paths', async () => {
    expect((await resolveWorkspacePath(root, 'a/f.txt', { mustExist: true })).relative).toBe('a/f.txt');
    expect((await resolveWorkspacePath(root, path.join(root, 'a'), { mustExist: true })).relative).toBe('a');
    expect((await resolveWorkspacePath(root, '', { mustExist: true })).relative).toBe('.');
    expect((await resolveWorkspacePath(root, 'a/../a/./f.txt', { mustExist: true })).relative).toBe('a/f.txt');
  });

  it('follows links that stay inside and refuses those that lead out', async () => {
    const inner = await resolveWorkspacePath(root, 'inner-link/f.txt', { mustExist: true });
    expect(inner.real).toBe(path.join(root, 'a', 'f.txt'));
    await expect(resolveWorkspacePath(root, 'outer-link/x', { mustExist: false })).rejects.toMatchObject({ reason: 'outside_workspace' });
  });

  it('resolves a new file against its nearest existing parent', async () => {
    const r = await resolveWorkspacePath(root, 'a/new/deeper/file.txt', { mustExist: false });
    expect(r).toMatchObject({ exists: false, real: path.join(root, 'a', 'new', 'deeper', 'file.txt') });
    await expect(resolveWorkspacePath(root, 'a/new.txt', { mustExist: true })).rejects.toMatchObject({ reason: 'not_found' });
  });

  it.each([
    ['../T-10/x', 'outside_workspace'],
    ['/etc/passwd', 'outside_workspace'],
    ['a\0b', 'invalid_path'],
    ['a\\b', 'invalid_path'],
    ['~/x', 'invalid_path'],
    ['x'.repeat(5000), 'invalid_path'],
  ])('refuses %j as %s', async (input, reason) => {
    await expect(resolveWorkspacePath(root, input, { mustExist: false })).rejects.toMatchObject({ reason });
  });
});
