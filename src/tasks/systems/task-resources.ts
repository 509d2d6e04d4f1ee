import type { WorkspacesDirOf } from '../../workspace/workspace.ts';
import type { Logger } from 'pino';
import type { ModelProvider } from '../../loop/model-provider.ts';
import type { AgentRegistry } from '../../definitions/agent-registry.ts';
import type { EventLog } from '../../events/event-log.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import type { Budgets } from '../../money/budgets.ts';
import type { ClusterStore } from '../../store/cluster-store.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { StorageGuard } from '../../store/storage-guard.ts';
import type { ReplayStore } from '../../store/replay-store.ts';
import type { TaskStore } from '../../store/task-store.ts';
import type { Ending } from '../writes/finish-task.ts';
import { createTaskWrites, type TaskWrites } from '../writes/task-writes.ts';
import type { Liveness } from '../run/liveness.ts';
import type { TaskRunner } from '../run/task-runner.ts';
import { createWaiters, type Waiters } from './waiters.ts';
import type { ReadOns } from '../../loop/model-guard.ts';
import type { SliceLane } from '../../util/turns.ts';

export interface TaskServiceDeps {
  store: TaskStore;
  events: EventLog;
  registry: AgentRegistry;
  /** Which provider a model id names: `options.model` naming an unknown one is refused at admission. */
  models?: Pick<ModelProvider, 'resolve'>;
  runner: TaskRunner;
  metrics: Metrics;
  logger: Logger;
  now: () => number;
  /** Folder holding the workspaces of a tenant (a task's `options.cwd` is checked against its workspace). */
  workspacesDirOf: WorkspacesDirOf;
  maxConcurrent: number;
  maxQueued: number;
  maxConcurrentPerTenant: number;
  maxQueuedPerTenant: number;
  taskTimeoutMs: number;
  budgets: Budgets;
  liveness: Liveness;
  /** A task paused longer than this ends `aborted` / `budget_exceeded`. */
  pausedTtlMs: number;
  /** How long a finished worktree task's copy is kept (WORKTREE_TTL_MS). */
  worktreeTtlMs?: number;
  /** What `recover` does with a task a previous process left running. */
  recovery: { mode: 'resume' | 'interrupt'; maxResumes: number };
  storage: StorageGuard;
  /** Batches of replays (`POST /replays`). */
  replays: ReplayStore;
  /** PostgreSQL: the tasks table shared with the other instances is the queue (see cluster-store.ts). */
  cluster?: { store: ClusterStore; leaseMs: number };
  /** Model calls read on after their task stopped (the runner's): `close` waits for them. */
  readOns?: ReadOns;
  /**
   * The tasks' starts' lane in the event loop's shared slice (sharedSlices): a burst of queued
   * tasks takes its share of each turn; without one, a slice of its own (10 ms).
   */
  startSlice?: SliceLane;
}

/** Why a `running` task is started again: after a restart or a takeover, or after a budget pause. */
export type ResumeReason = 'restart' | 'budget' | 'approval';

/** A task running in this process. */
export interface Active {
  /** The task as it started here. */
  row: TaskRow;
  controller: AbortController;
  timer: NodeJS.Timeout;
  /** A model task, which the next start can resume. */
  resumable: boolean;
  /** Waiting for a child task (nesting): it holds no slot meanwhile. */
  waitingOnChild?: boolean;
}

/**
 * What the task systems share (the scheduler's run, leases, recovery, pauses): the service's
 * dependencies, the tasks running here, whoever waits for an end, and one way to end a task.
 */
export interface TaskResources {
  deps: TaskServiceDeps;
  /** PostgreSQL: the shared queue and its leases; null on SQLite (one process runs everything). */
  cluster: ClusterStore | null;
  /** How long a claim or a renewal holds a task (0 on SQLite). */
  leaseMs: number;
  /** Tasks running here, by id. */
  active: Map<string, Active>;
  waiters: Waiters;
  /** The task's writes that cross domains (task-writes.ts). */
  writes: TaskWrites;
  /** Set once `close` began: nothing new starts. */
  state: { closing: boolean };
  /**
   * Ends a task (fenced by this instance's ownership on PostgreSQL: `TaskTakenOver` when another
   * instance owns it) and answers whoever waits for it.
   */
  finish(row: TaskRow, ending: Ending, at: number): Promise<TaskRow>;
  /** Ends a task without answering its waiters (the run's own end, answered by the caller). */
  record(row: TaskRow, ending: Ending, at: number): Promise<TaskRow>;
  /**
   * Told of every task that ended here (by `finish`, or its run: dispatch-system.ts): the task
   * service ends its background children (child-system.ts). A lower layer telling a higher one.
   */
  onEnd: (row: TaskRow) => void;
}

export function createTaskResources(deps: TaskServiceDeps): TaskResources {
  const cluster = deps.cluster?.store ?? null;
  const writes = createTaskWrites({ events: deps.events, instanceId: cluster?.instanceId ?? null });
  const waiters = createWaiters(deps.store);
  const record = (row: TaskRow, ending: Ending, at: number) => writes.finish(row, ending, at);
  const res: TaskResources = {
    deps,
    cluster,
    leaseMs: deps.cluster?.leaseMs ?? 0,
    active: new Map(),
    waiters,
    writes,
    state: { closing: false },
    record,
    async finish(row, ending, at) {
      const finished = await record(row, ending, at);
      waiters.settle(finished);
      res.onEnd(finished);
      return finished;
    },
    onEnd: () => {},
  };
  return res;
}
