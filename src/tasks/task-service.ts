import type { Logger } from 'pino';
import { monotonicFactory } from 'ulid';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import type { EventLog } from '../events/event-log.ts';
import { AppError, notFound, shuttingDown } from '../errors/app-error.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { TaskRow } from '../store/schema.ts';
import { storageFaultOf, type StorageFault, type StorageGuard } from '../store/storage-guard.ts';
import { nextPage } from '../store/paging.ts';
import type { TaskFilter, TaskStore } from '../store/task-store.ts';
import { isUniqueViolation } from '../store/sql-client.ts';
import { createFairQueue } from './fair-queue.ts';
import { CHANNELS, type ClusterStore } from '../store/cluster-store.ts';
import { TaskTakenOver } from '../store/task-store.ts';
import { checkAgainstDefinition, earlierTask, newTaskRow, sessionOf } from './admission.ts';
import { hashBody } from './hash-body.ts';
import { aborted, failed, finishTask } from './finish-task.ts';
import { TaskAbort } from './task-abort.ts';
import type { TaskRunner } from './task-runner.ts';
import type { CreateTaskBody, Progress, TaskBudget, TaskOutput } from '../shapes/task.ts';
import type { Liveness } from './liveness.ts';
import { toTaskOutput } from './task-output.ts';
import type { Budgets } from '../money/budgets.ts';

export interface TaskServiceDeps {
  store: TaskStore;
  events: EventLog;
  registry: AgentRegistry;
  runner: TaskRunner;
  metrics: Metrics;
  logger: Logger;
  now: () => number;
  maxConcurrent: number;
  maxQueued: number;
  maxConcurrentPerTenant: number;
  maxQueuedPerTenant: number;
  taskTimeoutMs: number;
  budgets: Budgets;
  liveness: Liveness;
  /** A task paused longer than this ends `aborted` / `budget_exceeded`. */
  pausedTtlMs: number;
  /** What `recover` does with a task a previous process left running. */
  recovery: { mode: 'resume' | 'interrupt'; maxResumes: number };
  storage: StorageGuard;
  /** PostgreSQL: the tasks table shared with the other instances is the queue (see cluster-store.ts). */
  cluster?: { store: ClusterStore; leaseMs: number };
}

/** Steering messages one task may have waiting at once, and their characters (they wait in the database). */
const MAX_WAITING_MESSAGES = 100;
const MAX_WAITING_CHARS = 64 * 1024;

interface Active {
  controller: AbortController;
  timer: NodeJS.Timeout;
  /** A model task, which the next start can resume. */
  resumable: boolean;
}

type ResumeReason = 'restart' | 'budget';

/**
 * Where tasks wait for a slot: this process's fair queue (SQLite: one process runs everything), or
 * the tasks table every instance shares (PostgreSQL), claimed with the same fairness across them.
 */
interface Scheduler {
  /** A stored task may start: a queued one, or a `running` one to resume (`reason`). */
  offer(row: TaskRow, reason?: ResumeReason): void;
  /** The next task to start here, now this instance's (undefined: none may start). */
  next(): Promise<{ row: TaskRow; reason?: ResumeReason } | undefined>;
  /** A task `next` gave has stopped running here. */
  done(row: TaskRow): void;
  /** Takes a waiting task out, to cancel it; false when it is not waiting. */
  withdraw(id: string): Promise<boolean>;
  /** Tasks waiting (the cluster's: counted in the database), in all and of one tenant. */
  waiting(tenant: string): Promise<{ all: number; tenant: number }>;
}

/** The fair queue of one process: fairness and quotas between its own tasks. */
function localScheduler(maxRunningPerTenant: number): Scheduler {
  const queue = createFairQueue<TaskRow>({
    groupOf: (t) => t.tenant,
    keyOf: (t) => `${t.tenant}\u0000${t.userId}`,
    maxRunningPerGroup: maxRunningPerTenant,
  });
  const reasons = new Map<string, ResumeReason>();
  return {
    offer(row, reason) {
      if (reason) reasons.set(row.id, reason);
      queue.push(row);
    },
    async next() {
      const row = queue.shift();
      if (!row) return undefined;
      const reason = reasons.get(row.id);
      reasons.delete(row.id);
      return { row, reason };
    },
    done: (row) => queue.done(row),
    async withdraw(id) {
      reasons.delete(id);
      return queue.remove((t) => t.id === id);
    },
    waiting: async (tenant) => ({ all: queue.size, tenant: queue.queuedIn(tenant) }),
  };
}

/** The shared queue: claims in the database; whoever has a free slot takes the fairest task. */
function clusterScheduler(
  cluster: ClusterStore,
  deps: { maxRunningPerTenant: number; leaseMs: number; now: () => number; logger: Logger; busy: () => string[] },
): Scheduler {
  const wake = () => void cluster.notify(CHANNELS.wake, cluster.instanceId).catch((err) => deps.logger.warn({ err }, 'could not wake the other instances'));
  return {
    // Stored without an owner, it is waiting already: the other instances are told.
    offer: wake,
    async next() {
      const row = await cluster.claim(deps.maxRunningPerTenant, deps.now() + deps.leaseMs, deps.busy());
      if (!row) return undefined;
      return { row, reason: row.status === 'running' ? ((row.resumeReason as ResumeReason | null) ?? 'restart') : undefined };
    },
    // A slot of its tenant is free: a task of it waiting for its quota may start elsewhere.
    done: wake,
    withdraw: (id) => cluster.claimWaiting(id, deps.now() + deps.leaseMs),
    waiting: (tenant) => cluster.waiting(tenant),
  };
}

export interface SubmitOptions {
  /** A repeated key with the same body answers the first task (409 with another body). */
  idempotencyKey?: string;
  /** W3C traceparent of the caller's span. */
  traceParent?: string;
  /** Stores what must exist before the new task can start (an A2A push config). */
  beforeQueue?: (row: TaskRow) => Promise<unknown>;
}

/**
 * The task lifecycle. `submit` admits (the checks live in admission.ts, then the queue's bounds);
 * the rest schedules: a fair queue under a concurrency cap, timeouts, cancellation, waiting for
 * an end, and recovery of what a previous process left unfinished.
 */
export function createTaskService(deps: TaskServiceDeps) {
  const { store, registry } = deps;
  const newId = monotonicFactory();
  const cluster = deps.cluster?.store ?? null;
  const leaseMs = deps.cluster?.leaseMs ?? 0;
  const queue: Scheduler = cluster
    ? clusterScheduler(cluster, { maxRunningPerTenant: deps.maxConcurrentPerTenant, leaseMs, now: deps.now, logger: deps.logger, busy: () => [...active.keys()] })
    : localScheduler(deps.maxConcurrentPerTenant);
  const active = new Map<string, Active>();
  /**
   * PostgreSQL: until when (monotonic milliseconds: a paused VM or a clock step cannot stretch it)
   * this instance may act for each task it runs without asking the database again. A margin under
   * the lease, for the other instances' clocks.
   */
  const leaseDeadlines = new Map<string, number>();
  const leaseMargin = Math.min(1000, Math.floor(leaseMs / 10));
  const leaseFrom = (t0: number) => t0 + leaseMs - leaseMargin;
  const waiters = new Map<string, Array<(row: TaskRow) => void>>();
  /** Ends written by this instance are fenced by its ownership (PostgreSQL). */
  const finishDeps = { ...deps, instanceId: cluster?.instanceId ?? null };
  let closing = false;
  /** Tasks admitted and being stored, by id: they count in the queue's bounds until they are in it. */
  const admitting = new Map<string, string>();
  /** Tasks started and not yet stored as started: admission answers once they are. */
  const starting = new Map<string, Promise<void>>();

  function settle(row: TaskRow) {
    const list = waiters.get(row.id);
    waiters.delete(row.id);
    for (const resolve of list ?? []) resolve(row);
  }

  let pumping: Promise<void> | null = null;
  let pumpAgain = false;
  /** Starts what may start; resolves once the tasks it took are started (or being). */
  function pump(): Promise<void> {
    if (pumping) {
      pumpAgain = true;
      return pumping;
    }
    const pass = async () => {
      try {
        do {
          pumpAgain = false;
          // Nothing starts while the database cannot be written: its tokens could not be billed.
          while (!closing && deps.storage.fault === null && active.size < deps.maxConcurrent) {
            const next = await queue.next();
            if (!next) break;
            start(next.row, next.reason);
          }
        } while (pumpAgain);
      } catch (err) {
        if (!deps.storage.report(err)) deps.logger.error({ err }, 'could not take the next task');
      }
    };
    // Cleared in a later turn, after it is set (a pass with nothing to do ends synchronously).
    pumping = pass().finally(() => {
      pumping = null;
    });
    return pumping;
  }

  function start(row: TaskRow, resumeReason: ResumeReason | undefined) {
    const body = row.request;
    const timeoutMs = Math.min(body.options?.timeoutMs ?? deps.taskTimeoutMs, deps.taskTimeoutMs);
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new TaskAbort('timeout', `the task ran longer than its timeout of ${timeoutMs} ms`)),
      timeoutMs,
    );
    active.set(row.id, { controller, timer, resumable: registry.get(row.subagentType)?.kind === 'model' });
    // Claimed (or taken back) just now, with a lease of leaseMs.
    if (cluster) leaseDeadlines.set(row.id, leaseFrom(performance.now()));
    let started!: () => void;
    starting.set(row.id, new Promise<void>((resolve) => (started = resolve)));
    const onStarted = () => {
      starting.delete(row.id);
      started();
    };
    void deps.runner
      .run(row, controller.signal, { resumeReason, onStarted, ...(cluster && { confirmLease: () => confirmLease(row.id, controller) }) })
      .catch(async (err): Promise<TaskRow | null> => {
        if (err instanceof TaskTakenOver) {
          // Another instance runs it now (this one lost its lease): its end will come from there.
          deps.logger.warn({ taskId: row.id }, 'the task was taken over by another instance; stopped here');
          return null;
        }
        // The runner never throws by design; if it did (its store writes failed), the task still
        // ends error/internal_error where that can be written, and its waiters are answered.
        deps.logger.error({ err, taskId: row.id }, 'runner failed');
        const current = (await store.getById(row.id).catch(() => undefined)) ?? row;
        const fault = storageFaultOf(err);
        const ending = fault ? failed(fault, 'the database could not be written') : failed('internal_error', 'the task failed inside the service');
        return finishTask(finishDeps, current, ending, deps.now()).catch((finishErr) => {
          deps.logger.error({ err: finishErr, taskId: row.id }, 'could not record the end of the task');
          return current;
        });
      })
      .then((ended) => {
        onStarted();
        // Left running (handed over at shutdown, taken over elsewhere): its end comes later, or from elsewhere.
        if (ended && (closing || !['queued', 'running'].includes(ended.status))) settle(ended);
        clearTimeout(timer);
        active.delete(row.id);
        leaseDeadlines.delete(row.id);
        queue.done(row);
        void pump();
      });
  }

  /**
   * The queue's bounds: the whole queue's, and each tenant's own so one cannot refuse the others
   * (across the cluster on PostgreSQL, where tasks being admitted elsewhere that moment are not counted).
   */
  async function checkQueueRoom(tenant: string) {
    const waiting = await queue.waiting(tenant);
    const queued = waiting.all + admitting.size;
    if (queued >= deps.maxQueued) {
      throw new AppError(429, 'queue_full', `too many queued tasks (${queued}); retry later`, undefined, { 'retry-after': '5' });
    }
    const queuedIn = waiting.tenant + [...admitting.values()].filter((t) => t === tenant).length;
    if (queuedIn >= deps.maxQueuedPerTenant) {
      throw new AppError(
        429,
        'queue_full',
        `this tenant has ${queuedIn} queued tasks, its limit (MAX_QUEUED_PER_TENANT); retry later`,
        undefined,
        { 'retry-after': '5' },
      );
    }
  }

  /** Ends the tasks paused longer than PAUSED_TTL_MS as `aborted` / `budget_exceeded`. */
  async function expirePaused() {
    if (deps.storage.fault) return;
    for (const id of await store.pausedBefore(deps.now() - deps.pausedTtlMs)) {
      const row = (await store.getById(id))!;
      const why = aborted('budget_exceeded', `the task stayed paused at its ${row.pause?.budget ?? ''} budget longer than PAUSED_TTL_MS (${deps.pausedTtlMs} ms)`);
      try {
        settle(await finishTask(finishDeps, row, why, deps.now()));
      } catch (err) {
        // Another instance ended (or resumed) it first.
        if (!(err instanceof TaskTakenOver)) throw err;
      }
    }
  }
  const expiry = setInterval(() => {
    expirePaused().catch((err) => deps.logger.error({ err }, 'could not end the expired paused tasks; retrying'));
  }, Math.min(60_000, Math.max(250, deps.pausedTtlMs / 4)));
  expiry.unref();

  /** May a task a stopped process left `running` be resumed (else it ends `interrupted`)? */
  function resumable(row: TaskRow): boolean {
    return deps.recovery.mode === 'resume' && registry.get(row.subagentType)?.kind === 'model' && row.resumes < deps.recovery.maxResumes;
  }

  /** Ends a task whose process stopped under it: at its last stored event, not now. */
  async function interrupt(row: TaskRow): Promise<void> {
    const endedAt = Math.max(row.startedAt ?? row.createdAt, (await deps.events.lastAt(row.id)) ?? 0);
    const why = row.resumes > 0 ? `the service stopped while the task was running (${row.resumes} resumes already)` : 'the service stopped while the task was running';
    settle(await finishTask(finishDeps, row, { ...failed('interrupted', why), summary: row.summary }, endedAt));
  }

  let leases: NodeJS.Timeout | null = null;
  let renewing = false;

  /**
   * Resolves while this instance may still act for the task: before its lease's deadline, or once
   * the database confirms it still owns the task (the lease renewed). Otherwise the task is
   * stopped (taken over elsewhere: nothing more is written here; the database out of reach: it
   * ends once the database is back, if it is still this instance's) and this rejects.
   */
  async function confirmLease(id: string, controller: AbortController): Promise<void> {
    const deadline = leaseDeadlines.get(id);
    if (deadline !== undefined && performance.now() < deadline) return;
    const t0 = performance.now();
    let held: boolean;
    try {
      held = await cluster!.renewOne(id, deps.now() + leaseMs);
    } catch (err) {
      deps.storage.report(err);
      controller.abort(new TaskAbort('storage_unavailable', 'the task\'s lease ran out while the database could not be reached; the task was stopped'));
      throw controller.signal.reason;
    }
    if (!held) {
      controller.abort(new TaskAbort('taken_over', 'another instance took the task over'));
      throw controller.signal.reason;
    }
    leaseDeadlines.set(id, leaseFrom(t0));
  }

  /** Stops the tasks whose lease ran out without being renewed (the database out of reach, or this process paused). */
  function stopExpired() {
    const now = performance.now();
    for (const [id, a] of active) {
      const deadline = leaseDeadlines.get(id);
      if (deadline === undefined || now < deadline || a.controller.signal.aborted) continue;
      a.controller.abort(new TaskAbort('storage_unavailable', 'the task\'s lease ran out before it could be renewed; the task was stopped'));
    }
  }

  /**
   * PostgreSQL: takes over the tasks whose owner stopped renewing (`own`: also those this instance's
   * previous process left): a resumable one is released for any instance to resume (a resume is
   * counted), any other ends `interrupted`; a queued one an admission left held is released.
   */
  async function takeOver(own: boolean): Promise<{ interrupted: number; resumed: number }> {
    let interrupted = 0;
    let resumed = 0;
    const now = deps.now();
    // A task still stopping here (its lease lost) is not taken back until it has stopped.
    for (const row of await cluster!.takeExpired(now, now + leaseMs, own, [...active.keys()])) {
      if (row.status === 'queued') {
        await cluster!.release(row.id, null);
      } else if (resumable(row)) {
        await cluster!.release(row.id, 'restart');
        resumed++;
      } else {
        await interrupt(row);
        interrupted++;
      }
    }
    if (interrupted + resumed > 0) {
      deps.logger.warn({ interrupted, resumed }, 'took over the tasks of an instance that stopped renewing its leases');
      await cluster!.notify(CHANNELS.wake, cluster!.instanceId);
    }
    return { interrupted, resumed };
  }

  /**
   * PostgreSQL, every third of TASK_LEASE_MS: renews this instance's leases, stops the tasks it
   * lost (another instance took them over while it could not renew), takes over expired ones and
   * looks for work (a missed notification costs at most this long).
   */
  async function renewLeases() {
    if (closing) return;
    // A renewal still waiting for the database (the driver retries for a while): the tasks whose
    // leases ran out meanwhile stop now. Otherwise the renewal goes first (a process woken from a
    // pause renews what it still owns before it judges what ran out).
    if (renewing) return stopExpired();
    // Tried during a storage fault too: the lease is what keeps the tasks running through it.
    renewing = true;
    try {
      const mine = [...active.keys()].map((id) => {
        const activity = deps.liveness.snapshot(id);
        return { id, activity: activity && JSON.stringify(activity) };
      });
      const t0 = performance.now();
      const lost = await cluster!.renew(mine, deps.now() + leaseMs);
      for (const id of lost) active.get(id)?.controller.abort(new TaskAbort('taken_over', 'another instance took the task over'));
      for (const { id } of mine) if (!lost.includes(id) && leaseDeadlines.has(id)) leaseDeadlines.set(id, leaseFrom(t0));
      await takeOver(false);
      void pump();
    } catch (err) {
      if (!deps.storage.report(err)) deps.logger.error({ err }, 'could not renew the task leases');
    } finally {
      renewing = false;
      stopExpired();
    }
  }

  /** Ends a task that was cancelled before it started. */
  async function endQueued(row: TaskRow, message: string): Promise<TaskRow> {
    const finished = await finishTask(finishDeps, row, aborted('cancelled', message), deps.now());
    settle(finished);
    return finished;
  }

  return {
    /**
     * Admits a task. Returns the stored row and whether it was created now (false: an earlier
     * request with the same Idempotency-Key and body).
     */
    async submit(tenant: string, body: CreateTaskBody, opts: SubmitOptions = {}): Promise<{ row: TaskRow; created: boolean }> {
      const { idempotencyKey, traceParent, beforeQueue } = opts;
      if (closing) throw shuttingDown();
      if (deps.storage.fault) throw storageRefusal(deps.storage.fault);
      checkAgainstDefinition(registry, body);
      const now = deps.now();
      const idempotency = idempotencyKey ? { key: idempotencyKey, requestHash: hashBody(body) } : null;
      if (idempotency) {
        const earlier = await earlierTask(store, tenant, idempotency.key, idempotency.requestHash, now);
        if (earlier) return { row: earlier, created: false };
      }
      const session = await sessionOf(store, tenant, body);
      await checkQueueRoom(tenant);
      const row = newTaskRow(`tsk_${newId(now)}`, tenant, body, now, idempotency, session, traceParent ?? null);
      // What must exist before the task starts is stored while this instance holds it (PostgreSQL:
      // another instance could claim it the moment it is stored).
      const held = Boolean(cluster && beforeQueue);
      if (held) Object.assign(row, { owner: cluster!.instanceId, leaseUntil: now + leaseMs });
      admitting.set(row.id, tenant);
      try {
        await store.insert(row);
      } catch (err) {
        if (deps.storage.report(err)) throw storageRefusal(storageFaultOf(err)!);
        // The same key came in twice at once: the other request stored its task first.
        const earlier = idempotency && isUniqueViolation(err) ? await earlierTask(store, tenant, idempotency.key, idempotency.requestHash, now) : null;
        if (earlier) return { row: earlier, created: false };
        throw err;
      } finally {
        admitting.delete(row.id);
      }
      if (beforeQueue) {
        try {
          await beforeQueue(row);
        } catch (err) {
          // Stored but never to run: it ends at once rather than being found queued by the next start.
          await finishTask(finishDeps, row, failed('internal_error', 'the task could not be set up'), deps.now()).catch(() => undefined);
          throw err;
        }
        if (held) await cluster!.release(row.id, null);
      }
      queue.offer(row);
      await pump();
      // A task that started at once is answered as `running`, as stored.
      await starting.get(row.id);
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
      const row = await this.get(tenant, id);
      if (row.status !== 'queued' && row.status !== 'running' && row.status !== 'paused') {
        throw new AppError(409, 'task_finished', `task ${id} is ${row.status}; continue it with a new task whose task_id is ${id}`);
      }
      const kind = row.subagentType === 'shell' ? 'shell' : registry.get(row.subagentType)?.kind;
      if (kind === 'shell') throw new AppError(400, 'not_steerable', 'a shell task has no model to steer');
      if (kind === 'acp') throw new AppError(400, 'not_steerable', 'an external ACP agent cannot be given messages during its turn');
      const offer = await deps.storage.write(() => store.offerMessage(id, prompt, deps.now(), { messages: MAX_WAITING_MESSAGES, chars: MAX_WAITING_CHARS }));
      if (!offer.accepted) {
        throw new AppError(
          429,
          'inbox_full',
          `task ${id} already has ${offer.waiting} messages (${offer.chars} characters) waiting for its next step; at most ${MAX_WAITING_MESSAGES} and ${MAX_WAITING_CHARS} characters`,
        );
      }
    },

    /** The conversation of a task as the model saw it (the system prompt aside). */
    async messages(tenant: string, id: string) {
      await this.get(tenant, id);
      return store.messages(id);
    },

    /**
     * Continues a paused task from its next step, after `budget` (if given) replaced its own.
     * 409 `task_not_paused` unless it is paused; 409 `budget_exceeded` while a budget is still reached.
     */
    async resume(tenant: string, id: string, budget: TaskBudget | undefined): Promise<TaskRow> {
      const row = await this.get(tenant, id);
      if (row.status !== 'paused') throw new AppError(409, 'task_not_paused', `task ${id} is ${row.status}, not paused`);
      if (closing) throw shuttingDown();
      const now = deps.now();
      const own = budget ?? row.budget ?? undefined;
      const still = await deps.budgets.reached({ ...row, pausedMs: row.pausedMs + (now - (row.pausedAt ?? now)) }, own, now);
      if (still) {
        throw new AppError(409, 'budget_exceeded', `the ${still.budget} budget is still reached (${still.measure}: ${still.spent} of ${still.limit}); raise it first`, still);
      }
      const resumed = await deps.storage.write(async () => {
        if (!(await store.unpause(id, budget ?? null, now))) return null;
        return (await store.getById(id))!;
      });
      if (!resumed) return (await store.getById(id))!;
      queue.offer(resumed, 'budget');
      await pump();
      return (await store.getById(id))!;
    },

    /** Cancels a queued, running or paused task; a finished task is returned as it is. */
    async cancel(tenant: string, id: string): Promise<TaskRow> {
      try {
        return await this.cancelOnce(tenant, id);
      } catch (err) {
        // Another instance resumed or ended it meanwhile (PostgreSQL): once more, from where it is now.
        if (err instanceof TaskTakenOver) return this.cancelOnce(tenant, id);
        throw err;
      }
    },

    async cancelOnce(tenant: string, id: string): Promise<TaskRow> {
      const row = await this.get(tenant, id);
      if (row.status === 'paused') return endQueued(row, 'the task was cancelled while paused');
      // A queued task, or a resumed one still waiting for a slot (it is `running` since before the restart).
      if ((row.status === 'queued' || row.status === 'running') && (await queue.withdraw(id))) {
        return endQueued(row, 'the task was cancelled before it started');
      }
      const here = active.get(id);
      if (here) here.controller.abort(new TaskAbort('cancelled', 'the task was cancelled'));
      // Running on another instance: its owner stops it.
      else if (cluster && row.status === 'running') await cluster.notify(CHANNELS.control, JSON.stringify({ op: 'cancel', id }));
      return (await store.getById(id))!;
    },

    /**
     * The database cannot be written: running tasks are stopped (their tokens could not be billed
     * any more) and end as soon as their end can be stored; queued ones wait.
     */
    storageFailed(fault: StorageFault) {
      // PostgreSQL out of reach (a restart, a failover): running tasks go on while their leases
      // last, their writes held in order by the storage guard; one whose lease runs out first is
      // stopped then (stopExpired), and ends once the database is back.
      if (cluster && fault === 'storage_unavailable') return;
      for (const a of active.values()) a.controller.abort(new TaskAbort(fault, 'the database could not be written; the task was stopped'));
    },

    /** The database takes writes again: queued tasks may start. */
    storageRecovered() {
      pump();
    },

    /** Resolves with the task's final row once it has ended. */
    waitForEnd(id: string): Promise<TaskRow> {
      // Listening first, then reading: an end between the two is not missed.
      return new Promise((resolve, reject) => {
        const list = waiters.get(id) ?? [];
        list.push(resolve);
        waiters.set(id, list);
        store.getById(id).then((row) => {
          if (row && ['queued', 'running'].includes(row.status)) return;
          const left = (waiters.get(id) ?? []).filter((w) => w !== resolve);
          if (left.length > 0) waiters.set(id, left);
          else waiters.delete(id);
          resolve(row!);
        }, reject);
      });
    },

    /**
     * Takes up what a previous process left behind. A `running` task is resumed (RECOVERY_MODE=resume,
     * at most MAX_RESUMES times, model tasks only): it runs again from its last finished step with
     * the same id, record and stream. Otherwise it ends `error` / `interrupted` (its record keeps the
     * tokens of every finished step). A `queued` one never ran and is queued again.
     */
    async recover(): Promise<{ interrupted: number; requeued: number; resumed: number }> {
      if (cluster) {
        // Waiting tasks wait in the table already; running ones this instance's previous process
        // left (its id is this one's) are taken back at once, other instances' when their leases expire.
        const { all: requeued } = await queue.waiting('');
        const taken = await takeOver(true);
        await expirePaused();
        leases = setInterval(() => void renewLeases(), Math.max(100, Math.floor(leaseMs / 3)));
        leases.unref();
        await pump();
        return { interrupted: taken.interrupted, requeued, resumed: taken.resumed };
      }
      let interrupted = 0;
      let requeued = 0;
      let resumed = 0;
      for (const row of await store.unfinished()) {
        if (row.status === 'queued') {
          queue.offer(row);
          requeued++;
          continue;
        }
        if (resumable(row)) {
          await store.countResume(row.id);
          queue.offer((await store.getById(row.id))!);
          resumed++;
          continue;
        }
        await interrupt(row);
        interrupted++;
      }
      await expirePaused();
      await pump();
      return { interrupted, requeued, resumed };
    },

    /**
     * Something happened to a task on another instance (PostgreSQL): whoever waits here for its
     * end is answered once it has ended or paused. Without an id: to every task waited for (after
     * notifications may have been lost).
     */
    async changedElsewhere(id?: string): Promise<void> {
      for (const waited of id === undefined ? [...waiters.keys()] : [id]) {
        if (!waiters.has(waited)) continue;
        const row = await store.getById(waited);
        if (row && !['queued', 'running'].includes(row.status)) settle(row);
      }
    },

    /** What another instance asked of this one (PostgreSQL `subagentd_control`). */
    control(payload: string): void {
      let message: { op?: unknown; id?: unknown };
      try {
        message = JSON.parse(payload) as typeof message;
      } catch {
        return;
      }
      if (message.op === 'cancel' && typeof message.id === 'string') {
        active.get(message.id)?.controller.abort(new TaskAbort('cancelled', 'the task was cancelled'));
      }
    },

    /** Another instance stored, resumed or released a task, or freed a slot: start what may start. */
    wake(): void {
      void pump();
    },

    /** Tasks waiting to start (the whole cluster's on PostgreSQL) and running here: read when the metrics are. */
    async depth(): Promise<{ queued: number; running: number }> {
      return { queued: (await queue.waiting('')).all, running: active.size };
    },

    /**
     * Stops admitting, gives running tasks `graceMs` to end, then stops them: with RECOVERY_MODE=resume
     * a model task is left `running` after its last finished step, for the next start to resume;
     * otherwise (and a shell task always) it ends `interrupted`. Waits for what they write. Queued tasks stay queued for the next start;
     * whoever waits for one is answered with it as it is (`queued`), so no wait outlives the process.
     */
    async close(graceMs = 0): Promise<void> {
      closing = true;
      clearInterval(expiry);
      if (leases) clearInterval(leases);
      const pending = [...active.keys()].map((id) => this.waitForEnd(id));
      const handedOver: string[] = [];
      if (pending.length > 0) {
        const grace = new Promise((r) => setTimeout(r, graceMs).unref());
        await Promise.race([Promise.all(pending), grace]);
        for (const [id, a] of active) {
          const handOver = deps.recovery.mode === 'resume' && a.resumable;
          if (handOver) handedOver.push(id);
          a.controller.abort(
            handOver
              ? new TaskAbort('handed_over', 'the service stopped; the next start resumes the task')
              : new TaskAbort('interrupted', 'the service stopped while the task was running'),
          );
        }
        await Promise.all(pending);
      }
      if (cluster && handedOver.length > 0) {
        // Another instance resumes them now rather than when their leases expire.
        try {
          for (const id of handedOver) await cluster.release(id, 'restart');
          await cluster.notify(CHANNELS.wake, cluster.instanceId);
        } catch (err) {
          deps.logger.warn({ err }, 'could not hand the running tasks over; they are taken over when their leases expire');
        }
      }
      for (const id of [...waiters.keys()]) {
        const row = await store.getById(id);
        if (row) settle(row);
      }
    },
  };
}

export type TaskService = ReturnType<typeof createTaskService>;

function storageRefusal(fault: StorageFault): AppError {
  return fault === 'storage_full'
    ? new AppError(507, 'storage_full', 'the service cannot store new tasks: its disk is full; retry later', undefined, { 'retry-after': '30' })
    : new AppError(503, 'storage_unavailable', 'the service cannot write its database; retry later', undefined, { 'retry-after': '30' });
}
