import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * An erased user leaves no trace of their id, however the routes that named it were spelled
 * (`/budgets/user/u%2Derase%2DME` is the user `u-erase-ME`): not in the audit log, not in stored
 * webhook deliveries, nowhere in the database. On SQLite their tasks' prompts and summaries are
 * gone from the file's bytes too, the WAL's included.
 */
const ADMIN = 'admin-key-erasure-0123456789';
const USER = 'u-erase-ME';
const ENCODED = 'u%2Derase%2DME';
let svc: TestService;

const call = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object) =>
  svc.inject({ method, url, headers: { authorization: `Bearer ${ADMIN}` }, ...(payload && { payload }) });

beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: `${ADMIN}:acme`, WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(() => svc?.close());

/** Every row of every table of the service's database, as text (one string per table). */
async function everyTable(): Promise<Record<string, string>> {
  const sql = svc.db.sql;
  const names =
    sql.dialect === 'sqlite'
      ? (await sql.all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`)).map((t) => t.name)
      : (
          await sql.all<{ name: string }>(
            `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
          )
        ).map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['tasks', 'audit_log', 'webhook_deliveries', 'budgets', 'subagent_records', 'usage_rollups']));
  const out: Record<string, string> = {};
  for (const name of names) {
    const rows = sql.dialect === 'sqlite' ? await sql.all(`SELECT * FROM "${name}"`) : await sql.all(`SELECT t::text AS row FROM "${name}" t`);
    out[name] = JSON.stringify(rows);
  }
  return out;
}

/** The tables whose text holds `needle` (case-insensitive). */
const holding = (tables: Record<string, string>, needle: string) =>
  Object.entries(tables)
    .filter(([, text]) => text.toLowerCase().includes(needle.toLowerCase()))
    .map(([name]) => name);

describe('erasing a user named percent-encoded', () => {
  it('leaves their id in no table (audit log and webhook deliveries included), and their content out of the SQLite file and its WAL', async () => {
    const marker = `MARKER-${randomBytes(8).toString('hex')}`;
    const hook = await call('POST', '/webhooks', { url: `${svc.model.url}/hook`, events: ['task.started', 'task.finished'] });
    expect(hook.statusCode, hook.body).toBe(201);

    // Routes that name the user, spelled percent-encoded, as a client library may.
    expect((await call('PUT', `/budgets/user/${ENCODED}`, { maxTokens: 1_000_000 })).statusCode).toBe(200);
    expect((await call('DELETE', `/budgets/user/${ENCODED}`)).statusCode).toBe(204);
    expect((await call('PUT', `/budgets/user/${ENCODED}`, { maxTokens: 2_000_000 })).statusCode).toBe(200);
    const audit = (await call('GET', '/audit')).json().entries.map((e: { target: string }) => e.target);
    expect(audit.filter((t: string) => t === `/budgets/user/${USER}`)).toHaveLength(3);
    // An entry as versions before this one stored it: the path as the caller spelled it.
    await svc.db.sql.run('INSERT INTO audit_log (id, tenant, at, key, action, target) VALUES (?, ?, ?, ?, ?, ?)', [
      'aud_0000000000000000000000000',
      'acme',
      Date.now(),
      'sha256:000000000000',
      'budget.set',
      `/budgets/user/${ENCODED}`,
    ]);

    svc.model.script(marker, [
      {
        text: `model words ${marker}`,
        toolCalls: [{ name: 'complete', args: { summary: `summary ${marker}`, paths: [] } }],
        usage: { input: 50, output: 5 },
      },
    ]);
    const created = await call('POST', '/tasks', taskBody({ prompt: `${marker}: the private prompt`, context: { parentTaskId: 'T-erase', userId: USER } }));
    expect(created.statusCode, created.body).toBe(202);
    const id = created.json().id as string;
    expect((await taskEnd(svc, id, { key: ADMIN })).status).toBe('completed');
    // Its deliveries are stored (the user's id in their bodies) before the erasure.
    await until(async () => (await svc.db.sql.all('SELECT id FROM webhook_deliveries WHERE task_id = ?', [id])).length === 2);
    const before = await everyTable();
    expect(holding(before, USER)).toEqual(expect.arrayContaining(['tasks', 'webhook_deliveries', 'budgets', 'subagent_records', 'audit_log']));

    const erased = await call('DELETE', `/users/${ENCODED}`);
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.json()).toMatchObject({ tasks: 1 });
    const erasedAs = erased.json().erasedAs as string;

    const after = await everyTable();
    expect(holding(after, USER)).toEqual([]);
    expect(holding(after, ENCODED)).toEqual([]);
    expect(holding(after, marker)).toEqual([]);
    // What stays names the erased id: the audit log's budget entries, the deliveries' bodies.
    const targets = (await call('GET', '/audit')).json().entries.map((e: { target: string }) => e.target);
    expect(targets.filter((t: string) => t === `/budgets/user/${erasedAs}`)).toHaveLength(4);
    const bodies = await svc.db.sql.all<{ payload: string }>('SELECT payload FROM webhook_deliveries WHERE task_id = ?', [id]);
    expect(bodies.map((b) => JSON.parse(b.payload).data.userId)).toEqual([erasedAs, erasedAs]);

    if (svc.db.dialect === 'sqlite') {
      // The file's bytes and the WAL's: the content went with the rows.
      const file = svc.db.location;
      for (const f of [file, `${file}-wal`].filter((p) => existsSync(p))) {
        const bytes = readFileSync(f);
        expect(bytes.includes(marker), `${f} holds the marker`).toBe(false);
        expect(bytes.includes(USER), `${f} holds the user's id`).toBe(false);
      }
    }
  });
});
