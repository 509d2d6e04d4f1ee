import { AppError } from '../errors/app-error.ts';
import type { WorktreeState } from '../shapes/task.ts';
import type { TaskRow } from '../store/schema.ts';
import { PathError } from '../workspace/path-guard.ts';
import { openWorkspace } from '../workspace/workspace.ts';
import { applyChanges, conflictsOf, patchOf, removeWorktree, worktreeDir, worktreeRoot } from '../workspace/worktree.ts';
import type { TaskResources } from './task-resources.ts';

/** How often the copies of worktree tasks past WORKTREE_TTL_MS are looked for. */
const SWEEP_MS = 10 * 60_000;
const SWEEP_BATCH = 100;

/**
 * Worktree tasks after their end (workspace/worktree.ts does the files): `apply` writes a task's
 * changes into the shared workspace, once, refusing when a changed file moved there since the
 * copy was taken; `patch` is their unified diff; `filesRoot` serves a task's artifacts from its
 * copy; a sweep removes copies WORKTREE_TTL_MS after their task ended.
 */
export function createWorktreeSystem(res: TaskResources, opts: { ttlMs: number }) {
  const { deps } = res;
  /** Applies in progress here, by parent workspace: one at a time per workspace. */
  const applying = new Map<string, Promise<unknown>>();
  let timer: NodeJS.Timeout | null = null;

  const dirOf = (row: TaskRow) => worktreeDir(deps.workspacesDirOf(row.tenant), row.id);

  /** A finished worktree task's changes, or the contract's refusal. */
  function ended(row: TaskRow): WorktreeState {
    if (row.request.options?.isolation !== 'worktree') {
      throw new AppError(409, 'not_a_worktree', `task ${row.id} did not run with options.isolation "worktree": it has no changes to apply`);
    }
    if (!row.worktree) {
      if (row.status === 'queued' || row.status === 'running' || row.status === 'paused') {
        throw new AppError(409, 'task_not_finished', `task ${row.id} is ${row.status}: its changes are known once it ends`);
      }
      throw new AppError(409, 'no_changes', `task ${row.id} ended (${row.status}) before it took its copy of the workspace: it has no changes`);
    }
    return row.worktree;
  }

  async function applyOnce(row: TaskRow): Promise<string[]> {
    const state = ended(row);
    if (state.appliedAt !== null)
      throw new AppError(409, 'already_applied', `the changes of task ${row.id} were applied at ${new Date(state.appliedAt).toISOString()}`);
    const dir = dirOf(row);
    if (state.removedAt !== null || !(await worktreeRoot(dir))) {
      throw new AppError(410, 'worktree_removed', `the copy of task ${row.id} was removed (WORKTREE_TTL_MS after its end); nothing can be applied`);
    }
    const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
    const conflicts = await conflictsOf(shared.root, dir, state);
    if (conflicts.length > 0) {
      throw new AppError(409, 'conflict', `${conflicts.length} changed file(s) changed in the shared workspace since the copy was taken; nothing was written`, {
        paths: conflicts,
      });
    }
    // Claimed in the database first (compare and set), so two instances never both write.
    const now = deps.now();
    if (!(await deps.store.updateWorktree(row.id, state, { ...state, appliedAt: now, removedAt: now }))) {
      throw new AppError(409, 'already_applied', `the changes of task ${row.id} were applied meanwhile`);
    }
    let applied: string[];
    try {
      applied = await applyChanges(shared.root, dir, state);
    } catch (err) {
      // Not applied after all (a disk error, a folder put where a file was): the claim goes. The
      // files written before the failure are in the shared workspace; applying again names them
      // as conflicts (their marks moved), so nothing is written twice without the caller knowing.
      await deps.store.updateWorktree(row.id, { ...state, appliedAt: now, removedAt: now }, state).catch(() => {});
      // A path that can no longer be written (a folder, or a link leading out, took its place): a conflict, never a 5xx.
      if (err instanceof PathError) {
        const path = (err as PathError & { path?: string }).path;
        throw new AppError(409, 'conflict', `a changed path cannot be written: ${err.message}`, { paths: path ? [path] : [] });
      }
      throw err;
    }
    await removeWorktree(dir);
    deps.logger.info({ taskId: row.id, applied: applied.length }, 'worktree changes applied');
    return applied;
  }

  /** Removes the copies of tasks that ended WORKTREE_TTL_MS ago, a batch at a time. */
  async function sweep(): Promise<number> {
    let removed = 0;
    for (;;) {
      const now = deps.now();
      const rows = await deps.store.worktreesEndedBefore(now - opts.ttlMs, SWEEP_BATCH);
      for (const row of rows) {
        await removeWorktree(dirOf(row));
        if (row.worktree) await deps.store.updateWorktree(row.id, row.worktree, { ...row.worktree, removedAt: now });
        removed++;
      }
      if (rows.length < SWEEP_BATCH) return removed;
    }
  }

  return {
    /** Writes a finished worktree task's changes into the shared workspace; the paths written or removed. */
    async apply(row: TaskRow): Promise<string[]> {
      const key = `${row.tenant}\0${row.parentTaskId}`;
      const before = applying.get(key) ?? Promise.resolve();
      const mine = before.catch(() => {}).then(async () => applyOnce((await deps.store.getById(row.id)) ?? row));
      applying.set(key, mine);
      try {
        return await mine;
      } finally {
        if (applying.get(key) === mine) applying.delete(key);
      }
    },

    /** The unified diff of a finished worktree task's changes against the shared workspace as it is now. */
    async patch(row: TaskRow): Promise<string> {
      const state = ended(row);
      const dir = dirOf(row);
      if (state.removedAt !== null || !(await worktreeRoot(dir))) {
        throw new AppError(410, 'worktree_removed', `the copy of task ${row.id} was removed (applied, or WORKTREE_TTL_MS after its end)`);
      }
      const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
      return patchOf(shared.root, dir, state);
    },

    /** Where a task's files are served from: its copy while there is one, else its shared workspace (applied there). */
    async filesRoot(row: TaskRow): Promise<string | null> {
      if (row.request.options?.isolation === 'worktree') {
        const copy = await worktreeRoot(dirOf(row));
        if (copy) return copy;
      }
      return (await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId)).root;
    },

    sweep,

    start(): void {
      const run = () => void sweep().catch((err: unknown) => deps.logger.error({ err }, 'could not remove expired worktree copies; retrying'));
      timer = setInterval(run, Math.min(SWEEP_MS, Math.max(1000, opts.ttlMs)));
      timer.unref();
    },

    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

export type WorktreeSystem = ReturnType<typeof createWorktreeSystem>;
