import { describe, expect, it } from 'vitest';
import { openSqlite } from '../store/database.ts';
import { createStorageGuard } from '../store/storage-guard.ts';
import { createEventLog } from './event-log.ts';

describe('the event log', () => {
  it('keeps the events appended before a transaction whose body fails, in order, and numbers the next ones after them', async () => {
    const db = openSqlite(':memory:');
    const events = createEventLog(db.sql, { storage: createStorageGuard() });
    const task = { id: 'tsk_1', tenant: 'default', parentTaskId: 'P-1' };
    events.append(task, 'step.started', { step: 1 });
    await expect(
      events.transaction(task.id, async (_tx, append) => {
        append(task, 'step.started', { step: 99 });
        throw new Error('the body failed');
      }),
    ).rejects.toThrow('the body failed');
    events.append(task, 'step.started', { step: 2 });
    await events.flush();
    const stored = (await events.read('tsk_1')).map((e) => [e.seq, JSON.parse(e.json).data.step]);
    expect(stored).toEqual([
      [1, 1],
      [2, 2],
    ]);
    await db.close();
  });

  it("writes a task's waiting events in its next transaction, first and in one commit, and holds them for it when asked", async () => {
    const db = openSqlite(':memory:');
    const events = createEventLog(db.sql, { storage: createStorageGuard() });
    const task = { id: 'tsk_1', tenant: 'default', parentTaskId: 'P-1' };
    const heard: Array<[number, number]> = [];
    events.subscribe(task.id, (e) => heard.push([e.seq, JSON.parse(e.json).data.step]));
    const commits = db.sql.counts.transactions;
    events.append(task, 'step.started', { step: 1 });
    events.append(task, 'step.started', { step: 2 });
    await events.transaction(task.id, async (_tx, append) => append(task, 'step.started', { step: 3 }));
    expect(db.sql.counts.transactions - commits).toBe(1);
    expect(heard).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    // Held: neither written nor heard until the task's next transaction, which takes them first.
    events.hold(task.id);
    events.append(task, 'step.started', { step: 4 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toHaveLength(3);
    expect(await events.read(task.id)).toHaveLength(3);
    await events.transaction(task.id, async (_tx, append) => append(task, 'step.started', { step: 5 }));
    expect(heard.slice(3)).toEqual([
      [4, 4],
      [5, 5],
    ]);
    expect(db.sql.counts.transactions - commits).toBe(2);
    await db.close();
  });

  it("runs a task's held write first in its next transaction, one commit with its events; a flush writes it alone", async () => {
    const db = openSqlite(':memory:');
    await db.sql.run('CREATE TABLE marks (task TEXT, what TEXT)');
    const events = createEventLog(db.sql, { storage: createStorageGuard() });
    const task = { id: 'tsk_1', tenant: 'default', parentTaskId: 'P-1' };
    const heard: number[] = [];
    events.subscribe(task.id, (e) => heard.push(JSON.parse(e.json).data.step));
    const commits = db.sql.counts.transactions;
    events.append(task, 'step.started', { step: 1 });
    events.holdWrite(task.id, async (tx, append) => {
      await tx.run('INSERT INTO marks VALUES (?, ?)', [task.id, 'held']);
      append(task, 'step.started', { step: 2 });
    });
    // Held: nothing written or heard until the task's next transaction.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toEqual([]);
    expect(await db.sql.all('SELECT what FROM marks')).toEqual([]);
    await events.transaction(task.id, async (tx, append) => {
      await tx.run('INSERT INTO marks VALUES (?, ?)', [task.id, 'own']);
      append(task, 'step.started', { step: 3 });
    });
    expect(heard).toEqual([1, 2, 3]);
    expect(await db.sql.all('SELECT what FROM marks')).toEqual([{ what: 'held' }, { what: 'own' }]);
    expect(db.sql.counts.transactions - commits).toBe(1);
    // Taken once: the next transaction does not run it again.
    await events.transaction(task.id, async () => undefined);
    expect(await db.sql.all('SELECT what FROM marks')).toHaveLength(2);
    // A task that ends without a transaction of its own: flushed, the held write is written.
    events.holdWrite(task.id, async (tx, append) => {
      await tx.run('INSERT INTO marks VALUES (?, ?)', [task.id, 'flushed']);
      append(task, 'step.started', { step: 4 });
    });
    await events.flush(task.id);
    expect(heard).toEqual([1, 2, 3, 4]);
    expect(await db.sql.all("SELECT what FROM marks WHERE what = 'flushed'")).toHaveLength(1);
    await db.close();
  });

  it("commits a live task's events ahead of other tasks' waiting writes, and never ahead of a write of its own", async () => {
    const db = openSqlite(':memory:');
    // Each fast batch goes ahead of the waiting writes at once (by default, after about 20 ms of them).
    const storage = createStorageGuard({ firstAfterMs: 0 });
    const events = createEventLog(db.sql, { storage });
    const parent = { tenant: 'default', parentTaskId: 'P-1' };
    const streaming = { id: 'tsk_a', ...parent };
    const ending = { id: 'tsk_b', ...parent };
    // The queue is busy with a write in hand, and the ending task's step end waits behind it.
    let free!: () => void;
    const inHand = storage.write(() => new Promise<void>((resolve) => (free = resolve)));
    const stepEnd = events.transaction(ending.id, async (_tx, append) => append(ending, 'step.started', { step: 1 }));
    // The streaming task has no write waiting: its text goes first. The ending task's next event
    // waits for its own step end.
    events.append(streaming, 'text.delta', { step: 1, text: 'live' });
    events.append(ending, 'text.delta', { step: 2, text: 'after its step end' });
    events.append(streaming, 'text.delta', { step: 1, text: 'still live' });
    free();
    await Promise.all([inHand, stepEnd, events.flush()]);
    const order = (await events.readParent(parent)).map((e) => [e.taskId, e.parentSeq, JSON.parse(e.json).data.text ?? 'step end']);
    expect(order).toEqual([
      ['tsk_a', 1, 'live'],
      ['tsk_a', 2, 'still live'],
      ['tsk_b', 3, 'step end'],
      ['tsk_b', 4, 'after its step end'],
    ]);
    // Once its own writes are done, the ending task's events go first again.
    free = () => undefined;
    const again = storage.write(() => new Promise<void>((resolve) => (free = resolve)));
    const other = events.transaction(streaming.id, async (_tx, append) => append(streaming, 'step.started', { step: 2 }));
    events.append(ending, 'text.delta', { step: 3, text: 'first again' });
    free();
    await Promise.all([again, other, events.flush()]);
    expect((await events.read(ending.id)).map((e) => e.seq)).toEqual([1, 2, 3]);
    const tail = (await events.readParent(parent)).slice(4).map((e) => [e.taskId, JSON.parse(e.json).data.text ?? 'step end']);
    expect(tail).toEqual([
      ['tsk_b', 'first again'],
      ['tsk_a', 'step end'],
    ]);
    await db.close();
  });

  it('resolves a flush once the events appended before it are heard, whatever the task asks for next', async () => {
    const db = openSqlite(':memory:');
    const events = createEventLog(db.sql, { storage: createStorageGuard() });
    const task = { id: 'tsk_a', tenant: 'default', parentTaskId: 'P-1' };
    const heard: string[] = [];
    events.subscribe(task.id, (e) => heard.push(JSON.parse(e.json).data.text));
    const next: Array<[string, () => unknown]> = [
      ['hold', () => events.hold(task.id)],
      ['holdWrite', () => events.holdWrite(task.id, async () => undefined)],
      ['a slow transaction', () => events.transaction(task.id, () => new Promise((resolve) => setTimeout(resolve, 30)))],
    ];
    for (const [what, then] of next) {
      for (const flush of [() => events.flush(), () => events.flush(task.id)]) {
        heard.length = 0;
        events.append(task, 'text.delta', { step: 1, text: what });
        const flushed = flush();
        const after = then();
        await flushed;
        expect(heard, what).toEqual([what]);
        await after;
        await events.transaction(task.id, async () => undefined);
      }
    }
    await db.close();
  });

  it('resolves a flush once the events appended before it are heard, when a transaction asked for before it took them', async () => {
    const db = openSqlite(':memory:');
    const storage = createStorageGuard();
    const events = createEventLog(db.sql, { storage });
    const task = { id: 'tsk_a', tenant: 'default', parentTaskId: 'P-1' };
    const heard: string[] = [];
    events.subscribe(task.id, (e) => heard.push(JSON.parse(e.json).data.text ?? 'step end'));
    for (const flush of [() => events.flush(), () => events.flush(task.id)]) {
      heard.length = 0;
      // The queue is busy; behind it a write of the task's own, then its event (in order, after
      // that write), then its next transaction, which takes the event along.
      let free!: () => void;
      const inHand = storage.write(() => new Promise<void>((resolve) => (free = resolve)));
      const first = events.transaction(task.id, async (_tx, append) => append(task, 'step.started', { step: 1 }));
      events.append(task, 'text.delta', { step: 1, text: 'appended' });
      const next = events.transaction(task.id, async (_tx, append) => append(task, 'step.started', { step: 2 }));
      const flushed = flush();
      setTimeout(free, 20);
      await flushed;
      expect(heard.slice(0, 2)).toEqual(['step end', 'appended']);
      await Promise.all([inHand, first, next]);
    }
    await db.close();
  });
});
