import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type TurnContext } from '../scripted-model/server';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * Children being stored while PostgreSQL cannot take them (a restart, a failover): a task with
 * candidates waits for the database, as its own writes do, instead of ending `candidates_failed`;
 * a lead's `task` call waits too, instead of answering its model an error. The outage is
 * PostgreSQL's own error under the statement that stores the second attempt or the lead's child
 * (SQLSTATE 08006, a connection lost under it), raised by a trigger for as long as the test says:
 * a restart's moment, made exact. PostgreSQL pass only (TEST_DATABASE=postgres).
 */
const onPostgres = process.env.TEST_DATABASE === 'postgres';

describe.skipIf(!onPostgres)('children while the database cannot store them', () => {
  let model: ScriptedModel;
  let svc: TestService;
  let dir: string;
  let db: pg.Client;
  beforeAll(async () => {
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-cand-outage-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Splits work among subagents\nmaxDepth: 1\n---\nDelegate.\n');
    svc = await startService({ model, dir, env: { DEFAULT_MODEL: 'model-a' } });
    db = new pg.Client({ connectionString: svc.config.databaseUrl! });
    await db.connect();
    // Storing the second attempt of a task, or a lead's child, fails while `outage` says `fail`, and takes 3 s while it
    // says `slow` (a statement under way when the database goes); `refuse` fails it with an error
    // that is not the database's absence. `outage_hits` counts the tries.
    await db.query(`
      CREATE TABLE outage (mode text);
      CREATE SEQUENCE outage_hits;
      CREATE FUNCTION outage_now() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE m text;
      BEGIN
        SELECT mode INTO m FROM outage LIMIT 1;
        IF m IS NOT NULL THEN PERFORM nextval('outage_hits'); END IF;
        IF m = 'fail' THEN
          RAISE EXCEPTION 'terminating connection: the server is restarting (test)' USING ERRCODE = '08006';
        ELSIF m = 'slow' THEN
          PERFORM pg_sleep(3);
        ELSIF m = 'refuse' THEN
          RAISE EXCEPTION 'a constraint the attempt breaks (test)' USING ERRCODE = '23514';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER outage_on_attempts BEFORE INSERT ON tasks FOR EACH ROW
        WHEN (NEW.idempotency_key LIKE 'candidate:%:1' OR NEW.idempotency_key LIKE 'child:%') EXECUTE FUNCTION outage_now();`);
  });
  afterAll(async () => {
    await db?.end();
    await svc?.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const hits = async () => Number((await db.query(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM outage_hits`)).rows[0].n);
  const attemptsOf = async (id: string) =>
    (await db.query(`SELECT idempotency_key AS key, status, error_code AS code FROM tasks WHERE parent_task = $1 ORDER BY idempotency_key`, [id])).rows;
  const task = async (id: string) => (await fetch(`${svc.url}/tasks/${id}`)).json() as Promise<any>;
  const submit = async (prompt: string, parentTaskId: string) => {
    const res = await fetch(`${svc.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({
          prompt,
          context: { parentTaskId, userId: 'u' },
          options: { isolation: 'worktree', outcome: { verify: { command: 'true' }, maxIterations: 1 }, candidates: { n: 2 } },
        }),
      ),
    });
    const body = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(body)).toBe(202);
    return body.id;
  };

  it('waits while the second attempt cannot be stored, then starts it once, and completes with both billed', async () => {
    model.script('CANDO-WAIT', (ctx: TurnContext) => ({
      toolCalls: [{ name: 'complete', args: { summary: `done ${ctx.model}`, paths: [] } }],
      usage: { input: 100, output: 10 },
    }));
    await db.query(`INSERT INTO outage VALUES ('fail')`);
    const id = await submit('CANDO-WAIT', 'T-cando');
    // Tried, failed, waited, tried again: the task still runs, its first attempt stored once.
    await until(async () => (await hits()) >= 2, 15_000);
    expect((await task(id)).status).toBe('running');
    expect((await attemptsOf(id)).map((a) => a.key)).toEqual([`candidate:${id}:0`]);

    await db.query(`DELETE FROM outage`);
    await until(async () => !['queued', 'running'].includes((await task(id)).status), 20_000);
    const done = await task(id);
    expect(done, JSON.stringify(done.error)).toMatchObject({ status: 'completed' });
    expect(done.candidates).toHaveLength(2);
    expect((await attemptsOf(id)).map((a) => [a.key, a.status])).toEqual([
      [`candidate:${id}:0`, 'completed'],
      [`candidate:${id}:1`, 'completed'],
    ]);
    const started = (await storedEvents(svc, id)).filter((e) => e.type === 'candidate.started').map((e) => (e.data as { index: number }).index);
    expect(started).toEqual([0, 1]);
    // Each attempt's one call billed once, under the task's parent.
    const totals = ((await (await fetch(`${svc.url}/usage?parentTaskId=T-cando`)).json()) as any).totals;
    expect(totals).toMatchObject({ inputTokens: 200, outputTokens: 20 });
  }, 60_000);

  it('a cancel while it waits ends it cancelled and stops the attempt already started; none is started after', async () => {
    model.script('CANDO-CANCEL', () => ({ delayMs: 30_000, text: 'still thinking' }));
    await db.query(`INSERT INTO outage VALUES ('fail')`);
    const before = await hits();
    const id = await submit('CANDO-CANCEL', 'T-cando-cancel');
    await until(async () => (await hits()) > before, 15_000);
    // Refused (503) while the service itself holds its writes: asked again until it is taken.
    await until(async () => (await fetch(`${svc.url}/tasks/${id}/cancel`, { method: 'POST' })).status === 202, 15_000);
    await until(async () => (await task(id)).status === 'aborted', 15_000);
    expect((await task(id)).error).toMatchObject({ code: 'cancelled' });
    await until(async () => (await attemptsOf(id)).every((a) => a.status === 'aborted'), 15_000);
    // As a cancel once they run: the attempt ends cancelled, naming its task.
    expect(await attemptsOf(id)).toEqual([{ key: `candidate:${id}:0`, status: 'aborted', code: 'cancelled' }]);

    // The database is back: nothing more of that task is started.
    await db.query(`DELETE FROM outage`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await attemptsOf(id)).toHaveLength(1);
  }, 60_000);

  it('a cancel while an attempt is being stored ends it at once; that attempt is stopped once stored, and none starts after it', async () => {
    model.script('CANDO-SLOW', () => ({ delayMs: 30_000, text: 'still thinking' }));
    await db.query(`INSERT INTO outage VALUES ('slow')`);
    const before = await hits();
    const res = await fetch(`${svc.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({
          prompt: 'CANDO-SLOW',
          context: { parentTaskId: 'T-cando-slow', userId: 'u' },
          options: { isolation: 'worktree', outcome: { verify: { command: 'true' }, maxIterations: 1 }, candidates: { n: 3 } },
        }),
      ),
    });
    const id = ((await res.json()) as { id: string }).id;
    // The second attempt's insert is under way (3 s): the task ends before it does.
    await until(async () => (await hits()) > before, 15_000);
    expect((await fetch(`${svc.url}/tasks/${id}/cancel`, { method: 'POST' })).status).toBe(202);
    await until(async () => (await task(id)).status === 'aborted', 15_000);
    expect((await task(id)).error).toMatchObject({ code: 'cancelled' });
    expect((await attemptsOf(id)).map((a) => a.key)).toEqual([`candidate:${id}:0`]);

    // Stored once its statement ends, then stopped; the third is never started.
    await until(async () => (await attemptsOf(id)).length === 2 && (await attemptsOf(id)).every((a) => a.status === 'aborted'), 15_000);
    expect(await attemptsOf(id)).toEqual([
      { key: `candidate:${id}:0`, status: 'aborted', code: 'cancelled' },
      { key: `candidate:${id}:1`, status: 'aborted', code: 'cancelled' },
    ]);
    await db.query(`DELETE FROM outage`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await attemptsOf(id)).toHaveLength(2);
  }, 60_000);

  const lead = async (prompt: string, parentTaskId: string) => {
    const res = await fetch(`${svc.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ subagent_type: 'lead', prompt, context: { parentTaskId, userId: 'u' } })),
    });
    const body = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(body)).toBe(202);
    return body.id;
  };
  const delegates = (prompt: string, child: string) => (ctx: TurnContext) =>
    ctx.turn === 0
      ? { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Count', prompt: child } }] }
      : { toolCalls: [{ name: 'complete', args: { summary: `${prompt} read: ${ctx.toolResults[0].content}`, paths: [] } }] };

  it("a lead's subagent waits while it cannot be stored, then starts once; the lead's model reads its result, not an error", async () => {
    model.script('LEAD-WAIT', delegates('LEAD-WAIT', 'CHILD-WAIT'));
    model.script('CHILD-WAIT', [{ toolCalls: [{ name: 'complete', args: { summary: 'counted 42', paths: [] } }] }]);
    await db.query(`INSERT INTO outage VALUES ('fail')`);
    const before = await hits();
    const id = await lead('LEAD-WAIT', 'T-lead-wait');
    await until(async () => (await hits()) >= before + 2, 15_000);
    expect((await task(id)).status).toBe('running');
    expect(await attemptsOf(id)).toEqual([]);

    await db.query(`DELETE FROM outage`);
    await until(async () => !['queued', 'running'].includes((await task(id)).status), 20_000);
    const done = await task(id);
    expect(done, JSON.stringify(done.error)).toMatchObject({ status: 'completed' });
    expect(await attemptsOf(id)).toEqual([{ key: expect.stringMatching(`^child:${id}:`), status: 'completed', code: null }]);
    expect(JSON.parse(done.summary.slice('LEAD-WAIT read: '.length))).toMatchObject({ status: 'completed', summary: 'counted 42' });
  }, 60_000);

  it('a cancel of a lead whose subagent is being stored ends it at once; the subagent is stopped once stored', async () => {
    model.script('LEAD-SLOW', delegates('LEAD-SLOW', 'CHILD-SLOW'));
    model.script('CHILD-SLOW', () => ({ delayMs: 30_000, text: 'still thinking' }));
    await db.query(`INSERT INTO outage VALUES ('slow')`);
    try {
      const before = await hits();
      const id = await lead('LEAD-SLOW', 'T-lead-slow');
      await until(async () => (await hits()) > before, 15_000);
      expect((await fetch(`${svc.url}/tasks/${id}/cancel`, { method: 'POST' })).status).toBe(202);
      await until(async () => (await task(id)).status === 'aborted', 15_000);
      expect((await task(id)).error).toMatchObject({ code: 'cancelled' });
      // Stored once its statement ends (3 s), then stopped, naming its lead.
      await until(async () => (await attemptsOf(id)).length === 1 && (await attemptsOf(id))[0].status === 'aborted', 15_000);
      expect(await attemptsOf(id)).toEqual([{ key: expect.stringMatching(`^child:${id}:`), status: 'aborted', code: 'parent_ended' }]);
    } finally {
      await db.query(`DELETE FROM outage`);
    }
  }, 60_000);

  it('an error that is not the database being away is not waited out: the task fails at once and stops the attempt it started', async () => {
    model.script('CANDO-REFUSED', () => ({ delayMs: 30_000, text: 'still thinking' }));
    await db.query(`INSERT INTO outage VALUES ('refuse')`);
    try {
      const before = await hits();
      const id = await submit('CANDO-REFUSED', 'T-cando-refused');
      await until(async () => !['queued', 'running'].includes((await task(id)).status), 15_000);
      expect((await task(id)).error).toMatchObject({ code: 'candidates_failed', message: expect.stringContaining('could not be started') });
      // Tried once, never again.
      expect((await hits()) - before).toBe(1);
      await until(async () => (await attemptsOf(id)).every((a) => a.status === 'aborted'), 15_000);
      expect(await attemptsOf(id)).toEqual([{ key: `candidate:${id}:0`, status: 'aborted', code: 'parent_ended' }]);
    } finally {
      await db.query(`DELETE FROM outage`);
    }
  }, 60_000);
});
