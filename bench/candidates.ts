/** `npm run bench candidates`: the snapshot of a task with candidates on 10,000 files, and n = 3 attempts against one. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TurnContext } from '../scripted-model/server.ts';
import { openWorkspace } from '../src/workspace/workspace.ts';
import { cloneWorktree, enterWorktree, worktreeDir } from '../src/workspace/worktree.ts';
import { now, pct, startBenchService, warmUp } from './support.ts';

/** Every model answer comes after this long (a model's time to answer). */
const ANSWER_MS = 300;

/** Bytes used on the filesystem holding `dir` (what a copy really costs there, shared blocks counted once). */
const usedBytes = (dir: string) => {
  const s = statfsSync(dir);
  return (s.blocks - s.bfree) * s.bsize;
};
/** What `du` counts under `dir` (each file's blocks, a clone's counted again). */
const duBytes = (dir: string) => Number(spawnSync('/usr/bin/du', ['-s', '--block-size=1', dir], { encoding: 'utf8' }).stdout.split('\t')[0]);

/**
 * The snapshot: a workspace of `files` files (100 folders, 1–8 KiB of text each, as the worktree
 * benchmark's) copied once as the task's snapshot, then cloned for each of `n` attempts, once one
 * after the other and once all at once (as the attempts start together); `rounds` times. Time of
 * each, and the bytes on disk the filesystem reports used (statfs), beside what `du` counts.
 */
export async function benchSnapshot(files = 10_000, n = 4, rounds = 3) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-candidates-'));
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
    const t = { snapshot: [] as number[], clonesInTurn: [] as number[], clonesAtOnce: [] as number[] };
    const disk = { snapshot: [] as number[], clones: [] as number[], du: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      const snap = worktreeDir(dir, `tsk_snap_${r}`);
      const before = usedBytes(dir);
      let t0 = now();
      await enterWorktree(shared, snap, `tsk_snap_${r}`, Date.now());
      t.snapshot.push(now() - t0);
      const afterSnapshot = usedBytes(dir);
      disk.snapshot.push(afterSnapshot - before);
      t0 = now();
      for (let i = 0; i < n; i++) await cloneWorktree(snap, worktreeDir(dir, `tsk_turn_${r}_${i}`), Date.now());
      t.clonesInTurn.push(now() - t0);
      disk.clones.push(usedBytes(dir) - afterSnapshot);
      disk.du.push(duBytes(path.join(dir, '#worktrees')));
      t0 = now();
      await Promise.all(Array.from({ length: n }, (_, i) => cloneWorktree(snap, worktreeDir(dir, `tsk_once_${r}_${i}`), Date.now())));
      t.clonesAtOnce.push(now() - t0);
      rmSync(path.join(dir, '#worktrees'), { recursive: true, force: true });
    }
    const mid = (xs: number[]) => pct(xs, 50);
    return {
      fs,
      files,
      bytes,
      n,
      rounds,
      snapshotMs: mid(t.snapshot),
      clonesInTurnMs: mid(t.clonesInTurn),
      clonesAtOnceMs: mid(t.clonesAtOnce),
      snapshotDiskBytes: mid(disk.snapshot),
      clonesDiskBytes: mid(disk.clones),
      duBytes: mid(disk.du),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * n = 3 attempts against one on the same script: each attempt writes its answer, runs one
 * command, and completes (three model answers, each after ANSWER_MS), checked by a verify command;
 * the task alone in a worktree with the same outcome is the yardstick. `files` files in the
 * workspace, so the snapshot and the clones are in the figure. Rounds alternate; wall time from
 * submit to end (`?wait=true`).
 */
export async function benchAttempts(rounds = 5, files = 1000) {
  // Commands run bare: the sandbox's cost is the same in both variants.
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: '8', BASH_SANDBOX: 'none' });
  try {
    await warmUp(svc.url);
    const script = (ctx: TurnContext) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'write_file', args: { path: 'answer.txt', content: `right from ${ctx.model}` } }], delayMs: ANSWER_MS }
        : ctx.turn === 1
          ? { toolCalls: [{ name: 'bash', args: { command: 'wc -c answer.txt' } }], delayMs: ANSWER_MS }
          : { toolCalls: [{ name: 'complete', args: { summary: 'answered', paths: ['answer.txt'] } }], delayMs: ANSWER_MS };
    const outcome = { verify: { command: 'grep -q right answer.txt' } };
    const variants = [
      { name: 'one attempt (a worktree task, the same outcome)', options: { isolation: 'worktree', outcome } },
      { name: 'candidates, n = 3 (best)', options: { isolation: 'worktree', outcome, candidates: { n: 3 } } },
    ];
    const times = variants.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      for (const [i, v] of variants.entries()) {
        const marker = `CANDB-${r}-${i}`;
        svc.model.script(marker, script);
        const parent = `P-cand-${r}-${i}`;
        // The workspace the snapshot copies.
        const root = path.join(svc.dir, 'workspaces', parent);
        for (let k = 0; k < files; k++) {
          mkdirSync(path.join(root, `d${k % 20}`), { recursive: true });
          writeFileSync(path.join(root, `d${k % 20}`, `f${k}.txt`), `file ${k}\n`.repeat(20));
        }
        const t = now();
        const res = await fetch(`${svc.url}/tasks?wait=true`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            subagent_type: 'general',
            description: 'bench',
            prompt: marker,
            context: { parentTaskId: parent, userId: 'u-bench' },
            options: v.options,
          }),
        });
        const task = JSON.parse((await res.text()).trim()) as { status: string; outcome?: { status: string } };
        if (task.status !== 'completed' || task.outcome?.status !== 'satisfied') throw new Error(`${v.name}: ${JSON.stringify(task).slice(0, 300)}`);
        times[i].push(now() - t);
      }
    }
    return {
      rounds,
      files,
      answerMs: ANSWER_MS,
      rows: variants.map((v, i) => ({ name: v.name, p50: pct(times[i], 50), min: Math.min(...times[i]), max: Math.max(...times[i]) })),
    };
  } finally {
    await svc.close();
  }
}
