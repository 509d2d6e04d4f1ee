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
});
