/** `npm run bench worktree`: the cost of a worktree task's copy, its changes, its diff and its apply on 10,000 files. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../src/workspace/workspace.ts';
import { applyChanges, changesOf, conflictsOf, enterWorktree, patchOf, removeWorktree, worktreeDir } from '../src/workspace/worktree.ts';
import { now, pct } from './support.ts';

/**
 * A workspace of `files` files (100 folders, 1–8 KiB of text each, 10,000 files ≈ 45 MB) copied
 * as a worktree task's copy is, `rounds` times: the copy, the walk that finds the changes (100
 * files edited, 10 added, 10 deleted), the diff, the conflict check and the apply. GNU `cp -a
 * --reflink=auto` of the same tree is the baseline. On this filesystem (see `fs`) clones are or are
 * not available: with them (btrfs, XFS) both copies share blocks.
 */
export async function benchWorktree(files = 10_000, rounds = 5) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-worktree-'));
  const fs = spawnSync('/usr/bin/stat', ['-f', '-c', '%T', dir], { encoding: 'utf8' }).stdout.trim();
  try {
    const sharedDir = path.join(dir, 'P-bench');
    let bytes = 0;
    for (let i = 0; i < files; i++) {
      const folder = path.join(sharedDir, `pkg${i % 100}`);
      if (i < 100) mkdirSync(folder, { recursive: true });
      const text = `// file ${i}\n${'export const value = 42; // some code here\n'.repeat(24 + (i % 168))}`;
      writeFileSync(path.join(folder, `f${i}.ts`), text);
      bytes += text.length;
    }
    const shared = await openWorkspace(dir, 'P-bench');
    const times = { copy: [] as number[], cp: [] as number[], changes: [] as number[], diff: [] as number[], conflicts: [] as number[], apply: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      const wt = worktreeDir(dir, `tsk_bench_${r}`);
      let t = now();
      const copy = await enterWorktree(shared, wt, `tsk_bench_${r}`, Date.now());
      times.copy.push(now() - t);
      // The task's work: 100 files edited, 10 added, 10 deleted.
      for (let i = 0; i < 100; i++) writeFileSync(path.join(copy.root, `pkg${i}`, `f${i}.ts`), `// edited in round ${r}\n`);
      for (let i = 0; i < 10; i++) writeFileSync(path.join(copy.root, `new${i}.ts`), `// added ${i}\n`);
      for (let i = 0; i < 10; i++) rmSync(path.join(copy.root, `pkg${(5000 + i) % 100}`, `f${5000 + i}.ts`));
      t = now();
      const changes = (await changesOf(wt))!;
      times.changes.push(now() - t);
      if (changes.modified.length !== 100 || changes.added.length !== 10 || changes.deleted.length !== 10)
        throw new Error(`changes: ${JSON.stringify(changes).slice(0, 200)}`);
      t = now();
      await patchOf(shared.root, wt, changes);
      times.diff.push(now() - t);
      t = now();
      const conflicts = await conflictsOf(shared.root, wt, changes);
      times.conflicts.push(now() - t);
      if (conflicts.length > 0) throw new Error(`conflicts: ${conflicts.length}`);
      t = now();
      // Applied to a second copy (the shared tree stays as it was for the next round).
      const target = worktreeDir(dir, `tsk_target_${r}`);
      const into = await enterWorktree(shared, target, `tsk_target_${r}`, Date.now());
      t = now();
      await applyChanges(into.root, wt, changes);
      times.apply.push(now() - t);
      await removeWorktree(wt);
      await removeWorktree(target);
      t = now();
      const cp = spawnSync('/usr/bin/cp', ['-a', '--reflink=auto', sharedDir, path.join(dir, `cp-${r}`)]);
      if (cp.status !== 0) throw new Error(`cp: ${String(cp.stderr)}`);
      times.cp.push(now() - t);
      rmSync(path.join(dir, `cp-${r}`), { recursive: true, force: true });
    }
    const row = (xs: number[]) => ({ p50: pct(xs, 50), max: Math.max(...xs) });
    return {
      fs,
      files,
      bytes,
      rounds,
      copy: row(times.copy),
      cp: row(times.cp),
      changes: row(times.changes),
      diff: row(times.diff),
      conflicts: row(times.conflicts),
      apply: row(times.apply),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
