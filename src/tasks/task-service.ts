import { monotonicUlid } from '../util/ids.ts';
import { AppError, notFound, shuttingDown } from '../errors/app-error.ts';
import { isEndedStatus, type CreateTaskBody, type Progress, type TaskBudget, type TaskOutput, type ToolResultBody } from '../shapes/task.ts';
import type { ReplayBatchBody, ReplayBody } from '../shapes/replay.ts';
import { CHANNELS } from '../store/cluster-store.ts';
import { nextPage } from '../store/paging.ts';
import type { TaskRow } from '../store/schema.ts';
import { isUniqueViolation } from '../store/sql-errors.ts';
import { storageFaultOf, type StorageFault } from '../store/storage-guard.ts';
import { TaskTakenOver, type TaskFilter } from '../store/task-store.ts';
import { workspacePath } from '../workspace/workspace.ts';
import type { SubmitOptions } from './systems/admission.ts';
import type { StopWhy } from './run/run-context.ts';
import { createChildSystem } from './systems/child-system.ts';
import {
  checkAgainstDefinition,
  checkAttemptsFit,
  checkQueueRoom,
  earlierTask,
  newTaskRow,
  queueFull,
  queueRoom,
  sessionOf,
  storageRefusal,
} from './systems/admission.ts';
import { createApprovalSystem, type ApprovalReply } from './systems/approval-system.ts';
import { createWorktreeSystem } from './systems/worktree-system.ts';
import { createDispatchSystem } from './systems/dispatch-system.ts';
import { aborted, failed } from './writes/finish-task.ts';
import { hashBody } from './hash-body.ts';
import { createLeaseSystem } from './systems/lease-system.ts';
import { createPauseSystem } from './systems/pause-system.ts';
import { createRecoverySystem } from './systems/recovery-system.ts';
import { createSteering } from './systems/steering.ts';
import { createReplaySystem } from './systems/replay-system.ts';
import { clusterScheduler, localScheduler } from './systems/scheduler.ts';
import { controlledAbort, TaskAbort } from './run/task-abort.ts';
import { toTaskOutput } from './writes/task-output.ts';
import { createTaskResources, type TaskServiceDeps } from './systems/task-resources.ts';

export type { TaskServiceDeps } from './systems/task-resources.ts';
export type { SubmitOptions } from './systems/admission.ts';

/** A caller's cancel. */
const CANCELLED: StopWhy = { code: 'cancelled', message: 'the task was cancelled' };

/**
 * The task lifecycle, as the routes see it: submit, read, steer, resume, cancel, wait. Behind it,
 * systems over one resources bag (task-resources.ts): the scheduler (scheduler.ts: this process's
 * fair queue, or the cluster's table), the dispatcher (slots, timeouts), leases (PostgreSQL),
 * recovery, pauses. Admission's checks live in admission.ts; a run itself in task-runner.ts.
 */
export function createTaskService(deps: TaskServiceDeps) {
  const { store, registry } = deps;
  const newId = monotonicUlid();
  const res = createTaskResources(deps);
  const { cluster, leaseMs, waiters } = res;
  const scheduler = cluster
    ? clusterScheduler(cluster, {
        maxRunningPerTenant: deps.maxConcurrentPerTenant,
        leaseMs,
        now: deps.now,
        logger: deps.logger,
        busy: () => [...res.active.keys()],
      })
    : localScheduler(deps.maxConcurrentPerTenant);
  const recovery = createRecoverySystem(res);
  const steering = createSteering(res);
  const replays = createReplaySystem(res, {
    submit: async (tenant, body, replay, idempotencyKey) => (await service.submit(tenant, body, { replay, idempotencyKey })).row,
  });
  const pauses = createPauseSystem(res);
  // Every answer given: the task may start again (on any instance: the cluster's scheduler wakes them).
  const approvals = createApprovalSystem(res, {
    onResumable: (row) => {
      scheduler.offer(row, 'approval');
      void pump();
    },
  });
  // The dispatcher and the leases need each other: a run confirms its lease, a renewal looks for work.
  const pump = () => dispatch.pump();
  const leases = cluster ? createLeaseSystem(res, cluster, { recovery, pump: () => void pump() }) : null;
  const dispatch = createDispatchSystem(res, scheduler, leases);
  /** Tasks admitted and being stored, by id: they count in the queue's bounds until they are in it. */
  const admitting = new Map<string, string>();
  const worktrees = createWorktreeSystem(res, { ttlMs: deps.worktreeTtlMs ?? 24 * 3600_000 });
  // Its peers are the service's own routes and the dispatcher: bound through functions, as the service is made below.
  const childSystem = createChildSystem(res, {
    submit: (tenant, body, opts) => service.submit(tenant, body, opts),
    cancel: (tenant, id, why) => service.cancel(tenant, id, why),
    steer: (tenant, id, message) => service.steer(tenant, id, message),
    resume: (tenant, id) => service.resume(tenant, id, undefined),
    setWaiting: (id, on) => dispatch.setWaiting(id, on),
  });
  // Whatever ends a task here (its run, a cancel while paused, a pause that expired, recovery) ends its background children.
  res.onEnd = (row) => childSystem.parentEnded(row);
  pauses.start();
  approvals.start();
  worktrees.start();

  /** Ends a task that was cancelled before it started (or while paused). */
  const endWaiting = (row: TaskRow, why: StopWhy, when: string) => res.finish(row, aborted(why.code, `${why.message} ${when}`), deps.now());

  const service = {
    /**
     * Admits a task. Returns the stored row and whether it was created now (false: an earlier
     * request with the same Idempotency-Key and body).
     */
    async submit(tenant: string, body: CreateTaskBody, opts: SubmitOptions = {}): Promise<{ row: TaskRow; created: boolean; ended?: Promise<TaskRow> }> {
      const { idempotencyKey, traceParent, beforeQueue } = opts;
      if (res.state.closing) throw shuttingDown();
      if (deps.storage.fault) throw storageRefusal(deps.storage.fault);
      checkAgainstDefinition(registry, body, workspacePath(deps.workspacesDirOf(tenant), body.context.parentTaskId), deps.models);
      const now = deps.now();
      const idempotency = idempotencyKey ? { key: idempotencyKey, requestHash: hashBody(body) } : null;
      if (idempotency) {
        const earlier = await earlierTask(store, tenant, idempotency.key, idempotency.requestHash, now);
        if (earlier) return { row: earlier, created: false };
      }
      const session = await sessionOf(store, tenant, body);
      // The cluster's queue is counted by the statement that stores the task (one round trip).
      // A task with candidates needs room for its attempts too (queued beside it once it starts).
      const attempts = body.options?.candidates?.n ?? 0;
      checkAttemptsFit(deps, attempts);
      if (!cluster) await checkQueueRoom(scheduler, admitting, deps, tenant, attempts);
      const room = cluster ? queueRoom(admitting, deps, tenant, attempts) : undefined;
      const lineage = opts.lineage ?? { depth: 0, parentTask: null, maxDepth: registry.get(body.subagent_type)?.maxDepth ?? 0 };
      const row = { ...newTaskRow(`tsk_${newId(now)}`, tenant, body, now, idempotency, session, traceParent ?? null, lineage), replay: opts.replay ?? null };
      // What must exist before the task starts is stored while this instance holds it (PostgreSQL:
      // another instance could claim it the moment it is stored).
      const held = Boolean(cluster && beforeQueue);
      if (held) Object.assign(row, { owner: cluster!.instanceId, leaseUntil: now + leaseMs });
      admitting.set(row.id, tenant);
      // Listening before it is stored: another instance may claim it, run it and end it the moment it is.
      const ended = opts.waiting ? waiters.wait(row.id, row) : undefined;
      let stored: boolean;
      try {
        stored = await store.insert(row, room);
      } catch (err) {
        waiters.forget(row.id);
        if (deps.storage.report(err)) throw storageRefusal(storageFaultOf(err)!);
        // The same key came in twice at once: the other request stored its task first.
        const earlier = idempotency && isUniqueViolation(err) ? await earlierTask(store, tenant, idempotency.key, idempotency.requestHash, now) : null;
        if (earlier) return { row: earlier, created: false };
        throw err;
      } finally {
        admitting.delete(row.id);
      }
      if (!stored) {
        waiters.forget(row.id);
        // Which bound it met, counted again (it may have room by now: the answer stands).
        await checkQueueRoom(scheduler, admitting, deps, tenant, attempts);
        throw queueFull('the queue has no room for the task');
      }
      if (beforeQueue) {
        try {
          await beforeQueue(row);
        } catch (err) {
          // Stored but never to run: it ends at once rather than being found queued by the next start.
          await res.record(row, failed('internal_error', 'the task could not be set up'), deps.now()).catch(() => undefined);
          waiters.forget(row.id);
          throw err;
        }
        if (held) await cluster!.release(row.id, null);
      }
      scheduler.offer(row);
      await pump();
      if (ended) return { row, created: true, ended };
      // A task that started at once is answered as `running`, as stored.
      await dispatch.started(row.id);
      return { row: (await store.getById(row.id))!, created: true };
    },

    /** The contract's TaskOutput, with what the task is doing now while it has not ended. */
    output(row: TaskRow): TaskOutput {
      return toTaskOutput(row, deps.liveness.of(row));
    },

    /** What a task is doing now (null once it ended or when it is unknown). */
    async progress(id: string): Promise<Progress | null> {
      const row = await store.getById(id);
      return row ? deps.liveness.of(row) : null;
    },

    async get(tenant: string, id: string): Promise<TaskRow> {
      const row = await store.get(tenant, id);
      if (!row) throw notFound(`task ${id}`);
      return row;
    },

    async list(tenant: string, filter: TaskFilter, limit: number, cursor?: string) {
      return nextPage(await store.list(tenant, filter, limit + 1, cursor), limit);
    },

    /**
     * Accepts a steering message for a queued, running or paused task: the model gets it before its
     * next step (event `message.received`), on whichever instance runs it. A finished task is a 409
     * `task_finished`. Messages wait in the database: a restart or a takeover does not lose them.
     */
    async steer(tenant: string, id: string, prompt: string): Promise<void> {
      const row = await service.get(tenant, id);
      if (!row.request.options?.candidates || isEndedStatus(row.status)) return steering.offer(row, prompt);
      // A task with candidates calls no model itself: the message goes to each attempt that runs.
      const live: TaskRow[] = [];
      for (const c of row.candidates ?? []) {
        const attempt = await store.getById(c.taskId);
        if (attempt && !isEndedStatus(attempt.status)) live.push(attempt);
      }
      if (live.length === 0) {
        throw new AppError(409, 'not_steerable', `task ${row.id} runs candidates and none of its attempts is running now: there is no model to steer`);
      }
      for (const attempt of live) await steering.offer(attempt, prompt);
    },

    /** Replays (replay-system.ts): a finished model task run again (`one`), a batch of them, a batch as it is now. */
    replays: {
      one: async (tenant: string, id: string, body: ReplayBody) => replays.start(tenant, await service.get(tenant, id), body),
      start: (tenant: string, body: ReplayBatchBody) => replays.startBatch(tenant, body),
      get: (tenant: string, id: string) => replays.batch(tenant, id),
      list: (tenant: string, limit: number, cursor?: string) => replays.batches(tenant, limit, cursor),
    },

    /** The conversation of a task as the model saw it (the system prompt aside). */
    async messages(tenant: string, id: string) {
      await service.get(tenant, id);
      return store.messages(id);
    },

    /**
     * Continues a paused task from its next step, after `budget` (if given) replaced its own.
     * 409 `task_not_paused` unless it is paused; 409 `budget_exceeded` while a budget is still reached.
     */
    async resume(tenant: string, id: string, budget: TaskBudget | undefined): Promise<TaskRow> {
      const resumed = await pauses.unpause(await service.get(tenant, id), budget);
      if (resumed) {
        scheduler.offer(resumed, 'budget');
        await pump();
      }
      return (await store.getById(id))!;
    },

    /**
     * Answers approval request `requestId` of a task waiting for it (approval-system.ts): once
     * every request of the step is answered, the task goes on from where it waited.
     */
    async answerApproval(tenant: string, id: string, requestId: string, reply: ApprovalReply): Promise<TaskRow> {
      return approvals.answer(await service.get(tenant, id), requestId, reply);
    },

    /** The caller's result of a caller-run tool's call (approval-system.ts), answered like an approval. */
    async submitToolResult(tenant: string, id: string, requestId: string, result: ToolResultBody): Promise<TaskRow> {
      return approvals.submitToolResult(await service.get(tenant, id), requestId, result);
    },

    /**
     * Cancels a queued, running or paused task (`why`: its caller by default; its lead's
     * `close_agent`, or its lead's end); a finished task is returned as it is.
     */
    async cancel(tenant: string, id: string, why: StopWhy = CANCELLED): Promise<TaskRow> {
      try {
        return await cancelOnce(tenant, id, why);
      } catch (err) {
        // Another instance resumed or ended it meanwhile (PostgreSQL): once more, from where it is now.
        if (err instanceof TaskTakenOver) return cancelOnce(tenant, id, why);
        throw err;
      }
    },

    /**
     * The database cannot be written: running tasks are stopped (their tokens could not be billed
     * any more) and end as soon as their end can be stored; queued ones wait.
     */
    storageFailed(fault: StorageFault) {
      // PostgreSQL out of reach (a restart, a failover): running tasks go on while their leases
      // last, their writes held in order by the storage guard; one whose lease runs out first is
      // stopped then (lease-system.ts), and ends once the database is back.
      if (cluster && fault === 'storage_unavailable') return;
      dispatch.abortAll(new TaskAbort(fault, 'the database could not be written; the task was stopped'));
    },

    /** The database takes writes again: queued tasks may start. */
    storageRecovered() {
      void pump();
    },

    /** Resolves with the task's final row once it has ended. */
    waitForEnd(id: string): Promise<TaskRow> {
      return waiters.wait(id);
    },

    /** What a task's lead tools do with its children (nesting, child-system.ts): see ChildTasks. */
    children: childSystem.children,

    /**
     * Takes up what a previous process left behind (recovery-system.ts): a `running` task is
     * resumed from its last finished step, with the same id, record and stream (RECOVERY_MODE=resume,
     * at most MAX_RESUMES times, model tasks only), or ends `error` / `interrupted`; a `queued` one
     * is queued again.
     */
    async recover(): Promise<{ interrupted: number; requeued: number; resumed: number }> {
      const recovered = await recovery.recover({ scheduler, pauses, leases, pump });
      // Leads that ended while their children ran on (a stop between the two ends, a lost answer).
      const orphans = await childSystem.sweep();
      if (orphans > 0) deps.logger.info({ orphans }, 'cancelled the children of ended tasks');
      return recovered;
    },

    /**
     * Something happened to a task on another instance (PostgreSQL): whoever waits here for its
     * end is answered once it has ended or paused. Without an id: to every task waited for (after
     * notifications may have been lost).
     */
    changedElsewhere(id?: string): Promise<void> {
      return waiters.changed(id);
    },

    /** What another instance asked of this one (PostgreSQL `subagentd_control`). */
    control(payload: string): void {
      const asked = controlledAbort(payload);
      if (asked) dispatch.abort(asked.id, asked.abort);
    },

    /** Another instance stored, resumed or released a task, or freed a slot: start what may start. */
    wake(): void {
      void pump();
    },

    /** Tasks waiting to start (the whole cluster's on PostgreSQL) and running here: read when the metrics are. */
    async depth(): Promise<{ queued: number; running: number }> {
      return { queued: (await scheduler.waiting('')).all, running: res.active.size };
    },

    /** A finished worktree task's changes, its diff and its files (worktree-system.ts). */
    worktrees: {
      apply: async (tenant: string, id: string) => worktrees.apply(await service.get(tenant, id)),
      patch: async (tenant: string, id: string) => worktrees.patch(await service.get(tenant, id)),
      filesRoot: async (tenant: string, id: string) => worktrees.filesRoot(await service.get(tenant, id)),
      sweep: () => worktrees.sweep(),
    },

    /**
     * Stops admitting, gives running tasks `graceMs` to end, then stops them (dispatch-system.ts:
     * a resumable one is left `running` for the next start, or another instance, to resume).
     * Waits for what they write. Queued tasks stay queued for the next start; whoever waits for one
     * is answered with it as it is (`queued`), so no wait outlives the process.
     */
    async close(graceMs = 0): Promise<void> {
      res.state.closing = true;
      pauses.stop();
      approvals.stop();
      worktrees.stop();
      leases?.stop();
      const handedOver = await dispatch.stopAll(graceMs);
      // Calls read on for their usage (a lost lease's, up to 10 s) are billed before the database closes.
      await deps.readOns?.drained();
      await leases?.handOver(handedOver);
      await waiters.releaseAll();
    },
  };

  async function cancelOnce(tenant: string, id: string, why: StopWhy): Promise<TaskRow> {
    const row = await service.get(tenant, id);
    if (row.status === 'paused') return endWaiting(row, why, 'while paused');
    // A queued task, or a resumed one still waiting for a slot (it is `running` since before the restart).
    if ((row.status === 'queued' || row.status === 'running') && (await scheduler.withdraw(id))) {
      return endWaiting(row, why, 'before it started');
    }
    // Running on another instance: its owner stops it.
    if (!dispatch.abort(id, new TaskAbort(why.code, why.message)) && cluster && row.status === 'running') {
      await cluster.notify(CHANNELS.control, JSON.stringify({ op: 'cancel', id, ...(why.code !== 'cancelled' && why) }));
    }
    return (await store.getById(id))!;
  }

  return service;
}

export type TaskService = ReturnType<typeof createTaskService>;
