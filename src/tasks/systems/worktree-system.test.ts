import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { openWorkspace } from '../../workspace/workspace.ts';
import { changesOf, enterWorktree, worktreeDir } from '../../workspace/worktree.ts';
import { newTaskRow } from './admission.ts';
import { createWorktreeSystem } from './worktree-system.ts';

const TTL_MS = 60_000;

describe('the worktree system', () => {
  let dir = '';
  let close: () => Promise<void> = async () => {};
  afterEach(async () => {
    await close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A shared workspace holding a.txt and b.txt, and the systems over it. */
  async function setup() {
    dir = mkdtempSync(path.join(tmpdir(), 'worktree-system-'));
    const sys = taskSystems({ workspacesDirOf: () => dir });
    close = sys.close;
    const shared = await openWorkspace(dir, 'P');
    writeFileSync(path.join(shared.root, 'a.txt'), 'a, as the copy found it\n');
    writeFileSync(path.join(shared.root, 'b.txt'), 'b\n');
    return { sys, shared, worktrees: createWorktreeSystem(sys.res, { ttlMs: TTL_MS }) };
  }

  /** A task of `isolation` that ran in its copy (changed a.txt, added c.txt, removed b.txt) and ended: the row as it ended. */
  async function ranInCopy(sys: ReturnType<typeof taskSystems>, shared: Awaited<ReturnType<typeof openWorkspace>>, id: string, isolation?: 'worktree') {
    const body: CreateTaskBody = {
      subagent_type: 'general',
      description: id,
      prompt: 'p',
      context: { parentTaskId: 'P', userId: 'u' },
      options: { isolation },
    };
    const row = newTaskRow(id, 'default', body, sys.clock.now, null, null, null);
    await sys.store.insert(row);
    await sys.store.markStarted(row, 'm', sys.clock.now);
    const copy = await enterWorktree(shared, worktreeDir(dir, id), id, sys.clock.now);
    writeFileSync(path.join(copy.root, 'a.txt'), 'a, changed in the copy\n');
    writeFileSync(path.join(copy.root, 'c.txt'), 'c\n');
    rmSync(path.join(copy.root, 'b.txt'));
    const changes = (await changesOf(worktreeDir(dir, id)))!;
    const ending = {
      status: 'completed' as const,
      summary: 'done',
      artifacts: [],
      skipped: [],
      output: null,
      stopReason: null,
      errorCode: null,
      errorMessage: null,
    };
    return sys.res.finish(row, { ...ending, worktree: { ...changes, appliedAt: null, removedAt: null } }, sys.clock.now);
  }

  it("writes a finished task's changes into the shared workspace once, then its copy is gone", async () => {
    const { sys, shared, worktrees } = await setup();
    const row = await ranInCopy(sys, shared, 't-wt', 'worktree');
    expect(row.worktree).toMatchObject({ added: ['c.txt'], modified: ['a.txt'], deleted: ['b.txt'] });
    // Before the apply: the diff, and the task's files served from its copy.
    expect(await worktrees.patch(row)).toContain('+a, changed in the copy');
    expect(await worktrees.filesRoot(row)).not.toBe(shared.root);
    expect((await worktrees.apply(row)).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(readFileSync(path.join(shared.root, 'a.txt'), 'utf8')).toBe('a, changed in the copy\n');
    expect(readFileSync(path.join(shared.root, 'c.txt'), 'utf8')).toBe('c\n');
    expect(existsSync(path.join(shared.root, 'b.txt'))).toBe(false);
    const applied = (await sys.store.getById('t-wt'))!;
    expect(applied.worktree).toMatchObject({ appliedAt: sys.clock.now, removedAt: sys.clock.now });
    expect(existsSync(worktreeDir(dir, 't-wt'))).toBe(false);
    await expect(worktrees.apply(applied)).rejects.toMatchObject({ statusCode: 409, code: 'already_applied' });
    await expect(worktrees.patch(applied)).rejects.toMatchObject({ statusCode: 410, code: 'worktree_removed' });
    expect(await worktrees.filesRoot(applied)).toBe(shared.root);
  });

  it('writes nothing when a changed file changed in the shared workspace since the copy was taken (409 conflict)', async () => {
    const { sys, shared, worktrees } = await setup();
    const row = await ranInCopy(sys, shared, 't-wt', 'worktree');
    writeFileSync(path.join(shared.root, 'a.txt'), 'a, changed by another task\n');
    await expect(worktrees.apply(row)).rejects.toMatchObject({ statusCode: 409, code: 'conflict', details: { paths: ['a.txt'] } });
    expect(readFileSync(path.join(shared.root, 'a.txt'), 'utf8')).toBe('a, changed by another task\n');
    expect(existsSync(path.join(shared.root, 'c.txt'))).toBe(false);
    expect(existsSync(path.join(shared.root, 'b.txt'))).toBe(true);
  });

  it('refuses a task that did not run in a worktree, and one that has not ended', async () => {
    const { sys, shared, worktrees } = await setup();
    const plain = await ranInCopy(sys, shared, 't-plain');
    await expect(worktrees.apply(plain)).rejects.toMatchObject({ statusCode: 409, code: 'not_a_worktree' });
    const body = { subagent_type: 'general', description: 'r', prompt: 'p', context: { parentTaskId: 'P', userId: 'u' }, options: { isolation: 'worktree' } };
    const running: TaskRow = newTaskRow('t-running', 'default', body as CreateTaskBody, sys.clock.now, null, null, null);
    await sys.store.insert(running);
    await expect(worktrees.apply(running)).rejects.toMatchObject({ statusCode: 409, code: 'task_not_finished' });
  });

  it('removes a copy WORKTREE_TTL_MS after its task ended; it can no longer be applied (410)', async () => {
    const { sys, shared, worktrees } = await setup();
    await ranInCopy(sys, shared, 't-wt', 'worktree');
    expect(await worktrees.sweep()).toBe(0);
    sys.clock.now += TTL_MS + 1;
    expect(await worktrees.sweep()).toBe(1);
    expect(existsSync(worktreeDir(dir, 't-wt'))).toBe(false);
    const row = (await sys.store.getById('t-wt'))!;
    expect(row.worktree).toMatchObject({ appliedAt: null, removedAt: sys.clock.now });
    await expect(worktrees.apply(row)).rejects.toMatchObject({ statusCode: 410, code: 'worktree_removed' });
  });

  it('records a removal before it deletes a file: a copy half removed is refused (410), and the next start removes the rest', async () => {
    const { sys, shared, worktrees } = await setup();
    const row = await ranInCopy(sys, shared, 't-wt', 'worktree');
    // A sweep of a process killed after it recorded the removal, before it deleted anything.
    const removing = { ...row.worktree!, removedAt: sys.clock.now, applying: { by: 'local#dead0000', at: sys.clock.now } };
    expect(await sys.store.updateWorktree(row.id, row.worktree!, removing)).toBe(true);
    const recorded = (await sys.store.getById(row.id))!;
    await expect(worktrees.apply(recorded)).rejects.toMatchObject({ statusCode: 410, code: 'worktree_removed' });
    await expect(worktrees.patch(recorded)).rejects.toMatchObject({ statusCode: 410, code: 'worktree_removed' });
    expect(readFileSync(path.join(shared.root, 'a.txt'), 'utf8')).toBe('a, as the copy found it\n');
    expect(existsSync(path.join(shared.root, 'b.txt'))).toBe(true);
    expect(existsSync(worktreeDir(dir, 't-wt'))).toBe(true);
    await worktrees.recover();
    expect(existsSync(worktreeDir(dir, 't-wt'))).toBe(false);
    expect((await sys.store.getById(row.id))!.worktree).toEqual({ ...row.worktree, removedAt: removing.removedAt });
  });

  it('an apply racing the sweep: applied whole, or refused (410) with nothing written; the copy gone either way', async () => {
    const { sys, shared, worktrees } = await setup();
    const row = await ranInCopy(sys, shared, 't-wt', 'worktree');
    sys.clock.now += TTL_MS + 1;
    // The apply is under way (staging) when the sweep finds the copy expired: whichever records first wins.
    const [applied, swept] = await Promise.all([worktrees.apply(row).catch((err: unknown) => err), worktrees.sweep()]);
    const a = readFileSync(path.join(shared.root, 'a.txt'), 'utf8');
    if (Array.isArray(applied)) {
      expect(applied.sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
      expect([a, existsSync(path.join(shared.root, 'b.txt')), swept]).toEqual(['a, changed in the copy\n', false, 0]);
    } else {
      expect(applied).toMatchObject({ statusCode: 410, code: 'worktree_removed' });
      expect([a, existsSync(path.join(shared.root, 'b.txt')), existsSync(path.join(shared.root, 'c.txt')), swept]).toEqual([
        'a, as the copy found it\n',
        true,
        false,
        1,
      ]);
    }
    expect(existsSync(worktreeDir(dir, 't-wt'))).toBe(false);
  });

  it('takes over a claim a dead process left before it wrote anything (SQLite: one process), and applies', async () => {
    const { sys, shared, worktrees } = await setup();
    const row = await ranInCopy(sys, shared, 't-wt', 'worktree');
    const claimed = { ...row.worktree!, applying: { by: 'local#dead0000', at: sys.clock.now } };
    expect(await sys.store.updateWorktree(row.id, row.worktree!, claimed)).toBe(true);
    expect(await worktrees.recover()).toBe(0);
    const unclaimed = (await sys.store.getById(row.id))!;
    expect(unclaimed.worktree).not.toHaveProperty('applying');
    expect((await worktrees.apply(unclaimed)).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
  });
});
