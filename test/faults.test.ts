import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { openStream } from './support/ws-client';

/** Faults that must end cleanly: long waits, broken writes, bad cursors, shutdown. */
let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { HEARTBEAT_MS: '50' } });
});
afterAll(() => svc.close());

describe('?wait=true', () => {
  it('sends the status line, Location and X-Task-Id at once, keeps the connection alive with spaces, then the TaskOutput', async () => {
    svc.model.script('WAIT-KEEPALIVE', [{ text: 'slow answer', delayMs: 600 }]);
    const started = Date.now();
    const { headersAt, headers, status, body } = await new Promise<{ headersAt: number; headers: http.IncomingHttpHeaders; status: number; body: string }>(
      (resolve, reject) => {
        const req = http.request(`${svc.url}/tasks?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          const headersAt = Date.now() - started;
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ headersAt, headers: res.headers, status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.end(JSON.stringify(taskBody({ prompt: 'WAIT-KEEPALIVE' })));
      },
    );
    expect(status).toBe(200);
    // Headers long before the task ended.
    expect(headersAt).toBeLessThan(400);
    expect(headers.location).toBe(`/tasks/${String(headers['x-task-id'])}`);
    expect(body).toMatch(/^ {2,}\{/);
    const out = JSON.parse(body);
    expect(out).toMatchObject({ id: headers['x-task-id'], status: 'completed', summary: 'slow answer' });
  });

  it('answers a finished task at once with plain JSON', async () => {
    svc.model.script('WAIT-IDEM', [{ text: 'done' }]);
    const post = () =>
      svc.inject({ method: 'POST', url: '/tasks?wait=true', headers: { 'idempotency-key': 'wait-idem-1' }, payload: taskBody({ prompt: 'WAIT-IDEM' }) });
    const first = await post();
    const again = await post();
    expect(again.statusCode).toBe(200);
    expect(again.body.startsWith('{')).toBe(true);
    expect(again.json().id).toBe(first.json().id);
  });
});

describe('a task whose own bookkeeping fails', () => {
  it('ends error/internal_error and its waiter is answered, instead of waiting forever', async () => {
    if (svc.db.sqlite) {
      svc.db.sqlite.exec(`CREATE TRIGGER fail_records BEFORE INSERT ON subagent_records
        WHEN NEW.description = 'doomed' BEGIN SELECT RAISE(ABORT, 'injected storage fault'); END`);
    } else {
      await svc.db.sql.run(`CREATE FUNCTION fail_records() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF NEW.description = 'doomed' THEN RAISE EXCEPTION 'injected storage fault'; END IF; RETURN NEW; END $$`);
      await svc.db.sql.run('CREATE TRIGGER fail_records BEFORE INSERT ON subagent_records FOR EACH ROW EXECUTE FUNCTION fail_records()');
    }
    try {
      svc.model.script('DOOMED', [{ text: 'never billed' }]);
      const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'DOOMED', description: 'doomed' }) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'error', error: { code: 'internal_error' } });
      // No model call was made for a task that could not be recorded.
      expect(svc.model.requests.some((r) => JSON.stringify(r.body).includes('DOOMED'))).toBe(false);
    } finally {
      if (svc.db.sqlite) svc.db.sqlite.exec('DROP TRIGGER fail_records');
      else await svc.db.sql.run('DROP TRIGGER fail_records ON subagent_records');
    }
  });
});

describe('progress stream cursors and shutdown', () => {
  it('refuses an after= that is not a plain decimal number with 400 before the upgrade', async () => {
    svc.model.script('CURSOR', [{ text: 'ok' }]);
    const id = (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'CURSOR' }) })).json().id;
    const base = `${svc.url.replace('http', 'ws')}/tasks/${id}/stream`;
    for (const after of ['', '0x10', '%201', '-0', '1e3', '01', '1.5', '99999999999999999999']) {
      await expect(openStream(`${base}?after=${after}`), `after=${after}`).rejects.toThrow(/400/);
    }
    const ok = await openStream(`${base}?after=0`);
    expect((await ok.closed).code).toBe(1000);
  });

  it('closes the stream of a task still queued at shutdown with 1001 and a reason', async () => {
    const small = await startService({ env: { MAX_CONCURRENT_TASKS: '1' } });
    small.model.script('BLOCKER', [{ text: 'x', delayMs: 30_000 }]);
    await small.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'BLOCKER' }) });
    const queued = (await small.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'BLOCKER' }) })).json();
    expect(queued.status).toBe('queued');
    const stream = await openStream(`${small.url.replace('http', 'ws')}/tasks/${queued.id}/stream`);
    await small.close();
    const closed = await stream.closed;
    expect(closed.code).toBe(1001);
    expect(closed.reason).toMatch(/shutting down/);
  });
});
