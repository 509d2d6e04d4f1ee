import { createHash, randomUUID } from 'node:crypto';
import { readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { AppError } from '../../errors/app-error.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import type { LifecycleStore } from '../../store/lifecycle-store.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { StorageGuard } from '../../store/storage-guard.ts';
import { createTicker } from '../../util/ticker.ts';
import { eraseUserMemories, newestIn, removeMemories } from '../../workspace/memory.ts';

/** Tasks one transaction purges: short enough that no write waits long behind it. */
const BATCH = 50;
/** How often the retention sweep looks for tasks past RETENTION_DAYS. */
const SWEEP_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** `erased:` and the first 16 hex digits of the id's SHA-256: what an erased user's usage is kept under. */
export const erasedIdOf = (userId: string) => `erased:${createHash('sha256').update(userId).digest('hex').slice(0, 16)}`;

export interface LifecycleDeps {
  lifecycle: LifecycleStore;
  /** A task of the tenant (404 for an unknown one or another tenant's). */
  get(tenant: string, id: string): Promise<TaskRow>;
  metrics: Metrics;
  storage: StorageGuard;
  logger: Logger;
  now: () => number;
  /** RETENTION_DAYS: finished tasks older than that are purged; null: kept. */
  retentionDays: number | null;
  /** WORKSPACE_RETENTION_DAYS: workspaces untouched that long are removed; null: kept. */
  workspaceRetentionDays: number | null;
  /** WORKSPACES_DIR, and whether it holds a folder per tenant (`@<tenant>`, with API_KEYS). */
  workspacesDir: string;
  multiTenant: boolean;
  /** MEMORY_RETENTION_DAYS: memory folders nothing was written to that long are removed; null: kept. */
  memoryRetentionDays: number | null;
  /**
   * After content was removed: its old bytes out of the database's files where the engine allows
   * (SQLite's WAL); false when that could not be done now.
   */
  scrub?: () => Promise<boolean>;
}

/**
 * Data lifecycle: purging a finished task's content (`DELETE /tasks/:id`), erasing a user
 * (`DELETE /users/:userId`: their tasks and their memory folders), and the retention sweeps
 * (RETENTION_DAYS, WORKSPACE_RETENTION_DAYS, MEMORY_RETENTION_DAYS), each keeping the money:
 * usage records, billed calls and roll-ups stay, an erased user's under `erased:<hash>`.
 */
export function createLifecycleSystem(deps: LifecycleDeps) {
  const { lifecycle } = deps;
  let sweeping: Promise<void> | null = null;
  const run = () => {
    sweeping ??= sweep()
      .then(() => sweepWorkspaces())
      .then(() => sweepMemories())
      .then(() => undefined)
      .catch((err: unknown) => deps.logger.error({ err }, 'the retention sweep failed; it runs again within the hour'))
      .finally(() => (sweeping = null));
  };
  const ticker = createTicker({ everyMs: SWEEP_MS, tick: run });

  /** Once content was removed, its bytes go from the files too (said in the log when they cannot now). */
  async function scrub(): Promise<void> {
    if (deps.scrub && !(await deps.scrub()))
      deps.logger.warn('removed content could not be scrubbed from the WAL file now (busy); the next purge or restart does it');
  }

  /** Purges what ended before the cutoff, a batch per transaction, yielding between batches. */
  async function sweep(): Promise<void> {
    if (deps.retentionDays === null || deps.storage.fault) return;
    const cutoff = deps.now() - deps.retentionDays * DAY_MS;
    let total = 0;
    for (;;) {
      const purged = await lifecycle.purgeEndedBefore(cutoff, BATCH, deps.now());
      total += purged;
      if (purged > 0) deps.metrics.tasksPurged('retention', purged);
      if (purged < BATCH) break;
      await new Promise((r) => setImmediate(r));
    }
    if (total > 0) await scrub();
  }

  /**
   * Removes workspaces nobody touched for WORKSPACE_RETENTION_DAYS: no task of their parent created
   * or ended since, no file changed since, and no task of theirs unfinished. A workspace is first
   * renamed away (atomically), so a task that starts meanwhile gets a fresh folder, never half of
   * an old one.
   */
  /** Each tenant's workspaces folder (`WORKSPACES_DIR` itself without API_KEYS). */
  async function tenantDirs(): Promise<Array<{ tenant: string; dir: string }>> {
    return deps.multiTenant
      ? (await readdir(deps.workspacesDir).catch(() => []))
          .filter((n) => n.startsWith('@'))
          .map((n) => ({ tenant: n.slice(1), dir: path.join(deps.workspacesDir, n) }))
      : [{ tenant: 'default', dir: deps.workspacesDir }];
  }

  /** The folder of a tenant's workspaces and memories. */
  const tenantDir = (tenant: string) => (deps.multiTenant ? path.join(deps.workspacesDir, `@${tenant}`) : deps.workspacesDir);

  /** Removes memory folders nothing was written to for MEMORY_RETENTION_DAYS. */
  async function sweepMemories(): Promise<number> {
    if (deps.memoryRetentionDays === null) return 0;
    const cutoff = deps.now() - deps.memoryRetentionDays * DAY_MS;
    let removed = 0;
    for (const { dir } of await tenantDirs()) {
      removed += await removeMemories(dir, { untouchedSince: cutoff });
      await new Promise((r) => setImmediate(r));
    }
    if (removed > 0) deps.logger.info({ removed }, 'removed memory folders past MEMORY_RETENTION_DAYS');
    return removed;
  }

  async function sweepWorkspaces(): Promise<number> {
    if (deps.workspaceRetentionDays === null) return 0;
    const cutoff = deps.now() - deps.workspaceRetentionDays * DAY_MS;
    let removed = 0;
    for (const { tenant, dir } of await tenantDirs()) {
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        // `@tenant` and `#worktrees` folders are not workspaces; a link is never followed.
        if (!entry.isDirectory() || /^[@#.]/.test(entry.name)) continue;
        const folder = path.join(dir, entry.name);
        const activity = await lifecycle.parentActivity(tenant, entry.name);
        if (activity.open > 0 || (activity.last !== null && activity.last >= cutoff)) continue;
        const newest = await newestIn(folder).catch(() => null);
        if (newest === null || newest >= cutoff) continue;
        const away = path.join(dir, `.removing-${randomUUID()}`);
        await rename(folder, away);
        await rm(away, { recursive: true, force: true });
        // The parent's memories (`memory: parent`) go with its workspace.
        await removeMemories(dir, { scope: 'parent', key: entry.name });
        removed++;
      }
      await new Promise((r) => setImmediate(r));
    }
    if (removed > 0) deps.logger.info({ removed }, 'removed workspaces past WORKSPACE_RETENTION_DAYS');
    deps.metrics.workspacesRemoved(removed);
    return removed;
  }

  return {
    /** Purges a finished task of the tenant: 409 while it runs (cancel it first). */
    async deleteTask(tenant: string, id: string): Promise<TaskRow> {
      const row = await deps.get(tenant, id);
      const purged = await lifecycle.purge(row.id, deps.now());
      if (!purged) throw new AppError(409, 'task_not_finished', `task ${id} is ${row.status}: cancel it (POST /tasks/${id}/cancel) before deleting it`);
      if (row.purgedAt === null) {
        deps.metrics.tasksPurged('delete', 1);
        await scrub();
      }
      return deps.get(tenant, id);
    },

    /**
     * Erases a user of the tenant: every task purged, its usage kept under `erased:<hash>`. 409
     * while one of its tasks has not finished.
     */
    async eraseUser(tenant: string, userId: string): Promise<{ tasks: number; events: number; memories: number; erasedAs: string }> {
      const erased = erasedIdOf(userId);
      const { ids, unfinished } = await lifecycle.tasksOfUser(tenant, userId);
      if (unfinished > 0)
        throw new AppError(409, 'user_has_unfinished_tasks', `${unfinished} task(s) of user ${userId} have not finished: cancel them, then erase the user`);
      let tasks = 0;
      let events = 0;
      for (let i = 0; i < ids.length; i += BATCH) {
        const done = await lifecycle.eraseTasks(ids.slice(i, i + BATCH), erased, deps.now());
        tasks += done.tasks;
        events += done.events;
      }
      await lifecycle.eraseUsage(tenant, userId, erased);
      // Their memory folders (`memory: user`), of every definition.
      const memories = await eraseUserMemories(tenantDir(tenant), userId);
      deps.metrics.tasksPurged('erasure', tasks);
      await scrub();
      return { tasks, events, memories, erasedAs: erased };
    },

    start(): void {
      if ((deps.retentionDays === null && deps.workspaceRetentionDays === null && deps.memoryRetentionDays === null) || ticker.running) return;
      ticker.start();
      run();
    },

    /** One sweep of tasks, one of workspaces and one of memories, now (tests, and `start`). */
    sweep,
    sweepWorkspaces,
    sweepMemories,

    async close(): Promise<void> {
      ticker.stop();
      await sweeping;
    },
  };
}

export type LifecycleSystem = ReturnType<typeof createLifecycleSystem>;
