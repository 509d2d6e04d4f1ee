import type { Logger } from 'pino';
import { CHANNELS, type ClusterStore } from '../../store/cluster-store.ts';
import type { TaskRow } from '../../store/schema.ts';
import { createFairQueue } from './fair-queue.ts';
import type { ResumeReason } from './task-resources.ts';

/**
 * Where tasks wait for a slot: this process's fair queue (SQLite: one process runs everything), or
 * the tasks table every instance shares (PostgreSQL), claimed with the same fairness across them.
 */
export interface Scheduler {
  /** A stored task may start: a queued one, or a `running` one to resume (`reason`). */
  offer(row: TaskRow, reason?: ResumeReason): void;
  /**
   * The next task to start here, now this instance's (undefined: none may start). `last`: no
   * other may start now, so the caller need not ask again until it is told something changed.
   * `alone`: no other task waits at all, not even for its tenant's quota.
   */
  next(): Promise<{ row: TaskRow; reason?: ResumeReason; last?: boolean; alone?: boolean } | undefined>;
  /**
   * A task `next` gave has stopped running here. `idle`: nothing waited when this instance last
   * looked, and nothing was heard of since (so the freed slot need not be announced).
   */
  done(row: TaskRow, idle: boolean): void;
  /**
   * A running task waits for a child of its own (`on`) or no longer does: while it waits it does
   * not count against its tenant's quota here (the cluster counts running tasks in the database).
   */
  lend(row: TaskRow, on: boolean): void | Promise<void>;
  /** Takes a waiting task out, to cancel it; false when it is not waiting. */
  withdraw(id: string): Promise<boolean>;
  /** Tasks waiting (the cluster's: counted in the database), in all and of one tenant. */
  waiting(tenant: string): Promise<{ all: number; tenant: number }>;
}

/** The fair queue of one process: fairness and quotas between its own tasks. */
export function localScheduler(maxRunningPerTenant: number): Scheduler {
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
      return { row, reason, alone: queue.size === 0 };
    },
    done: (row) => queue.done(row),
    lend: (row, on) => (on ? queue.done(row) : queue.retake(row)),
    async withdraw(id) {
      reasons.delete(id);
      return queue.remove((t) => t.id === id);
    },
    waiting: async (tenant) => ({ all: queue.size, tenant: queue.queuedIn(tenant) }),
  };
}

export interface ClusterSchedulerOptions {
  maxRunningPerTenant: number;
  leaseMs: number;
  now: () => number;
  logger: Logger;
  /** Tasks still running (or stopping) here: never claimed again meanwhile. */
  busy: () => string[];
}

/** The shared queue: claims in the database; whoever has a free slot takes the fairest task. */
export function clusterScheduler(cluster: ClusterStore, opts: ClusterSchedulerOptions): Scheduler {
  const wake = () => void cluster.notify(CHANNELS.wake, cluster.instanceId).catch((err) => opts.logger.warn({ err }, 'could not wake the other instances'));
  return {
    // Stored without an owner, it is waiting already: the other instances are told.
    offer: wake,
    async next() {
      const claimed = await cluster.claim(opts.maxRunningPerTenant, opts.now() + opts.leaseMs, opts.busy());
      if (!claimed) return undefined;
      const { row, last, alone } = claimed;
      return { row, reason: row.status === 'running' ? ((row.resumeReason as ResumeReason | null) ?? 'restart') : undefined, last, alone };
    },
    // A slot of its tenant is free: a task of it waiting for its quota may start elsewhere (when
    // nothing waits, nothing can: the instances are not woken for it).
    done: (_row, idle) => {
      if (!idle) wake();
    },
    lend: (row, on) => cluster.lend(row.id, on),
    withdraw: (id) => cluster.claimWaiting(id, opts.now() + opts.leaseMs),
    waiting: (tenant) => cluster.waiting(tenant),
  };
}
