import type { Logger } from 'pino';
import { errorMessage } from '../../loop/run-agent.ts';
import { usageOf, type Pause, type WorktreeState } from '../../shapes/task.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import { storageFaultOf } from '../../store/storage-guard.ts';
import { TaskTakenOver } from '../../store/task-store.ts';
import { PathError } from '../../workspace/path-guard.ts';
import { enterFolder, openWorkspace } from '../../workspace/workspace.ts';
import { changesOf, cloneWorktree, enterWorktree, removeWorktree, worktreeDir, WorktreeError } from '../../workspace/worktree.ts';
import { failed, type Ending } from '../writes/finish-task.ts';
import { compareReplay } from './replay-comparison.ts';
import { createRunContext, type RunContext, type RunnerDeps, type TaskRun } from './run-context.ts';
import { candidateOf } from './candidate-key.ts';
import { runCandidates } from './run-candidates.ts';
import { runExternal } from './run-external.ts';
import { runModel } from './run-model.ts';
import { runShell } from './run-shell.ts';
import { openTaskFolders, type TaskFolders } from './task-folders.ts';
import { abortCode } from './task-abort.ts';

export type { RunnerDeps } from './run-context.ts';

export interface RunOptions {
  takeMessages?: () => Promise<string[]>;
  /** Why a `running` task is run again. */
  resumeReason?: 'restart' | 'budget' | 'approval';
  /** Called once the task is stored as started (or could not be). */
  onStarted?: () => void;
  /**
   * PostgreSQL: resolves while this instance still holds the task's lease, and otherwise stops the
   * task and rejects; asked before every model call and before a call's tools run, so an owner
   * that was deposed (paused past its lease) starts nothing more.
   */
  confirmLease?: () => Promise<void>;
}

/**
 * Runs one task from `queued` to its end: marks it started (opening its usage record), runs it by
 * its kind (run-shell.ts, run-external.ts for ACP agents, run-model.ts with task-observer.ts), and
 * writes the end state, the record and `task.finished` together. It never throws: whatever happens
 * becomes the task's status.
 */
export function createTaskRunner(deps: RunnerDeps) {
  const { store, events, logger } = deps;
  const ctx = createRunContext(deps);
  /** PostgreSQL: a task's steps are stored only while this instance owns it. */
  const owner = deps.instanceId ?? null;

  /**
   * Runs a queued task, or resumes one (`row.status` is then `running`: after a restart, or after
   * a budget pause): it keeps its start, its record and its stream, and continues after its last
   * finished step. `takeMessages` hands over the steering messages waiting for the next step.
   * Returns the task as it is now: ended, or `paused` at a budget (or left `running` at shutdown).
   */
  async function run(row: TaskRow, signal: AbortSignal, opts: RunOptions = {}): Promise<TaskRow> {
    const takeMessages = opts.takeMessages ?? (() => store.takeMessages(row.id));
    const body = row.request;
    const def = deps.registry.get(row.subagentType);
    // The models to try in turn: the task's own list, or the definition's model and its fallbacks.
    const chain = def?.kind === 'model' ? modelChain(body.options?.model, def.model, def.fallbackModels) : [];
    const model = chain[0] ?? null;
    // A task with candidates calls no model itself: its attempts do (run-candidates.ts).
    const candidates = def?.kind === 'model' && body.options?.candidates !== undefined;
    const resumed = row.status === 'running';
    const startedAt = resumed ? (row.startedAt ?? deps.now()) : deps.now();
    const worktree = body.options?.isolation === 'worktree' ? worktreeDir(deps.workspacesDirOf(row.tenant), row.id) : null;
    const log = logger.child({ taskId: row.id });
    const trace = deps.tracing.startTask(row, model);
    let ending: Ending;
    try {
      try {
        // Through the write queue: a database restart waits, and a start whose COMMIT answer was
        // lost is written again (it finds itself) rather than ending the task.
        if (!resumed) await deps.storage.write(() => store.markStarted(row, candidates ? null : model, startedAt, owner));
      } finally {
        opts.onStarted?.();
      }
      log.info(
        { subagentType: row.subagentType, parentTaskId: row.parentTaskId, userId: row.userId, model, ...(resumed && { resumedAfterStep: row.steps }) },
        resumed ? 'task resumed' : 'task started',
      );
      if (!def) throw new Error(`subagent type "${row.subagentType}" is no longer defined`);
      const shared = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
      let workspace = shared;
      let refused: Ending | null = null;
      let folders: TaskFolders | null = null;
      try {
        // An attempt of a task with candidates clones its task's snapshot rather than the workspace as it is now.
        const snapshotOf = worktree && candidateOf(row);
        if (snapshotOf) await cloneWorktree(worktreeDir(deps.workspacesDirOf(row.tenant), snapshotOf), worktree, deps.now());
        // Its own copy of the workspace, taken now (a resumed task finds the one it has); a task with
        // candidates keeps it untouched, as the snapshot its attempts clone.
        if (worktree) workspace = await enterWorktree(shared, worktree, row.id, deps.now());
        if (body.options?.cwd && !candidates) workspace = await enterFolder(workspace, body.options.cwd);
        // A model task's skills and memory, seen below the workspace root (last: over the rest).
        if (def.kind === 'model' && !candidates) workspace = (folders = await openTaskFolders(deps, row, def, body, workspace)).workspace;
      } catch (err) {
        // A link (or a file) on its way leads out, or is no folder: checked only now the task starts.
        if (err instanceof WorktreeError) refused = failed(err.code, `options.isolation: ${err.message}`);
        else if (err instanceof PathError) refused = failed('invalid_cwd', `options.cwd: ${err.message}`);
        else throw err;
      }
      if (resumed) events.append(row, 'task.resumed', { fromStep: row.steps + 1, attempt: row.resumes, reason: opts.resumeReason ?? 'restart' });
      else
        events.append(row, 'task.started', {
          subagent_type: row.subagentType,
          model: candidates ? null : model,
          workspace: workspace.root,
          ...(folders?.skills.length && { skills: folders.skills.map((s) => s.name) }),
          ...(folders?.memory && { memory: folders.memory }),
        });
      // A model run's first write (its first step's start) takes the event along: one commit less.
      if (!refused && def.kind === 'model' && !candidates) events.hold(row.id);
      const taskRun: TaskRun = { row, body, def, workspace, signal, ...(folders && { folders: { skills: folders.skills, memory: folders.memory } }) };
      // The run's own sandbox (SANDBOX=container: its container, removed however the run ends).
      const box = refused ? null : (deps.sandbox.forRun?.({ taskId: row.id, ...(def.image && { image: def.image }), workspace }) ?? null);
      const runCtx = box ? { ...ctx, deps: { ...deps, sandbox: box } } : ctx;
      let outcome: Awaited<ReturnType<typeof runModel>>;
      try {
        outcome =
          refused ??
          (def.kind === 'shell'
            ? await runShell(runCtx, taskRun)
            : def.kind === 'acp'
              ? await runExternal(runCtx, taskRun)
              : candidates
                ? await runCandidates(runCtx, { ...taskRun, model })
                : await runModel(runCtx, { ...taskRun, model, fallbackModels: chain.slice(1), takeMessages, trace, confirmLease: opts.confirmLease }));
      } finally {
        await box?.release();
      }
      // The engine stopped answering: what the run did with no command able to run is not its result.
      const fault = box?.fault?.();
      if (fault && !('pause' in outcome) && !signal.aborted) outcome = failed('sandbox_unavailable', fault);
      if ('pause' in outcome) {
        const paused = await pause(ctx, row, outcome, log);
        trace.end(paused, null);
        return paused;
      }
      ending = outcome;
    } catch (err) {
      // Another instance owns the task now: nothing more of it is written here.
      if (err instanceof TaskTakenOver) {
        // What the run left for its end is not written either (the flush finds it taken over).
        void events.flush(row.id).catch((e: unknown) => log.error({ err: e }, 'could not store the last writes of the task'));
        deps.liveness.forget(row.id);
        trace.end(row, null);
        throw err;
      }
      const fault = storageFaultOf(err);
      if (fault) deps.storage.report(err);
      // Stopped (cancelled, timed out, its lease lost): expected, and said once the task ends.
      if (signal.aborted) log.info({ reason: abortCode(signal).code }, 'task stopped');
      else log.error({ err }, 'task failed');
      ending = fault ? failed(fault, 'the database could not be written') : failed('internal_error', ctx.scrub(errorMessage(err)));
    }

    deps.liveness.forget(row.id);
    const left = signal.aborted ? abortCode(signal).code : null;
    if (left === 'handed_over' || left === 'taken_over') {
      // The service is stopping (the task stays `running`, its record open, for the next start),
      // or another instance runs the task now: nothing more of it is written here, but what its
      // run left for its end (its last step's end: the next start resumes after it).
      await events.flush(row.id).catch((err: unknown) => log.error({ err }, 'could not store the last writes of the task'));
      const now = (await store.getById(row.id).catch(() => undefined)) ?? row;
      log.info({ steps: now.steps }, left === 'handed_over' ? 'task left running for the next start to resume' : 'task taken over by another instance');
      trace.end(now, null);
      return now;
    }
    const completedAt = deps.now();
    // What it changed in its copy, however it ended (files it wrote before an error count too).
    if (worktree) ending = { ...ending, worktree: await worktreeEnding(worktree, completedAt, log) };
    // A replay: how it compares with its original (replay-comparison.ts).
    if (row.replay) ending = { ...ending, replay: await compareReplay(ctx, row, ending, worktree).catch(() => ending.replay ?? row.replay) };
    // Waits (holding the task's slot) while the database cannot be written, then writes in order.
    const finished = await ctx.writes.finish(row, ending, completedAt);
    trace.end(finished, finished.errorMessage);
    deps.metrics.taskFinished(finished, completedAt - startedAt);
    log.info(
      {
        subagentType: finished.subagentType,
        status: finished.status,
        stopReason: finished.stopReason,
        errorCode: finished.errorCode,
        steps: finished.steps,
        ...usageOf(finished),
        durationMs: completedAt - startedAt,
      },
      'task finished',
    );
    return finished;
  }

  return { run };
}

/**
 * A budget was reached, or calls wait on the caller: `running → paused` with `task.paused` (and an
 * `approval.requested` or `tool.requested` per call waiting), in one transaction; the slot is freed.
 */
async function pause(ctx: RunContext, row: TaskRow, { pause: why, waiting }: { pause: Pause; waiting?: WaitingCalls }, log: Logger): Promise<TaskRow> {
  const now = ctx.deps.now();
  await ctx.writes.owned(row, async (s, append) => {
    if (why.reason !== 'budget' && waiting) {
      await s.pauseForApproval(row.id, why, waiting, now, Date.parse(why.expiresAt));
      for (const p of why.pending) {
        const request = { requestId: p.requestId, toolCallId: p.toolCallId, toolName: p.toolName, input: p.input };
        append(row, p.kind === 'approval' ? 'approval.requested' : 'tool.requested', request);
      }
    } else {
      await s.pause(row.id, why, now);
    }
    append(row, 'task.paused', why);
  });
  log.info({ pause: why }, why.reason === 'budget' ? 'task paused at a budget' : 'task waits on the caller');
  return (await ctx.deps.store.getById(row.id))!;
}

/** A worktree task's changes at its end; a copy that is gone (never taken, or unreadable) has none, and is removed. */
async function worktreeEnding(dir: string, now: number, log: Logger): Promise<WorktreeState> {
  const changes = await changesOf(dir).catch((err: unknown) => {
    log.warn({ err }, "could not read the worktree task's copy");
    return null;
  });
  if (changes) return { ...changes, appliedAt: null, removedAt: null };
  await removeWorktree(dir).catch(() => {});
  return { added: [], modified: [], deleted: [], appliedAt: null, removedAt: now };
}

export type TaskRunner = ReturnType<typeof createTaskRunner>;

/** The models a model task tries in turn: `options.model` (one or a list) instead of the definition's model and fallbacks. */
function modelChain(given: string | string[] | undefined, own: string | null, fallbacks: string[] = []): string[] {
  if (given !== undefined) return Array.isArray(given) ? given : [given];
  return own ? [own, ...fallbacks] : [];
}
