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
});
