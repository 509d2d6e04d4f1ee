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
}

/**
 * Steering messages one task may have waiting at once, and their characters: with the queue's own
 * bounds, the memory all inboxes can hold stays bounded (1,250 tasks × 64 Ki characters at most).
 */
const MAX_WAITING_MESSAGES = 100;
const MAX_WAITING_CHARS = 64 * 1024;

interface Active {
  controller: AbortController;
  timer: NodeJS.Timeout;
  /** A model task, which the next start can resume. */
  resumable: boolean;
}

/**
 * The task lifecycle. `submit` admits (the checks live in admission.ts, then the queue's bounds);
 * the rest schedules: a fair queue under a concurrency cap, timeouts, cancellation, waiting for
 * an end, and recovery of what a previous process left unfinished.
 */
export function createTaskService(deps: TaskServiceDeps) {
  const { store, registry } = deps;
  const newId = monotonicFactory();
  const queue = createFairQueue<TaskRow>({
    groupOf: (t) => t.tenant,
    keyOf: (t) => `${t.tenant}\u0000${t.userId}`,
    maxRunningPerGroup: deps.maxConcurrentPerTenant,
  });
  const active = new Map<string, Active>();
  const waiters = new Map<string, Array<(row: TaskRow) => void>>();
  /** Steering messages accepted for queued or running tasks, waiting for their next step. */
  const inboxes = new Map<string, string[]>();
  /** Why a `running` task in the queue runs again (absent: after a restart). */
  const resumeReasons = new Map<string, 'budget'>();
  const takeMessages = (id: string) => () => {
    const waiting = inboxes.get(id) ?? [];
    inboxes.delete(id);
    return waiting;
  };
  let closing = false;
  /** Tasks admitted and being stored, by id: they count in the queue's bounds until they are in it. */
  const admitting = new Map<string, string>();
  /** Tasks started and not yet stored as started: admission answers once they are. */
  const starting = new Map<string, Promise<void>>();

  function updateGauges() {
    deps.metrics.setQueue(queue.size, active.size);
  }

  function settle(row: TaskRow) {
    const list = waiters.get(row.id);
    waiters.delete(row.id);
    for (const resolve of list ?? []) resolve(row);
  }

  function pump() {
    // Nothing starts while the database cannot be written: its tokens could not be billed.
    while (!closing && deps.storage.fault === null && active.size < deps.maxConcurrent) {
      const next = queue.shift();
      if (!next) break;
      start(next);
    }
    updateGauges();
  }

  function start(row: TaskRow) {
    const body = row.request;
    const timeoutMs = Math.min(body.options?.timeoutMs ?? deps.taskTimeoutMs, deps.taskTimeoutMs);
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new TaskAbort('timeout', `the task ran longer than its timeout of ${timeoutMs} ms`)),
      timeoutMs,
    );
    active.set(row.id, { controller, timer, resumable: registry.get(row.subagentType)?.kind === 'model' });
    let started!: () => void;
    starting.set(row.id, new Promise<void>((resolve) => (started = resolve)));
    const onStarted = () => {
      starting.delete(row.id);
      started();
    };
    void deps.runner
      .run(row, controller.signal, { takeMessages: takeMessages(row.id), resumeReason: resumeReasons.get(row.id), onStarted })
      .catch(async (err): Promise<TaskRow> => {
        // The runner never throws by design; if it did (its store writes failed), the task still
        // ends error/internal_error where that can be written, and its waiters are answered.
        deps.logger.error({ err, taskId: row.id }, 'runner failed');
        const current = (await store.getById(row.id).catch(() => undefined)) ?? row;
        const fault = storageFaultOf(err);
        const ending = fault ? failed(fault, 'the database could not be written') : failed('internal_error', 'the task failed inside the service');
        return finishTask(deps, current, ending, deps.now()).catch((finishErr) => {
          deps.logger.error({ err: finishErr, taskId: row.id }, 'could not record the end of the task');
          return current;
        });
      })
      .then((ended) => {
        onStarted();
        settle(ended);
        clearTimeout(timer);
        active.delete(row.id);
        resumeReasons.delete(row.id);
        // A paused task keeps the messages sent to it for when it resumes.
        if (ended.status !== 'paused') inboxes.delete(row.id);
        queue.done(row);
        pump();
      });
  }

  /** The queue's bounds: the whole queue's, and each tenant's own so one cannot refuse the others. */
  function checkQueueRoom(tenant: string) {
    const queued = queue.size + admitting.size;
    if (queued >= deps.maxQueued) {
      throw new AppError(429, 'queue_full', `too many queued tasks (${queued}); retry later`, undefined, { 'retry-after': '5' });
    }
    const queuedIn = queue.queuedIn(tenant) + [...admitting.values()].filter((t) => t === tenant).length;
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
      const ended = await finishTask(deps, row, why, deps.now());
      inboxes.delete(id);
      settle(ended);
    }
  }
  const expiry = setInterval(() => {
    expirePaused().catch((err) => deps.logger.error({ err }, 'could not end the expired paused tasks; retrying'));
  }, Math.min(60_000, Math.max(250, deps.pausedTtlMs / 4)));
  expiry.unref();

  /** Ends a task that was cancelled before it started. */
  async function endQueued(row: TaskRow, message: string): Promise<TaskRow> {
    const finished = await finishTask(deps, row, aborted('cancelled', message), deps.now());
    settle(finished);
    return finished;
  }

  return {
    /**
     * Admits a task. Returns the stored row and whether it was created now (false: an earlier
     * request with the same Idempotency-Key and body).
     */
    async submit(
      tenant: string,
      body: CreateTaskBody,
      idempotencyKey?: string,
      traceParent?: string,
      /** Stores what must exist before the new task can start (an A2A push config). */
      beforeQueue?: (row: TaskRow) => Promise<unknown>,
    ): Promise<{ row: TaskRow; created: boolean }> {
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
      checkQueueRoom(tenant);
      const row = newTaskRow(`tsk_${newId(now)}`, tenant, body, now, idempotency, session, traceParent ?? null);
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
          await finishTask(deps, row, failed('internal_error', 'the task could not be set up'), deps.now()).catch(() => undefined);
          throw err;
        }
      }
      queue.push(row);
      pump();
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
     * Accepts a steering message for a queued or running task: the model gets it before its next
     * step (event `message.received`). A finished task is a 409 `task_finished`. Messages wait in
     * memory: one accepted but not yet delivered when the process stops is lost.
     */
    async steer(tenant: string, id: string, prompt: string): Promise<void> {
      const row = await this.get(tenant, id);
      if (row.status !== 'queued' && row.status !== 'running' && row.status !== 'paused') {
        throw new AppError(409, 'task_finished', `task ${id} is ${row.status}; continue it with a new task whose task_id is ${id}`);
      }
      const kind = row.subagentType === 'shell' ? 'shell' : registry.get(row.subagentType)?.kind;
      if (kind === 'shell') throw new AppError(400, 'not_steerable', 'a shell task has no model to steer');
      if (kind === 'acp') throw new AppError(400, 'not_steerable', 'an external ACP agent cannot be given messages during its turn');
      const inbox = inboxes.get(id) ?? [];
      const waiting = inbox.reduce((n, m) => n + m.length, 0);
      if (inbox.length >= MAX_WAITING_MESSAGES || waiting + prompt.length > MAX_WAITING_CHARS) {
        throw new AppError(
          429,
          'inbox_full',
          `task ${id} already has ${inbox.length} messages (${waiting} characters) waiting for its next step; at most ${MAX_WAITING_MESSAGES} and ${MAX_WAITING_CHARS} characters`,
        );
      }
      inbox.push(prompt);
      inboxes.set(id, inbox);
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
      resumeReasons.set(id, 'budget');
      queue.push(resumed);
      pump();
      return (await store.getById(id))!;
    },

    /** Cancels a queued, running or paused task; a finished task is returned as it is. */
    async cancel(tenant: string, id: string): Promise<TaskRow> {
      const row = await this.get(tenant, id);
      if (row.status === 'paused') return endQueued(row, 'the task was cancelled while paused');
      // A queued task, or a resumed one still waiting for a slot (it is `running` since before the restart).
      if ((row.status === 'queued' || row.status === 'running') && queue.remove((t) => t.id === id)) {
        inboxes.delete(id);
        updateGauges();
        return endQueued(row, 'the task was cancelled before it started');
      }
      active.get(id)?.controller.abort(new TaskAbort('cancelled', 'the task was cancelled'));
      return (await store.getById(id))!;
    },

    /**
     * The database cannot be written: running tasks are stopped (their tokens could not be billed
     * any more) and end as soon as their end can be stored; queued ones wait.
     */
    storageFailed(fault: StorageFault) {
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
      let interrupted = 0;
      let requeued = 0;
      let resumed = 0;
      for (const row of await store.unfinished()) {
        if (row.status === 'queued') {
          queue.push(row);
          requeued++;
          continue;
        }
        const def = registry.get(row.subagentType);
        if (deps.recovery.mode === 'resume' && def?.kind === 'model' && row.resumes < deps.recovery.maxResumes) {
          await store.countResume(row.id);
          queue.push((await store.getById(row.id))!);
          resumed++;
          continue;
        }
        // It ended when its last event was stored, not when the service came back.
        const endedAt = Math.max(row.startedAt ?? row.createdAt, (await deps.events.lastAt(row.id)) ?? 0);
        const why = row.resumes > 0 ? `the service stopped while the task was running (${row.resumes} resumes already)` : 'the service stopped while the task was running';
        await finishTask(deps, row, { ...failed('interrupted', why), summary: row.summary }, endedAt);
        interrupted++;
      }
      await expirePaused();
      pump();
      return { interrupted, requeued, resumed };
    },

    stats() {
      return { queued: queue.size, running: active.size };
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
      const pending = [...active.keys()].map((id) => this.waitForEnd(id));
      if (pending.length > 0) {
        const grace = new Promise((r) => setTimeout(r, graceMs).unref());
        await Promise.race([Promise.all(pending), grace]);
        for (const a of active.values()) {
          a.controller.abort(
            deps.recovery.mode === 'resume' && a.resumable
              ? new TaskAbort('handed_over', 'the service stopped; the next start resumes the task')
              : new TaskAbort('interrupted', 'the service stopped while the task was running'),
          );
        }
        await Promise.all(pending);
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
