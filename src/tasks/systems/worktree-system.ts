import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../errors/app-error.ts';
import { isEndedStatus, type WorktreeState } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { commitJournal, readJournal, replayJournal, stageJournal } from '../../workspace/apply-journal.ts';
import { PathError } from '../../workspace/path-guard.ts';
import { openWorkspace } from '../../workspace/workspace.ts';
import { conflictsOf, journalDirOf, patchOf, removeWorktree, stagingDirOf, worktreeDir, worktreeRoot } from '../../workspace/worktree.ts';
import { createTicker } from '../../util/ticker.ts';
import { candidateOf } from '../run/candidate-key.ts';
import type { TaskResources } from './task-resources.ts';

/** How often the copies of worktree tasks past WORKTREE_TTL_MS are looked for. */
const SWEEP_MS = 10 * 60_000;
const SWEEP_BATCH = 100;
/** A claim on an apply not renewed for this long is a dead instance's (PostgreSQL); it is renewed every third of it. */
const APPLY_LEASE_MS = 30_000;

/** Who claimed a task's apply (`<instance>#<process nonce>`) and when it last said so. */
interface Applying {
  by: string;
  at: number;
}
/**
 * The stored state while an apply is claimed: `applying` rides along in the task's worktree JSON
 * (the TaskOutput never shows it), so that a restart, or another instance, finds the apply.
 */
type Claimed = WorktreeState & { applying?: Applying };
const unclaimed = ({ applying: _, ...state }: Claimed): WorktreeState => state;

/**
 * Worktree tasks after their end (workspace/worktree.ts does the files): `apply` writes a task's
 * changes into the shared workspace, once, refusing when a changed file moved there since the
 * copy was taken; `patch` is their unified diff; `filesRoot` serves a task's artifacts from its
 * copy; a sweep removes copies WORKTREE_TTL_MS after their task ended (an attempt of a task with
 * candidates: not before that task ended too).
 *
 * An apply is crash-safe (workspace/apply-journal.ts): its journal is committed before the first
 * shared file is written, `appliedAt` is set only once every file is in place, and an apply a
 * killed process left is finished at the next start, by the sweep, or before any later apply,
 * diff or file of that task is served. Several instances may find the same apply: a claim in the
 * task's row (renewed while it runs) lets one finish it at a time.
 */
export function createWorktreeSystem(res: TaskResources, opts: { ttlMs: number }) {
  const { deps } = res;
  const instancePrefix = `${res.cluster?.instanceId ?? 'local'}#`;
  /** This process (a restarted instance keeps its id, not its nonce). */
  const me = `${instancePrefix}${randomBytes(4).toString('hex')}`;
  /** Applies in progress here, by parent workspace: one at a time per workspace. */
  const applying = new Map<string, Promise<unknown>>();
  const ticker = createTicker({
    everyMs: Math.min(SWEEP_MS, Math.max(1000, opts.ttlMs)),
    tick: () => void sweepExpired().catch((err: unknown) => deps.logger.error({ err }, 'could not remove expired worktree copies; retrying')),
  });

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

  /** Runs `fn` after the applies of the same workspace that came before it on this instance. */
  async function inTurn<T>(row: TaskRow, fn: () => Promise<T>): Promise<T> {
    const key = `${row.tenant}\0${row.parentTaskId}`;
    const before = applying.get(key) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(fn);
    applying.set(key, mine);
    try {
      return await mine;
    } finally {
      if (applying.get(key) === mine) applying.delete(key);
    }
  }

  const removedCopy = (row: TaskRow) =>
    new AppError(410, 'worktree_removed', `the copy of task ${row.id} was removed (applied, or WORKTREE_TTL_MS after its end)`);
  const alreadyApplied = (row: TaskRow, at: number) =>
    new AppError(409, 'already_applied', `the changes of task ${row.id} were applied at ${new Date(at).toISOString()}`);
  const beingApplied = (row: TaskRow) => new AppError(409, 'already_applied', `the changes of task ${row.id} are being applied by another request`);

  /** The answer to a request that did not finish the apply itself: applied already, or being applied elsewhere. */
  async function notMine(row: TaskRow): Promise<never> {
    const now = ((await deps.store.getById(row.id)) ?? row).worktree;
    if (now?.appliedAt) throw alreadyApplied(row, now.appliedAt);
    // The sweep recorded the copy's removal first: as removed as if the request had come after.
    throw now?.removedAt ? removedCopy(row) : beingApplied(row);
  }

  /** On SQLite one process runs: any claim not its own is a dead one's; on PostgreSQL, one of an earlier start of this instance or one not renewed. */
  const isStale = (held: Applying) => held.by !== me && (!res.cluster || held.by.startsWith(instancePrefix) || deps.now() - held.at > APPLY_LEASE_MS);

  /**
   * Takes (or renews) this instance's claim on a task's apply: none held, a stale one, or its own.
   * The stored state with the claim, or why not: `applied` (done already), `busy` (another instance
   * holds a live claim).
   */
  async function claim(id: string): Promise<Claimed | 'applied' | 'busy'> {
    for (;;) {
      const state: Claimed | null | undefined = (await deps.store.getById(id))?.worktree;
      if (!state || state.appliedAt !== null) return 'applied';
      if (state.applying && state.applying.by !== me && !isStale(state.applying)) return 'busy';
      const next: Claimed = { ...state, applying: { by: me, at: deps.now() } };
      if (await deps.store.updateWorktree(id, state, next)) return next;
    }
  }

  /**
   * Finishes the apply of a task whose journal was committed (apply-journal.ts): every change
   * brought to its after state, then `appliedAt` recorded, then the copy and the journal removed.
   * Null when there is nothing for this instance to finish: applied already, claimed by a live
   * instance, or claimed but its journal never committed (nothing was written; the claim goes).
   */
  async function settle(row: TaskRow): Promise<{ applied: string[] } | null> {
    const dir = dirOf(row);
    const taken = await claim(row.id);
    if (typeof taken === 'string') return null;
    let held: Claimed = taken;
    const journal = await readJournal(journalDirOf(dir));
    if (!journal) {
      await deps.store.updateWorktree(row.id, held, unclaimed(held));
      return null;
    }
    const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
    // The claim is renewed while the replay runs, so that no other instance takes it over.
    let lost = false;
    let renewing: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      renewing = renewing.then(async () => {
        const next: Claimed = { ...held, applying: { by: me, at: deps.now() } };
        if (await deps.store.updateWorktree(row.id, held, next)) held = next;
        else lost = true;
      });
    }, APPLY_LEASE_MS / 3);
    let result: { applied: string[]; kept: string[] };
    try {
      result = await replayJournal({ sharedRoot: shared.root, journalDir: journalDirOf(dir), journal, stopped: () => lost });
    } finally {
      clearInterval(timer);
      await renewing.catch(() => {});
    }
    // Only now, with every file in place, is the apply recorded; the claim stays until the journal
    // and the copy are gone, so that a start after a kill here still finds what to remove.
    const applied: Claimed = { ...held, appliedAt: deps.now() };
    if (!(await deps.store.updateWorktree(row.id, held, applied))) return null;
    await cleanUp(row, applied);
    if (result.kept.length > 0) {
      deps.logger.warn({ taskId: row.id, kept: result.kept }, 'worktree apply: paths changed in the shared workspace meanwhile were kept as they are');
    }
    deps.logger.info({ taskId: row.id, applied: result.applied.length }, 'worktree changes applied');
    return { applied: result.applied };
  }

  /** Removes what an apply recorded as done left (its journal, stagings, the copy), then its claim. */
  async function cleanUp(row: TaskRow, state: Claimed): Promise<void> {
    await removeWorktree(dirOf(row));
    await deps.store.updateWorktree(row.id, state, { ...unclaimed(state), removedAt: state.removedAt ?? deps.now() });
  }

  /** True when an apply of the task was claimed or committed and is not recorded as done. */
  async function pending(row: TaskRow): Promise<boolean> {
    const state: Claimed | null | undefined = row.worktree;
    // A copy being removed (see `expire`) has nothing to apply.
    if (!state || state.appliedAt !== null || state.removedAt !== null) return false;
    return state.applying !== undefined || (await readJournal(journalDirOf(dirOf(row))).catch(() => null)) !== null;
  }

  /** The task once a pending apply of it is finished: its changes are read after that. */
  async function settled(row: TaskRow): Promise<TaskRow> {
    if (!(await pending(row))) return row;
    await inTurn(row, () => settle(row));
    return (await deps.store.getById(row.id)) ?? row;
  }

  async function applyOnce(row: TaskRow): Promise<string[]> {
    let state = ended(row) as Claimed;
    if (state.appliedAt !== null) throw alreadyApplied(row, state.appliedAt);
    const dir = dirOf(row);
    if (await pending(row)) {
      // An apply cut short (or running on another instance) is finished first; this request
      // answers 200 when it is the one that finished it.
      const done = await settle(row);
      if (done) return done.applied;
      const now = ((await deps.store.getById(row.id)) ?? row).worktree as Claimed;
      if (now.appliedAt !== null || now.applying) return notMine(row);
      state = now;
    }
    const copyRoot = state.removedAt === null ? await worktreeRoot(dir) : null;
    if (!copyRoot) {
      throw (
        (await keptBy(row)) ??
        new AppError(410, 'worktree_removed', `the copy of task ${row.id} was removed (WORKTREE_TTL_MS after its end); nothing can be applied`)
      );
    }
    const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
    const conflicts = await conflictsOf(shared.root, dir, state);
    if (conflicts.length > 0) {
      throw new AppError(409, 'conflict', `${conflicts.length} changed file(s) changed in the shared workspace since the copy was taken; nothing was written`, {
        paths: conflicts,
      });
    }
    // The journal is built aside; nothing of the shared workspace is touched yet.
    const staging = path.join(stagingDirOf(dir), randomBytes(6).toString('hex'));
    try {
      await stageJournal({ sharedRoot: shared.root, copyRoot, changes: state, into: staging });
    } catch (err) {
      await rm(staging, { recursive: true, force: true }).catch(() => {});
      // A path that can no longer be read (a folder, or a link leading out, took its place): a conflict, never a 5xx.
      if (err instanceof PathError) {
        const p = (err as PathError & { path?: string }).path;
        throw new AppError(409, 'conflict', `a changed path cannot be written: ${err.message}`, { paths: p ? [p] : [] });
      }
      throw err;
    }
    // Claimed in the database (compare and set: two instances never both commit), then committed on
    // disk: from the rename on, the apply happens, whatever kills this process.
    if (!(await deps.store.updateWorktree(row.id, state, { ...state, applying: { by: me, at: deps.now() } } as Claimed))) {
      await rm(staging, { recursive: true, force: true });
      return notMine(row);
    }
    await commitJournal(staging, journalDirOf(dir));
    return (await settle(row))?.applied ?? notMine(row);
  }

  /** Finishes the applies a killed process left (every one on SQLite; on PostgreSQL this instance's, or those not renewed). */
  async function recover(): Promise<number> {
    let finished = 0;
    const seen = new Set<string>();
    for (;;) {
      const rows = (await deps.store.worktreesApplying(SWEEP_BATCH + seen.size)).filter((r) => !seen.has(r.id));
      if (rows.length === 0) return finished;
      for (const row of rows) {
        seen.add(row.id);
        const state = row.worktree as Claimed;
        if (state.appliedAt !== null || state.removedAt !== null) await inTurn(row, () => cleanUp(row, state));
        else if (await inTurn(row, () => settle(row))) finished++;
      }
    }
  }

  /**
   * True for an attempt of a task with candidates that has not ended: the task may still keep that
   * attempt's copy (run-candidates.ts), so it stays whatever the time since the attempt ended.
   */
  async function keptForItsTask(row: TaskRow): Promise<boolean> {
    const task = candidateOf(row);
    if (!task) return false;
    const owner = await deps.store.getById(task);
    return owner !== undefined && owner !== null && !isEndedStatus(owner.status);
  }

  /** The refusal for the kept attempt of a task with candidates: its copy became its task's, applied and diffed there. */
  async function keptBy(row: TaskRow): Promise<AppError | null> {
    const task = candidateOf(row);
    const owner = task ? await deps.store.getById(task) : null;
    if (!owner?.candidates?.some((c) => c.selected && c.taskId === row.id)) return null;
    return new AppError(
      410,
      'worktree_removed',
      `the copy of task ${row.id} was kept by its task ${owner.id} and moved there: apply or diff task ${owner.id} (POST /tasks/${owner.id}/apply)`,
    );
  }

  /**
   * Removes an expired copy: first recorded as removed, with a claim (compare and set against the
   * state the sweep read, so an apply claimed meanwhile wins and the copy stays), then its files,
   * then the claim. From the record on, an apply's own claim fails and a diff read meanwhile is
   * refused: neither is made of a copy half removed. A kill in between leaves the claim, and
   * `recover` removes the rest. False when an apply got there first.
   */
  async function expire(row: TaskRow): Promise<boolean> {
    const state = row.worktree;
    if (!state) return true;
    const marked: Claimed = { ...state, removedAt: deps.now(), applying: { by: me, at: deps.now() } };
    if (!(await deps.store.updateWorktree(row.id, state, marked))) return false;
    await inTurn(row, () => cleanUp(row, marked));
    return true;
  }

  /** Removals of expired copies in flight in this process, whichever sweep began them (the ticker's or a caller's). */
  const removing = new Set<Promise<unknown>>();

  /** Removes the copies of tasks that ended WORKTREE_TTL_MS ago, a batch at a time; a pending apply is finished instead. */
  async function sweepExpired(): Promise<number> {
    let removed = 0;
    const busy = new Set<string>();
    for (;;) {
      const now = deps.now();
      const rows = (await deps.store.worktreesEndedBefore(now - opts.ttlMs, SWEEP_BATCH + busy.size)).filter((r) => !busy.has(r.id));
      for (const row of rows) {
        if (await pending(row)) {
          // Its journal holds what the apply writes: finished, not removed.
          if (!(await inTurn(row, () => settle(row)))) busy.add(row.id);
          continue;
        }
        if (await keptForItsTask(row)) {
          busy.add(row.id);
          continue;
        }
        const removal = expire(row);
        removing.add(removal);
        if (!(await removal.finally(() => removing.delete(removal)))) {
          busy.add(row.id);
          continue;
        }
        removed++;
      }
      if (rows.length < SWEEP_BATCH) return removed;
    }
  }

  /**
   * `sweepExpired`, answering only once the removals that other sweeps of this process began and
   * that were still in flight have ended too (done or failed): a copy another sweep claimed first
   * is then no longer being deleted. Another instance's removals are not waited for. The ticker
   * does not wait so: a removal that hangs holds no tick.
   */
  async function sweep(): Promise<number> {
    const removed = await sweepExpired();
    await Promise.allSettled([...removing]);
    return removed;
  }

  return {
    /** Writes a finished worktree task's changes into the shared workspace; the paths written or removed. */
    async apply(row: TaskRow): Promise<string[]> {
      return inTurn(row, async () => applyOnce((await deps.store.getById(row.id)) ?? row));
    },

    /** The unified diff of a finished worktree task's changes against the shared workspace as it is now. */
    async patch(row: TaskRow): Promise<string> {
      row = await settled(row);
      const state = ended(row);
      const dir = dirOf(row);
      if (state.appliedAt !== null || state.removedAt !== null || !(await worktreeRoot(dir))) {
        if (state.appliedAt === null) {
          const kept = await keptBy(row);
          if (kept) throw kept;
        }
        throw removedCopy(row);
      }
      const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
      const patch = await patchOf(shared.root, dir, state);
      // Removed while it was read (the sweep records a removal before it deletes a file): refused,
      // rather than a diff that shows the copy's files as deleted.
      if ((await deps.store.getById(row.id))?.worktree?.removedAt !== null) throw removedCopy(row);
      return patch;
    },

    /** Where a task's files are served from: its copy while there is one, else its shared workspace (applied there). */
    async filesRoot(row: TaskRow): Promise<string | null> {
      row = await settled(row);
      if (row.request.options?.isolation === 'worktree' && !row.worktree?.appliedAt) {
        const copy = await worktreeRoot(dirOf(row));
        if (copy) return copy;
      }
      return (await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId)).root;
    },

    sweep,

    /** Finishes the applies a killed process left (run at start). */
    recover,

    start(): void {
      void recover().then(
        (finished) => finished > 0 && deps.logger.info({ finished }, 'finished worktree applies a previous process left'),
        (err: unknown) => deps.logger.error({ err }, 'could not finish the worktree applies a previous process left; the sweep retries'),
      );
      ticker.start();
    },

    stop: ticker.stop,
  };
}

export type WorktreeSystem = ReturnType<typeof createWorktreeSystem>;
