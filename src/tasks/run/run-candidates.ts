/** `options.candidates`: n attempts at once from one snapshot of the workspace, each checked by the outcome, one kept. */
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { isEndedStatus, type Artifact, type BudgetPause, type Candidate, type CreateTaskBody } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { Append } from '../../events/event-log.ts';
import { openMemory } from '../../workspace/memory.ts';
import { adoptWorktree, landFolderCopy, memoryCopyOf, taskFileUrl, worktreeDir, worktreeRoot, WorktreeError } from '../../workspace/worktree.ts';
import { endingOfAbort, failed, type Ending } from '../writes/finish-task.ts';
import { stoppedForGood, untilAborted } from './child-tool.ts';
import type { ChildTasks, RunContext, TaskRun } from './run-context.ts';
import { abortCode } from './task-abort.ts';
import { candidateKey } from './candidate-key.ts';
import { whileStorageFails } from './storage-wait.ts';
import { memoryOfTask } from './task-folders.ts';

/** How often a paused attempt (a budget, an approval) is looked at again until it ends. */
const PAUSED_POLL_MS = 1000;

/** What the selection compares of an attempt that ended. */
export type Ended = Pick<Candidate, 'taskId' | 'status' | 'outcome' | 'costMicroUsd'>;

const passedOf = (c: Ended) => c.outcome?.criteria.filter((k) => k.passed).length ?? 0;
const satisfied = (c: Ended) => c.status === 'completed' && c.outcome?.status === 'satisfied';

/**
 * `best`: among the attempts that completed, the satisfied ones first, then the most criteria
 * passed, ties the cheapest (then the first started). Null when none completed. The reason says
 * why, for `candidate.selected`.
 */
export function pickBest(ended: Ended[]): { taskId: string; reason: string } | null {
  const ranked = ended
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => c.status === 'completed')
    .sort((a, b) => Number(satisfied(b.c)) - Number(satisfied(a.c)) || passedOf(b.c) - passedOf(a.c) || a.c.costMicroUsd - b.c.costMicroUsd || a.i - b.i);
  const top = ranked[0]?.c;
  if (!top) return null;
  const total = top.outcome?.criteria.length ?? 0;
  const tied = ranked.filter(({ c }) => satisfied(c) === satisfied(top) && passedOf(c) === passedOf(top)).length;
  const why = `${satisfied(top) ? 'satisfied, ' : 'none satisfied: '}most criteria passed (${passedOf(top)} of ${total})`;
  return { taskId: top.taskId, reason: tied > 1 ? `${why}, the cheapest of ${tied}` : why };
}

/** The body of attempt `i`: the task's own, without candidates or a budget of its own (the task's counts them all), on its model. */
export function candidateBody(body: CreateTaskBody, model: string | undefined): CreateTaskBody {
  const { candidates: _, budget: __, ...options } = body.options ?? {};
  return { ...body, options: { ...options, isolation: 'worktree', ...(model !== undefined && { model }) } };
}

/**
 * Runs a task with candidates (task-runner.ts took its copy of the workspace: the snapshot). Its
 * attempts are child tasks started in the background, each on a copy of the snapshot made before it
 * is queued, found again by their place after a crash or a takeover (nothing starts twice); the task
 * lends its slot while it waits. Each attempt that ends is recorded with `candidate.finished`;
 * `first_satisfied` keeps the first satisfied one and cancels the others, `best` waits for all and
 * keeps the best (pickBest). The kept attempt's copy becomes the task's, and its summary, output,
 * artifacts and outcome the task's. A cancel, a timeout or the task's end stops the attempts.
 */
export async function runCandidates(ctx: RunContext, run: TaskRun & { model: string | null }): Promise<Ending | { pause: BudgetPause }> {
  const { deps } = ctx;
  const { row, body, signal } = run;
  const spec = body.options!.candidates!;
  const children = deps.children;
  if (!children) return failed('internal_error', 'this service starts no child tasks');
  const tenantDir = deps.workspacesDirOf(row.tenant);
  let list: Candidate[] = row.candidates ?? [];
  /** The list stored with the events that report it, one transaction. */
  const write = (events: (append: Append) => void) =>
    ctx.writes.owned(row, async (s, append) => {
      await s.setCandidates(row.id, list);
      events(append);
    });

  // The attempts' watches stop with the run, however it ends (a pause, an end, a failed write):
  // none reads on after it, nor after the database has closed.
  const done = new AbortController();
  const watchUntil = AbortSignal.any([signal, done.signal]);
  children.waiting(row.id, true);
  try {
    if (!list.some((c) => c.selected)) {
      const started = await startAll(ctx, children, run);
      if ('error' in started) return started.error;
      const known = new Set(list.map((c) => c.taskId));
      const fresh = started.rows.filter(({ child }) => !known.has(child.id));
      if (fresh.length > 0) {
        list = [...list, ...fresh.map(({ child, model }) => entry(child, model))];
        await write((append) => {
          for (const { child, model, index } of fresh) append(row, 'candidate.started', { taskId: child.id, model, index });
        });
      }
    }

    // Each attempt's next change, looked for once: its end, or a pause at a budget (`held` then: it
    // waits on a resume of the task). Those that ended before a crash are reported now.
    const watching = new Map<string, Promise<TaskRow>>();
    const held = new Map<string, BudgetPause>();
    const watch = (id: string) => {
      const next = nextOf(children, id, held.has(id), watchUntil);
      // Its failure is seen by the loop's next race; until then it is not the process's unhandled rejection.
      next.catch(() => undefined);
      watching.set(id, next);
    };
    for (const c of list) if (!isEndedStatus(c.status)) watch(c.taskId);
    let chosen = list.find((c) => c.selected) ?? null;
    if (chosen) await cancelOthers(children, row, list, chosen.taskId);
    /** An attempt ended: recorded, and kept at once by `first_satisfied` when satisfied (the others cancelled). */
    const ended = async (next: TaskRow) => {
      list = list.map((c) => (c.taskId === next.id ? { ...c, ...seen(next, c.model) } : c));
      const now = list.find((c) => c.taskId === next.id)!;
      const selectNow = !chosen && spec.pick === 'first_satisfied' && satisfied(now);
      if (selectNow) list = list.map((c) => ({ ...c, selected: c.taskId === now.taskId }));
      await write((append) => {
        append(row, 'candidate.finished', {
          taskId: now.taskId,
          status: now.status as 'completed' | 'aborted' | 'error',
          outcome: now.outcome,
          costMicroUsd: now.costMicroUsd,
        });
        if (selectNow) append(row, 'candidate.selected', { taskId: now.taskId, reason: 'first satisfied' });
      });
      if (!selectNow) return chosen;
      await cancelOthers(children, row, list, now.taskId);
      return now;
    };
    while (watching.size > 0) {
      const next = await untilAborted(Promise.race([...watching.values()]), signal);
      if (!next) break;
      watching.delete(next.id);
      if (!isEndedStatus(next.status)) {
        // Paused at a budget: resumed at once when none holds it any more (the task was resumed
        // with a raised one), else held. No longer paused at one: it runs (or waits on an approval).
        if (atBudget(next) && !(await children.resume(row.tenant, next.id))) held.set(next.id, next.pause as BudgetPause);
        else held.delete(next.id);
        watch(next.id);
      } else {
        chosen = await ended(next);
      }
      if (!chosen && held.size > 0 && held.size === watching.size) {
        // Every attempt that has not ended waits on a budget: so does the task, freeing its slot,
        // until the caller raises the budget (its resume resumes them) or it expires.
        list = list.map((c) => (held.has(c.taskId) ? { ...c, status: 'paused' as const } : c));
        await write(() => {});
        return { pause: pauseOf(row, held) };
      }
    }
    if (signal.aborted) {
      // Stopped by someone (a cancel, a timeout): its attempts go too. At a shutdown or a lost lease
      // they run on, and the resumed task finds them again.
      if (stoppedForGood(signal)) await stopAll(children, row, list, abortCode(signal).message);
      return endingOfAbort(abortCode(signal));
    }

    if (!chosen) {
      const best = pickBest(list);
      if (!best) {
        return failed('no_candidate', `none of the ${list.length} attempts completed (${list.map((c) => `${c.taskId}: ${c.status}`).join(', ')})`);
      }
      list = list.map((c) => ({ ...c, selected: c.taskId === best.taskId }));
      await write((append) => append(row, 'candidate.selected', best));
      chosen = list.find((c) => c.selected)!;
    }
    return await keep(ctx, row, chosen, tenantDir);
  } finally {
    done.abort();
    children.waiting(row.id, false);
  }
}

/** A new entry of the list: the attempt as just started. */
const entry = (child: TaskRow, model: string | null): Candidate => ({
  taskId: child.id,
  ...seen(child, model),
  selected: false,
});

/** What the list keeps of an attempt as it is now. */
const seen = (child: TaskRow, model: string | null) => ({
  model: child.model ?? model,
  status: child.status,
  outcome: isEndedStatus(child.status) ? child.outcome : null,
  costMicroUsd: child.costMicroUsd,
});

/**
 * Starts (or, resumed, finds by their place) the n attempts; each clones the snapshot when it
 * starts (task-runner.ts). While the database cannot be written (PostgreSQL restarting or
 * failing over) each waits for it, as the task's own writes do; a stop meanwhile ends the task as stopped.
 */
async function startAll(
  ctx: RunContext,
  children: ChildTasks,
  run: TaskRun & { model: string | null },
): Promise<{ rows: Array<{ child: TaskRow; model: string | null; index: number }> } | { error: Ending }> {
  const { row, body, signal } = run;
  const spec = body.options!.candidates!;
  const rows: Array<{ child: TaskRow; model: string | null; index: number }> = [];
  /**
   * Stopped while the attempts were being started. A cancel or a timeout stops them as it would
   * once they run: those started, and the one whose start was under way once it is stored. At a
   * shutdown or a lost lease they are left: the resumed task finds them again by their place, and
   * a task that ends stops them as its background children.
   */
  const stopped = async (underWay?: Promise<TaskRow | null>): Promise<{ error: Ending }> => {
    const why = abortCode(signal);
    if (stoppedForGood(signal)) {
      const stop = (started: Array<{ child: TaskRow; model: string | null }>) =>
        stopAll(
          children,
          row,
          started.map(({ child, model }) => entry(child, model)),
          why.message,
        );
      await stop(rows);
      void underWay?.then((child) => child && stop([{ child, model: null }])).catch(() => undefined);
    }
    return { error: endingOfAbort(why) };
  };
  try {
    for (let index = 0; index < spec.n; index++) {
      if (signal.aborted) return await stopped();
      const assigned = spec.models?.[index % spec.models.length];
      const key = candidateKey(row.id, index);
      const starting = whileStorageFails(ctx.deps, row.id, signal, 'the attempts wait: the service cannot store them now', () =>
        children.start(row, candidateBody(body, assigned), {
          key,
          callKey: key,
          background: true,
          // It stands in for its task: it may nest as deep as the task could have.
          maxDepth: row.maxDepth > 0 ? row.maxDepth + 1 : 0,
        }),
      );
      // A stop does not wait for a statement under way (a database away takes seconds to answer).
      const child = await untilAborted(starting, signal);
      if (!child) return await stopped(starting);
      rows.push({ child, model: assigned ?? run.model, index });
    }
    return { rows };
  } catch (err) {
    // Stopped meanwhile (a service shutting down refuses new tasks): the stop is what ends it.
    if (signal.aborted) return await stopped();
    // Nothing is compared unless all started: those that did are stopped.
    await Promise.all(
      rows.map(({ child }) =>
        children.cancel(row.tenant, child.id, { code: 'parent_ended', message: `its task ${row.id} could not start its attempts` }).catch(() => undefined),
      ),
    );
    const message = err instanceof WorktreeError ? err.message : ctx.scrub(err instanceof Error ? err.message : String(err));
    return { error: failed(err instanceof WorktreeError ? err.code : 'candidates_failed', `the attempts could not be started: ${message}`) };
  }
}

/** Is the attempt paused at a budget (not an approval's)? */
const atBudget = (row: TaskRow) => row.status === 'paused' && row.pause?.reason === 'budget';

/**
 * Resolves with the attempt once it ended, or once it is paused at a budget (`held` false) or no
 * longer paused at one (`held` true); a pause for an approval is looked at again until it changes.
 * Never resolves once `signal` aborts.
 */
async function nextOf(children: ChildTasks, id: string, held: boolean, signal: AbortSignal): Promise<TaskRow> {
  for (;;) {
    const row = await untilAborted(children.ended(id), signal);
    if (!row) return new Promise<TaskRow>(() => {}); // never: the loop's own wait sees the abort
    if (isEndedStatus(row.status) || atBudget(row) !== held) return row;
    await sleep(PAUSED_POLL_MS, undefined, { signal }).catch(() => undefined);
  }
}

/**
 * The task's pause while its attempts wait on a budget: the first held attempt's, naming them all;
 * the task's own budget is not named as an ancestor's.
 */
function pauseOf(row: TaskRow, held: Map<string, BudgetPause>): BudgetPause {
  const { task, ...first } = [...held.values()][0];
  return { ...first, ...(task !== undefined && task !== row.id && { task }), attempts: [...held.keys()] };
}

/** Cancels the attempts that have not ended, but `keep`. */
async function cancelOthers(children: ChildTasks, row: TaskRow, list: Candidate[], keep: string): Promise<void> {
  const others = list.filter((c) => c.taskId !== keep && !isEndedStatus(c.status));
  await Promise.all(
    others.map((c) =>
      children
        .cancel(row.tenant, c.taskId, { code: 'cancelled', message: `another attempt of task ${row.id}, ${keep}, was satisfied first` })
        .catch(() => undefined),
    ),
  );
}

/** Stops every attempt that has not ended: its task was cancelled or timed out. */
async function stopAll(children: ChildTasks, row: TaskRow, list: Candidate[], why: string): Promise<void> {
  await Promise.all(
    list
      .filter((c) => !isEndedStatus(c.status))
      .map((c) => children.cancel(row.tenant, c.taskId, { code: 'cancelled', message: `its task ${row.id} was stopped: ${why}` }).catch(() => undefined)),
  );
}

/**
 * The kept attempt's copy becomes the task's (its changes are then the task's, applied by POST
 * /tasks/:id/apply), its artifacts are served from there; its summary, output and outcome are the task's.
 */
async function keep(ctx: RunContext, row: TaskRow, chosen: Candidate, tenantDir: string): Promise<Ending> {
  const { deps } = ctx;
  const child = (await deps.store.getById(chosen.taskId))!;
  const own = worktreeDir(tenantDir, row.id);
  try {
    await adoptWorktree(worktreeDir(tenantDir, child.id), own);
  } catch (err) {
    if (!(err instanceof WorktreeError)) throw err;
    return failed(err.code, `the kept attempt's changes are lost: ${err.message}`);
  }
  if (child.worktree && child.worktree.removedAt === null) {
    await deps.store.updateWorktree(child.id, child.worktree, { ...child.worktree, removedAt: deps.now() });
  }
  // Its memory writes, made in its own copy of the memory (task-folders.ts), land now, all or
  // nothing; the other attempts' copies go with their worktrees, never reaching the memory.
  const def = deps.registry.get(child.subagentType);
  const memory = def?.kind === 'model' ? memoryOfTask(child, def) : null;
  if (memory) await landFolderCopy(await openMemory(tenantDir, memory), memoryCopyOf(worktreeDir(tenantDir, child.id)));
  const root = await worktreeRoot(own);
  const artifacts = (child.artifacts ?? []).map((a: Artifact): Artifact => ({
    ...a,
    ...(root && { path: path.join(root, a.relativePath) }),
    url: taskFileUrl(row.id, a.relativePath),
  }));
  if (child.outcome) {
    const outcome = child.outcome;
    await ctx.writes.owned(row, (s) => s.setOutcome(row.id, outcome));
  }
  return {
    status: 'completed',
    summary: child.summary,
    artifacts,
    skipped: child.skipped ?? [],
    output: child.output ?? null,
    stopReason: child.stopReason,
    errorCode: null,
    errorMessage: null,
    model: child.model,
  };
}
