import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TENANT } from '../src/http/auth';
import { createEventLog } from '../src/events/event-log';
import { createTaskBodySchema } from '../src/shapes/task';
import { openPostgres } from '../src/store/postgres';
import { createStorageGuard } from '../src/store/storage-guard';
import { createTaskStore, TaskTakenOver } from '../src/store/task-store';
import { newTaskRow } from '../src/tasks/systems/admission';
import { ulid } from '../src/util/ids';
import { taskBody } from './support/harness';
import { testDatabaseUrl } from './support/postgres';
import { until } from './support/until';

type Db = Awaited<ReturnType<typeof openPostgres>>;

// The PostgreSQL pass of the suite only (TEST_DATABASE=postgres): the database numbers a cluster's events.
if (!process.env.TEST_POSTGRES_URL) console.warn('[event-numbering test] skipped: it runs in the PostgreSQL pass (npm run test:postgres)');
describe.skipIf(!process.env.TEST_POSTGRES_URL)("a cluster's events, numbered by the database in one statement", () => {
  let dir: string;
  let url: string;
  let a: Db;
  let b: Db;
  let listener: pg.Client;
  const heard: string[] = [];
  const parent = 'T-numbering';
  const key = `${parent}@${DEFAULT_TENANT}`;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-numbering-'));
    url = (await testDatabaseUrl(dir))!;
    a = await openPostgres(url, 'inst-a');
    b = await openPostgres(url, 'inst-b');
    listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query('LISTEN subagentd_events');
  });
  afterAll(async () => {
    await listener?.end();
    await a?.close();
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A task of the parent, owned by `owner`. */
  async function task(owner: string) {
    const body = createTaskBodySchema.parse(taskBody({ prompt: 'numbering', context: { parentTaskId: parent, userId: 'u' } }));
    const row = newTaskRow(`tsk_${ulid(Date.now())}`, DEFAULT_TENANT, body, Date.now(), null, null);
    await createTaskStore(a.sql).insert(row);
    await a.sql.run('UPDATE tasks SET owner = ? WHERE id = ?', [owner, row.id]);
    return { id: row.id, tenant: DEFAULT_TENANT, parentTaskId: parent };
  }
  const logOf = (db: Db, instanceId: string) => createEventLog(db.sql, { storage: createStorageGuard(), cluster: { instanceId } });
  const stored = async (taskId: string) =>
    (await a.sql.rows('SELECT seq, parent_seq, type FROM task_events WHERE task_id = ? ORDER BY seq', [taskId])).map(([s, p, t]) => [Number(s), Number(p), t]);
  const descriptionOf = async (taskId: string) =>
    (await a.sql.get<{ description: string }>('SELECT description FROM tasks WHERE id = ?', [taskId]))?.description;

  it("numbers a task's and its parent's events gap-free across instances, drops a deposed owner's, and refuses its owned writes", async () => {
    const mine = await task('inst-a');
    const theirs = await task('inst-b');
    const logA = logOf(a, 'inst-a');
    const logB = logOf(b, 'inst-b');
    const published: Array<[number, number | undefined]> = [];
    logA.subscribe(mine.id, (e) => published.push([e.seq, e.parentSeq]));

    // A's own task: its write and its events commit together, numbered from 1 on both streams.
    await logA.transaction(
      mine.id,
      async (tx, append) => {
        await tx.run('UPDATE tasks SET description = ? WHERE id = ?', ['written by a', mine.id]);
        append(mine, 'step.started', { step: 1 });
        append(mine, 'step.started', { step: 2 });
      },
      { owned: true },
    );
    expect(await stored(mine.id)).toEqual([
      [1, 1, 'step.started'],
      [2, 2, 'step.started'],
    ]);
    expect(published).toEqual([
      [1, 1],
      [2, 2],
    ]);

    // B's task, written by A (owned): refused whole, its write included.
    await expect(
      logA.transaction(
        theirs.id,
        async (tx, append) => {
          await tx.run('UPDATE tasks SET description = ? WHERE id = ?', ['written by a', theirs.id]);
          append(theirs, 'step.started', { step: 1 });
        },
        { owned: true },
      ),
    ).rejects.toBeInstanceOf(TaskTakenOver);
    expect(await descriptionOf(theirs.id)).not.toBe('written by a');
    expect(await stored(theirs.id)).toEqual([]);
    // An owned write with no event at all is refused the same way; A's own goes through.
    const withoutEvents = (id: string) =>
      logA.transaction(id, async (tx) => void (await tx.run('UPDATE tasks SET description = ? WHERE id = ?', ['no event', id])), { owned: true });
    await expect(withoutEvents(theirs.id)).rejects.toBeInstanceOf(TaskTakenOver);
    expect(await descriptionOf(theirs.id)).not.toBe('no event');
    await withoutEvents(mine.id);
    expect(await descriptionOf(mine.id)).toBe('no event');

    // One batch of A with events of both: B's task's are dropped, A's numbered on.
    logA.append(mine, 'step.started', { step: 3 });
    logA.append(theirs, 'step.started', { step: 1 });
    await logA.flush();
    expect(await stored(mine.id)).toEqual([
      [1, 1, 'step.started'],
      [2, 2, 'step.started'],
      [3, 3, 'step.started'],
    ]);
    expect(await stored(theirs.id)).toEqual([]);

    // B writes its own task: its first seq, the parent's next number.
    logB.append(theirs, 'step.started', { step: 1 });
    await logB.flush();
    expect(await stored(theirs.id)).toEqual([[1, 4, 'step.started']]);

    // Each commit was announced with it, by the instance that wrote it.
    await until(async () => heard.length >= 3);
    expect(heard.map((p) => JSON.parse(p))).toEqual([
      [{ i: 'inst-a', t: mine.id, k: key, s: [1, 2], p: [1, 2] }],
      [{ i: 'inst-a', t: mine.id, k: key, s: [3, 3], p: [3, 3] }],
      [{ i: 'inst-b', t: theirs.id, k: key, s: [1, 1], p: [4, 4] }],
    ]);
  });

  it('shows the write hook only events stored, in the transaction that stores them', async () => {
    const mine = await task('inst-a');
    const theirs = await task('inst-b');
    const hooked: string[] = [];
    const started = { subagent_type: 'general', model: 'm', workspace: '/w' };
    const log = createEventLog(a.sql, {
      storage: createStorageGuard(),
      cluster: { instanceId: 'inst-a' },
      outbox: {
        types: ['task.started'],
        write: async (tx, events) => {
          // Inside the transaction: what it writes commits (or not) with the events.
          await tx.run('UPDATE tasks SET description = ? WHERE id = ?', ['hooked', events[0].taskId]);
          hooked.push(...events.map((e) => `${e.taskId === mine.id ? 'mine' : 'theirs'} ${e.type}`));
          return false;
        },
        committed: () => {},
      },
    });
    await log.transaction(mine.id, async (_tx, append) => append(mine, 'task.started', started), { owned: true });
    await expect(log.transaction(theirs.id, async (_tx, append) => append(theirs, 'task.started', started), { owned: true })).rejects.toBeInstanceOf(
      TaskTakenOver,
    );
    // An unowned batch: the taken-over task's event is dropped before the hook sees it.
    log.append(theirs, 'task.started', started);
    log.append(mine, 'step.started', { step: 1 });
    await log.flush();
    // The refused transaction's hook failed with it (its first statement answered the refusal);
    // the dropped event never reached it.
    expect(hooked).toEqual(['mine task.started']);
    expect(await descriptionOf(mine.id)).toBe('hooked');
    expect(await descriptionOf(theirs.id)).not.toBe('hooked');
    expect((await stored(theirs.id)).length).toBe(0);
  });

  it('announces a large batch in notifications PostgreSQL takes, every task once, in the order written', async () => {
    const log = logOf(a, 'inst-a');
    // Tasks with no row (nothing says another instance owns them), ids of 100 characters.
    const tasks = Array.from({ length: 150 }, (_, i) => ({ id: `tsk_${String(i).padStart(96, '0')}`, tenant: DEFAULT_TENANT, parentTaskId: 'T-batch' }));
    for (const t of tasks) log.append(t, 'step.started', { step: 1 });
    for (const t of tasks) log.append(t, 'step.started', { step: 2 });
    await log.flush();
    // This batch's notifications (the earlier tests' may still come in).
    const batch = () => heard.filter((p) => p.includes('T-batch'));
    await until(async () => batch().flatMap((p) => JSON.parse(p)).length >= tasks.length);
    expect(batch().length).toBeGreaterThan(1);
    for (const p of batch()) expect(Buffer.byteLength(p)).toBeLessThan(8000);
    const announced = batch().flatMap((p) => JSON.parse(p) as Array<{ t: string; s: number[]; p: number[] }>);
    expect(announced.map((x) => x.t)).toEqual(tasks.map((t) => t.id));
    expect(announced.every((x) => x.s[0] === 1 && x.s[1] === 2)).toBe(true);
    // The parent's numbers: the first events of all, then the second ones, gap-free.
    expect(announced[0].p).toEqual([1, 151]);
    expect(announced.at(-1)!.p).toEqual([150, 300]);
  });
});
