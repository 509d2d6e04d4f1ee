import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ReplayState } from '../../shapes/replay.ts';
import type { TaskRow } from '../../store/schema.ts';
import { openInside } from '../../workspace/safe-open.ts';
import { openWorkspace } from '../../workspace/workspace.ts';
import { worktreeRoot } from '../../workspace/worktree.ts';
import type { Ending } from '../writes/finish-task.ts';
import type { RunContext } from './run-context.ts';

/** Bytes of one artifact hashed to compare it; a larger one is compared by its size and these first bytes. */
const MAX_HASHED_BYTES = 64 * 1024 * 1024;

/** A regular file's size and the hash of its first MAX_HASHED_BYTES, opened once inside `root`; null when it is not there (or not a file). */
async function fingerprint(root: string, relative: string): Promise<string | null> {
  let opened;
  try {
    opened = await openInside(root, path.resolve(root, relative), relative, 'read');
  } catch {
    return null;
  }
  const hash = createHash('sha256');
  const size = opened.stat.size;
  const limit = Math.min(size, MAX_HASHED_BYTES);
  const buf = Buffer.allocUnsafe(64 * 1024);
  try {
    for (let at = 0; at < limit;) {
      const { bytesRead } = await opened.handle.read(buf, 0, Math.min(buf.length, limit - at), at);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
  } catch {
    return null;
  } finally {
    await opened.handle.close().catch(() => {});
  }
  return `${size}:${hash.digest('hex')}`;
}

/**
 * How a replay that ended compares with its original: steps, tokens and cost each side (the
 * replay's billed so far: every call of it is billed before it ends), whether the summaries are the
 * same (whitespace aside), and the artifacts by content (the original's as the shared workspace
 * holds them now, the replay's in its copy).
 */
export async function compareReplay(ctx: RunContext, row: TaskRow, ending: Ending, copy: string | null): Promise<ReplayState> {
  const { deps } = ctx;
  const replay = ending.replay ?? row.replay!;
  // Every call is billed as it ends; the last step's count waits for the task's end: written first.
  await deps.events.flush(row.id);
  await deps.storage.settled();
  const [mine, original] = await Promise.all([deps.store.getById(row.id), deps.store.getById(replay.of)]);
  if (!mine || !original) return replay;
  const sharedRoot = (await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId)).root;
  const copyRoot = copy ? ((await worktreeRoot(copy)) ?? sharedRoot) : sharedRoot;
  const theirs = new Map((original.artifacts ?? []).map((a) => [a.relativePath, a]));
  const ours = new Set(ending.artifacts.map((a) => (a as { relativePath: string }).relativePath));
  const artifacts = { same: [] as string[], changed: [] as string[], missing: [] as string[] };
  for (const rel of theirs.keys()) {
    if (!ours.has(rel)) {
      artifacts.missing.push(rel);
      continue;
    }
    const [a, b] = await Promise.all([fingerprint(sharedRoot, rel), fingerprint(copyRoot, rel)]);
    (a !== null && a === b ? artifacts.same : artifacts.changed).push(rel);
  }
  const pair = (o: number, r: number) => ({ original: o, replay: r });
  const squash = (s: string | null) => (s ?? '').replace(/\s+/g, ' ').trim();
  return {
    ...replay,
    comparison: {
      steps: pair(original.steps, mine.steps),
      inputTokens: pair(original.inputTokens, mine.inputTokens),
      outputTokens: pair(original.outputTokens, mine.outputTokens),
      costMicroUsd: pair(original.costMicroUsd, mine.costMicroUsd),
      sameSummary: squash(original.summary) === squash(ending.summary),
      artifacts,
    },
  };
}
