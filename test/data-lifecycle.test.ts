import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';
import { openStream } from './support/ws-client';

/**
 * Data lifecycle and access, through the public surface: purging a task, erasing a user, the
 * retention sweep, roles of keys, keys made at run time, the audit log.
 */
const ADMIN = 'admin-key-0123456789';
const SUBMIT = 'submit-key-0123456789';
const READ = 'read-key-0123456789';
const OTHER = 'other-tenant-admin-0123';
let svc: TestService;

const call = (key: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  svc.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload && { payload }) });

/** A task of `userId` that says something and completes; its id once it ended. */
async function finishedTask(marker: string, userId: string, parentTaskId = 'T-life'): Promise<string> {
  svc.model.script(marker, [
    {
      text: `secret words of ${marker}`,
      toolCalls: [{ name: 'complete', args: { summary: `summary of ${marker}`, paths: [] } }],
      usage: { input: 100, output: 10 },
    },
  ]);
  const res = await call(ADMIN, 'POST', '/tasks', taskBody({ prompt: `${marker}: private prompt`, context: { parentTaskId, userId } }));
  expect(res.statusCode, res.body).toBe(202);
  const id = res.json().id as string;
  expect((await taskEnd(svc, id, { key: ADMIN })).status).toBe('completed');
  return id;
}

beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: `${ADMIN}:acme,${SUBMIT}:acme:submit,${READ}:acme:read,${OTHER}:globex` } });
});
afterAll(() => svc?.close());

describe('DELETE /tasks/:id', () => {
  it("purges a finished task's content and keeps its usage; a running one is 409, another tenant's 404", async () => {
    svc.model.script('LIFE-RUNNING', [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 30' } }] }]);
    const running = (await call(ADMIN, 'POST', '/tasks', taskBody({ prompt: 'LIFE-RUNNING', context: { parentTaskId: 'T-life', userId: 'u-run' } }))).json().id;
    await until(async () => (await call(ADMIN, 'GET', `/tasks/${running}`)).json().status === 'running');
    const refused = await call(ADMIN, 'DELETE', `/tasks/${running}`);
    expect([refused.statusCode, refused.json().error.code]).toEqual([409, 'task_not_finished']);
    await call(ADMIN, 'POST', `/tasks/${running}/cancel`);

    const id = await finishedTask('LIFE-PURGE', 'u-purge');
    const before = (await call(ADMIN, 'GET', `/tasks/${id}`)).json();
    expect(before).toMatchObject({ purged: false, summary: 'summary of LIFE-PURGE' });
    expect((await call(OTHER, 'DELETE', `/tasks/${id}`)).statusCode).toBe(404);

    const purged = await call(ADMIN, 'DELETE', `/tasks/${id}`);
    expect(purged.statusCode, purged.body).toBe(200);
    expect(purged.json()).toMatchObject({ id, status: 'completed', purged: true, summary: null, output: null, usage: before.usage });
    // Its conversation and events are gone; its stream has nothing to say (204).
    expect((await call(ADMIN, 'GET', `/tasks/${id}/messages`)).json().messages).toEqual([]);
    expect((await call(ADMIN, 'GET', `/tasks/${id}/events`)).statusCode).toBe(204);
    const socket = await openStream(`${svc.url.replace('http', 'ws')}/tasks/${id}/stream?access_token=${ADMIN}`);
    expect((await socket.closed).code).toBe(1000);
    expect(socket.messages).toEqual([]);
    // Its usage record stays, billed as before.
    const record = (await call(ADMIN, 'GET', '/usage/records?userId=u-purge')).json().records[0];
    expect(record).toMatchObject({ taskId: id, inputTokens: 100, outputTokens: 10 });
    // Again: nothing more to do.
    expect((await call(ADMIN, 'DELETE', `/tasks/${id}`)).statusCode).toBe(200);
    // Its conversation cannot be continued.
    const follow = await call(ADMIN, 'POST', '/tasks', taskBody({ task_id: id, context: { parentTaskId: 'T-life', userId: 'u-purge' } }));
    expect([follow.statusCode, follow.json().error.code]).toEqual([409, 'task_purged']);
    // Nothing of its content is left in the database.
    const stored = JSON.stringify(await svc.db.sql.all('SELECT * FROM tasks WHERE id = ?', [id]));
    expect(stored).not.toContain('private prompt');
    expect(stored).not.toContain('summary of LIFE-PURGE');
    expect(await svc.db.sql.all('SELECT * FROM task_events WHERE task_id = ?', [id])).toEqual([]);
  });
});

describe('DELETE /users/:userId', () => {
  it('purges every task of the user, keeps their usage under erased:<hash>, and the roll-ups add up as before', async () => {
    const a = await finishedTask('LIFE-ERASE-1', 'u-erase');
    const b = await finishedTask('LIFE-ERASE-2', 'u-erase');
    await finishedTask('LIFE-KEEP', 'u-keep');
    await call(ADMIN, 'PUT', '/budgets/user/u-erase', { maxTokens: 100_000 });
    const totalsBefore = (await call(ADMIN, 'GET', '/usage')).json().totals;
    const byUserBefore = (await call(ADMIN, 'GET', '/usage?groupBy=user')).json().groups;

    const res = await call(ADMIN, 'DELETE', '/users/u-erase');
    expect(res.statusCode, res.body).toBe(200);
    const erasedAs = 'erased:' + (await import('node:crypto')).createHash('sha256').update('u-erase').digest('hex').slice(0, 16);
    expect(res.json()).toEqual({ tasks: 2, events: expect.any(Number), memories: 0, erasedAs });
    expect(res.json().events).toBeGreaterThan(4);

    for (const id of [a, b]) expect((await call(ADMIN, 'GET', `/tasks/${id}`)).json()).toMatchObject({ purged: true, context: { userId: erasedAs } });
    expect((await call(ADMIN, 'GET', '/tasks?userId=u-erase')).json().tasks).toEqual([]);
    const records = (await call(ADMIN, 'GET', `/usage/records?userId=${erasedAs}`)).json().records;
    expect(records.map((r: { taskId: string }) => r.taskId).sort()).toEqual([a, b].sort());
    expect((await call(ADMIN, 'GET', '/usage?userId=u-erase')).json().totals.tasks).toBe(0);
    // The same totals; the user's group now under the erased id.
    expect((await call(ADMIN, 'GET', '/usage')).json().totals).toEqual(totalsBefore);
    const byUser = (await call(ADMIN, 'GET', '/usage?groupBy=user')).json().groups;
    const was = byUserBefore.find((g: { key: string }) => g.key === 'u-erase');
    expect(byUser.find((g: { key: string }) => g.key === erasedAs)).toEqual({ ...was, key: erasedAs });
    expect(byUser.find((g: { key: string }) => g.key === 'u-erase')).toBeUndefined();
    expect((await call(ADMIN, 'GET', `/budgets/user/${encodeURIComponent(erasedAs)}`)).json().maxTokens).toBe(100_000);
    // Nothing of the user's id is left on their tasks or records.
    expect(JSON.stringify(await svc.db.sql.all("SELECT * FROM tasks WHERE user_id = 'u-erase'"))).toBe('[]');
    expect(JSON.stringify(await svc.db.sql.all("SELECT * FROM subagent_records WHERE user_id = 'u-erase'"))).toBe('[]');
    // Again: nothing left to erase.
    expect((await call(ADMIN, 'DELETE', '/users/u-erase')).json()).toMatchObject({ tasks: 0, events: 0 });
  });

  it('is 409 while a task of the user has not finished', async () => {
    svc.model.script('LIFE-BUSY', [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 30' } }] }]);
    const id = (await call(ADMIN, 'POST', '/tasks', taskBody({ prompt: 'LIFE-BUSY', context: { parentTaskId: 'T-life', userId: 'u-busy' } }))).json().id;
    const res = await call(ADMIN, 'DELETE', '/users/u-busy');
    expect([res.statusCode, res.json().error.code]).toEqual([409, 'user_has_unfinished_tasks']);
    await call(ADMIN, 'POST', `/tasks/${id}/cancel`);
  });
});

describe('retention (RETENTION_DAYS)', () => {
  it('purges finished tasks that ended before the cutoff, and no other', async () => {
    const old = await finishedTask('LIFE-OLD', 'u-ret');
    const fresh = await finishedTask('LIFE-FRESH', 'u-ret');
    // Ended 40 days ago, as far as the database knows.
    await svc.db.sql.run('UPDATE tasks SET completed_at = ? WHERE id = ?', [Date.now() - 40 * 86_400_000, old]);
    const sweeper = (await import('../src/tasks/systems/lifecycle-system')).createLifecycleSystem({
      lifecycle: (await import('../src/store/lifecycle-store')).createLifecycleStore(svc.db.sql),
      get: (tenant, id) => svc.app.tasks.get(tenant, id),
      metrics: svc.app.metrics,
      storage: svc.app.storage,
      logger: svc.app.logger,
      now: Date.now,
      retentionDays: 30,
      workspaceRetentionDays: 30,
      memoryRetentionDays: null,
      workspacesDir: svc.config.workspacesDir,
      multiTenant: true,
    });
    await sweeper.sweep();
    expect((await call(ADMIN, 'GET', `/tasks/${old}`)).json().purged).toBe(true);
    expect((await call(ADMIN, 'GET', `/tasks/${fresh}`)).json().purged).toBe(false);
    expect((await call(ADMIN, 'GET', '/metrics')).body).toMatch(/subagentd_tasks_purged_total\{reason="retention"\} 1/);

    // Workspaces: one untouched for 40 days (its task and its files), one whose file changed today,
    // one whose parent's task is recent.
    const aged = Date.now() - 40 * 86_400_000;
    const root = path.join(svc.config.workspacesDir, '@acme');
    const stale = await finishedTask('LIFE-WS-STALE', 'u-ret', 'T-ws-stale');
    const touched = await finishedTask('LIFE-WS-TOUCHED', 'u-ret', 'T-ws-touched');
    await finishedTask('LIFE-WS-RECENT', 'u-ret', 'T-ws-recent');
    for (const id of [stale, touched]) await svc.db.sql.run('UPDATE tasks SET created_at = ?, completed_at = ? WHERE id = ?', [aged, aged, id]);
    for (const parent of ['T-ws-stale', 'T-ws-touched', 'T-ws-recent']) {
      mkdirSync(path.join(root, parent, 'deep'), { recursive: true });
      writeFileSync(path.join(root, parent, 'deep', 'notes.md'), 'notes');
      for (const p of [path.join(root, parent, 'deep', 'notes.md'), path.join(root, parent, 'deep'), path.join(root, parent)])
        utimesSync(p, aged / 1000, aged / 1000);
    }
    writeFileSync(path.join(root, 'T-ws-touched', 'deep', 'notes.md'), 'changed today');
    expect(await sweeper.sweepWorkspaces()).toBe(1);
    expect(existsSync(path.join(root, 'T-ws-stale'))).toBe(false);
    expect(existsSync(path.join(root, 'T-ws-touched', 'deep', 'notes.md'))).toBe(true);
    expect(existsSync(path.join(root, 'T-ws-recent', 'deep', 'notes.md'))).toBe(true);
    expect(readdirSync(root).filter((n) => n.startsWith('.removing'))).toEqual([]);
  });
});

describe('roles of keys', () => {
  it('read keys only read, submit keys run tasks but have no budgets, webhooks or keys and delete nothing: 403 forbidden', async () => {
    const id = await finishedTask('LIFE-ROLES', 'u-roles');
    const expectations: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, object | undefined, number]> = [
      [READ, 'GET', '/tasks', undefined, 200],
      [READ, 'GET', `/tasks/${id}`, undefined, 200],
      [READ, 'GET', '/usage', undefined, 200],
      [READ, 'POST', '/tasks', taskBody({ prompt: 'LIFE-NEVER' }), 403],
      [READ, 'POST', `/tasks/${id}/cancel`, {}, 403],
      [SUBMIT, 'POST', `/tasks/${id}/cancel`, {}, 202],
      [SUBMIT, 'PUT', '/budgets/user/u-roles', { maxTokens: 5 }, 403],
      [SUBMIT, 'POST', '/webhooks', { url: 'https://example.com/hook' }, 403],
      [SUBMIT, 'GET', '/budgets/user/u-roles', undefined, 403],
      [SUBMIT, 'GET', '/webhooks', undefined, 403],
      [SUBMIT, 'GET', '/usage', undefined, 200],
      [READ, 'GET', '/webhooks', undefined, 200],
      [SUBMIT, 'DELETE', `/tasks/${id}`, undefined, 403],
      [SUBMIT, 'DELETE', '/users/u-roles', undefined, 403],
      [SUBMIT, 'GET', '/audit', undefined, 403],
      [SUBMIT, 'POST', '/keys', { role: 'admin' }, 403],
      [ADMIN, 'PUT', '/budgets/user/u-roles', { maxTokens: 5 }, 200],
    ];
    for (const [key, method, url, body, status] of expectations) {
      const res = await call(key, method, url, body);
      expect([key, method, url, res.statusCode], res.body).toEqual([key, method, url, status]);
      if (status === 403) expect(res.json().error.code).toBe('forbidden');
    }
    svc.model.script('LIFE-SUBMIT', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    expect((await call(SUBMIT, 'POST', '/tasks', taskBody({ prompt: 'LIFE-SUBMIT' }))).statusCode).toBe(202);
  });
});

describe('keys made at run time, and the audit log', () => {
  it('POST /keys shows a key once; it works at once with its role; DELETE revokes it', async () => {
    const made = await call(ADMIN, 'POST', '/keys', { role: 'read', name: 'dashboard' });
    expect(made.statusCode, made.body).toBe(201);
    const { key, id, fingerprint } = made.json();
    expect(made.json()).toMatchObject({ tenant: 'acme', role: 'read', name: 'dashboard', revokedAt: null });
    expect(key).toMatch(/^sk_/);
    expect((await call(key, 'GET', '/tasks')).statusCode).toBe(200);
    expect((await call(key, 'POST', '/tasks', taskBody())).statusCode).toBe(403);
    const listed = (await call(ADMIN, 'GET', '/keys')).json().keys;
    expect(listed).toEqual([expect.objectContaining({ id, fingerprint, role: 'read' })]);
    expect(JSON.stringify(listed)).not.toContain(key);
    // Another tenant's admin sees none of it and cannot revoke it.
    expect((await call(OTHER, 'GET', '/keys')).json().keys).toEqual([]);
    expect((await call(OTHER, 'DELETE', `/keys/${id}`)).statusCode).toBe(404);

    // A key never used before its revocation is refused at once; a used one within KEY_CACHE_MS.
    const unused = (await call(ADMIN, 'POST', '/keys', { role: 'submit' })).json();
    expect((await call(ADMIN, 'DELETE', `/keys/${unused.id}`)).statusCode).toBe(204);
    expect((await call(unused.key, 'GET', '/tasks')).statusCode).toBe(401);
    expect((await call(ADMIN, 'DELETE', `/keys/${id}`)).statusCode).toBe(204);
    await new Promise((r) => setTimeout(r, 5_200));
    expect((await call(key, 'GET', '/tasks')).statusCode).toBe(401);
  }, 20_000);

  it('GET /audit lists who changed what, newest first, by fingerprint, never the key', async () => {
    const { entries } = (await call(ADMIN, 'GET', '/audit?limit=500')).json();
    const actions = entries.map((e: { action: string }) => e.action);
    for (const a of ['task.purged', 'user.erased', 'budget.set', 'key.created', 'key.revoked']) expect(actions).toContain(a);
    const erased = entries.find((e: { action: string }) => e.action === 'user.erased');
    expect(erased.target).toMatch(/^\/users\/erased:[0-9a-f]{16}$/);
    expect(entries[0].key).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(JSON.stringify(entries)).not.toContain(ADMIN);
    expect(JSON.stringify(entries)).not.toContain('u-erase');
    const created = entries.find((e: { action: string }) => e.action === 'key.created');
    expect(created.target).toMatch(/^\/keys\/key_/);
    // Newest first, and paged.
    const firstTwo = (await call(ADMIN, 'GET', '/audit?limit=2')).json();
    expect(firstTwo.entries).toEqual(entries.slice(0, 2));
    expect((await call(ADMIN, 'GET', `/audit?limit=2&cursor=${firstTwo.nextCursor}`)).json().entries).toEqual(entries.slice(2, 4));
    // Another tenant's log is its own.
    expect((await call(OTHER, 'GET', '/audit')).json().entries).toEqual([]);
  });
});
