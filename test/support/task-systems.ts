import pino from 'pino';
import { builtinAgents, createAgentRegistry } from '../../src/definitions/agent-registry.ts';
import { createEventLog } from '../../src/events/event-log.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createBudgets } from '../../src/money/budgets.ts';
import type { CreateTaskBody, Pause } from '../../src/shapes/task.ts';
import type { ClusterStore } from '../../src/store/cluster-store.ts';
import { openSqlite } from '../../src/store/database.ts';
import { createStorageGuard } from '../../src/store/storage-guard.ts';
import { createTaskStore } from '../../src/store/task-store.ts';
import { createReplayStore } from '../../src/store/replay-store.ts';
import { newTaskRow } from '../../src/tasks/systems/admission.ts';
import { createLiveness } from '../../src/tasks/run/liveness.ts';
import { createTaskResources, type TaskServiceDeps } from '../../src/tasks/systems/task-resources.ts';

/**
 * The task systems over a real store (SQLite in memory) and a clock the test moves, for unit tests
 * of one system at a time; `runner` is never asked (no system under test starts a run).
 */
export function taskSystems(overrides: Partial<TaskServiceDeps> = {}) {
  const db = openSqlite(':memory:');
  const storage = createStorageGuard();
  const store = createTaskStore(db.sql);
  const clock = { now: 1_000_000 };
  const now = () => clock.now;
  const events = createEventLog(db.sql, { storage, now });
  const deps: TaskServiceDeps = {
    store,
    replays: createReplayStore(db.sql),
    events,
    registry: createAgentRegistry(builtinAgents({ defaultModel: 'm', smallModel: 's' })),
    runner: { run: () => Promise.reject(new Error('no run in a unit test')) },
    metrics: createMetrics(),
    logger: pino({ level: 'silent' }),
    now,
    workspacesDirOf: () => '/nonexistent/workspaces',
    maxConcurrent: 4,
    maxQueued: 100,
    maxConcurrentPerTenant: 4,
    maxQueuedPerTenant: 100,
    taskTimeoutMs: 60_000,
    budgets: createBudgets(db.sql),
    liveness: createLiveness(now),
    pausedTtlMs: 10_000,
    recovery: { mode: 'resume', maxResumes: 2 },
    storage,
    ...overrides,
  };
  const res = createTaskResources(deps);

  /** Stores a task of `type` (queued), then started (`running`) or paused at a budget if asked. */
  async function task(id: string, type: string, state: 'queued' | 'running' | 'paused' = 'queued', resumes = 0) {
    const body = { subagent_type: type, description: id, prompt: 'p', context: { parentTaskId: 'P', userId: 'u' } } as CreateTaskBody;
    const row = newTaskRow(id, 'default', body, clock.now, null, null, null);
    await store.insert(row);
    if (state !== 'queued') await store.markStarted(row, 'm', clock.now);
    for (let i = 0; i < resumes; i++) await store.countResume(id);
    if (state === 'paused') {
      const why: Pause = { reason: 'budget', budget: 'task', measure: 'tokens', limit: 10, spent: 12, since: new Date(clock.now).toISOString() };
      await store.pause(id, why, clock.now);
    }
    return (await store.getById(id))!;
  }

  return { db, deps, res, store, events, clock, task, close: () => db.close() };
}

/** A ClusterStore whose answers a test sets, recording what it was asked. */
export function fakeCluster(instanceId = 'me') {
  const calls: string[] = [];
  const cluster = {
    instanceId,
    calls,
    held: new Set<string>(),
    expired: [] as Awaited<ReturnType<ClusterStore['takeExpired']>>,
    /** While set, `renew` waits for it (the database slow to answer). */
    renewGate: null as Promise<void> | null,
    lost: [] as string[],
    async renewOne(id: string) {
      calls.push(`renewOne ${id}`);
      return cluster.held.has(id);
    },
    async renew(mine: Array<{ id: string }>) {
      calls.push(`renew ${mine.map((m) => m.id).join(',')}`);
      if (cluster.renewGate) await cluster.renewGate;
      return cluster.lost;
    },
    async takeExpired() {
      calls.push('takeExpired');
      const rows = cluster.expired;
      cluster.expired = [];
      return rows;
    },
    async release(id: string, reason: 'restart' | null) {
      calls.push(`release ${id} ${reason}`);
    },
    async notify(channel: string) {
      calls.push(`notify ${channel}`);
    },
  };
  return cluster;
}
