import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { taskSystems } from '../../../test/support/task-systems.ts';
import { notFound } from '../../errors/app-error.ts';
import { zeroUsage } from '../../shapes/usage.ts';
import { createLifecycleStore } from '../../store/lifecycle-store.ts';
import { failed } from '../writes/finish-task.ts';
import { createLifecycleSystem, erasedIdOf, type LifecycleDeps } from './lifecycle-system.ts';

const DAY_MS = 86_400_000;

describe('the lifecycle system', () => {
  let dir = '';
  let close: () => Promise<void> = async () => {};
  afterEach(async () => {
    await close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function setup(settings: Partial<LifecycleDeps> = {}) {
    dir = mkdtempSync(path.join(tmpdir(), 'lifecycle-system-'));
    const sys = taskSystems();
    close = sys.close;
    const lifecycle = createLifecycleSystem({
      lifecycle: createLifecycleStore(sys.db.sql),
      get: async (tenant, id) => {
        const row = await sys.store.getById(id);
        if (!row || row.tenant !== tenant) throw notFound(`task ${id}`);
        return row;
      },
      metrics: sys.deps.metrics,
      storage: sys.deps.storage,
      logger: sys.deps.logger,
      now: sys.deps.now,
      retentionDays: null,
      workspaceRetentionDays: null,
      memoryRetentionDays: null,
      workspacesDir: dir,
      multiTenant: false,
      ...settings,
    });
    /** A task of user `u` that ran and ended now, with a step billed. */
    const ended = async (id: string) => {
      const row = await sys.task(id, 'general', 'running');
      await sys.store.addUsage(id, 1, { ...zeroUsage(), inputTokens: 100, outputTokens: 10, totalTokens: 110 }, { model: 'm', costMicroUsd: 5 }, sys.clock.now);
      return sys.res.finish(row, failed('tool_error', `task ${id} failed`), sys.clock.now);
    };
    return { sys, lifecycle, ended };
  }

  it('purges a finished task of the tenant: its content and events go, its usage stays', async () => {
    const { sys, lifecycle, ended } = setup();
    const running = await sys.task('t-running', 'general', 'running');
    await expect(lifecycle.deleteTask('default', running.id)).rejects.toMatchObject({ statusCode: 409, code: 'task_not_finished' });
    await ended('t-done');
    expect((await sys.events.read('t-done')).length).toBeGreaterThan(0);
    await expect(lifecycle.deleteTask('other-tenant', 't-done')).rejects.toMatchObject({ statusCode: 404 });
    const purged = await lifecycle.deleteTask('default', 't-done');
    expect(purged).toMatchObject({ id: 't-done', status: 'error', purgedAt: sys.clock.now, errorMessage: '(purged)' });
    expect(purged.request.prompt).not.toBe('p');
    expect(await sys.events.read('t-done')).toEqual([]);
    expect(purged).toMatchObject({ inputTokens: 100, outputTokens: 10 });
    // Again: nothing more to do, the same answer.
    expect((await lifecycle.deleteTask('default', 't-done')).purgedAt).toBe(purged.purgedAt);
  });

  it('erases a user: every task purged, the usage kept under erased:<hash>; refused while one still runs', async () => {
    const { sys, lifecycle, ended } = setup();
    await ended('t-1');
    await ended('t-2');
    const running = await sys.task('t-3', 'general', 'running');
    await expect(lifecycle.eraseUser('default', 'u')).rejects.toMatchObject({ statusCode: 409, code: 'user_has_unfinished_tasks' });
    await sys.res.finish(running, failed('cancelled', 'cancelled'), sys.clock.now);
    const erased = await lifecycle.eraseUser('default', 'u');
    expect(erased).toMatchObject({ tasks: 3, erasedAs: erasedIdOf('u') });
    expect(erased.erasedAs).toMatch(/^erased:[0-9a-f]{16}$/);
    for (const id of ['t-1', 't-2', 't-3']) expect((await sys.store.getById(id))!).toMatchObject({ userId: erased.erasedAs, purgedAt: sys.clock.now });
    const users = await sys.db.sql.all<{ user_id: string; input_tokens: number }>('SELECT user_id, input_tokens FROM subagent_records ORDER BY task_id');
    expect(users).toEqual([
      { user_id: erased.erasedAs, input_tokens: 100 },
      { user_id: erased.erasedAs, input_tokens: 100 },
      { user_id: erased.erasedAs, input_tokens: 0 },
    ]);
  });

  it('purges the tasks that ended RETENTION_DAYS ago, and only those', async () => {
    const { sys, lifecycle, ended } = setup({ retentionDays: 2 });
    await ended('t-old');
    sys.clock.now += DAY_MS;
    await ended('t-young');
    await sys.task('t-running', 'general', 'running');
    sys.clock.now += DAY_MS + 1; // t-old ended 2 days and 1 ms ago
    await lifecycle.sweep();
    expect((await sys.store.getById('t-old'))!.purgedAt).toBe(sys.clock.now);
    expect((await sys.store.getById('t-young'))!.purgedAt).toBeNull();
    expect((await sys.store.getById('t-running'))!.purgedAt).toBeNull();
  });

  it('removes workspaces nobody touched for WORKSPACE_RETENTION_DAYS, keeping those in use', async () => {
    const now = Date.now();
    const { sys, lifecycle } = setup({ workspaceRetentionDays: 1, now: () => now });
    const workspace = (name: string, ageMs: number) => {
      const folder = path.join(dir, name);
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, 'f.txt'), name);
      const t = (now - ageMs) / 1000;
      utimesSync(path.join(folder, 'f.txt'), t, t);
      utimesSync(folder, t, t);
      return folder;
    };
    const idle = workspace('P-idle', 2 * DAY_MS);
    const fresh = workspace('P-fresh', DAY_MS / 2);
    // Its files are old, but one of its tasks has not finished.
    const busy = workspace('P', 2 * DAY_MS);
    await sys.task('t-running', 'general', 'running');
    // Not a workspace: the copies of worktree tasks.
    const copies = workspace('#worktrees', 2 * DAY_MS);
    expect(await lifecycle.sweepWorkspaces()).toBe(1);
    expect(existsSync(idle)).toBe(false);
    for (const kept of [fresh, busy, copies]) expect(existsSync(kept), kept).toBe(true);
  });
});
