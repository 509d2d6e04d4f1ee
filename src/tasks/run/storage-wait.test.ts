import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../errors/app-error.ts';
import { whileStorageFails } from './storage-wait.ts';

/** A storage guard that records what it is told, and a start that fails as `fails` says, then answers. */
function setup(fails: Error[]) {
  const reported: unknown[] = [];
  const deps = { storage: { report: (err: unknown) => reported.push(err) > 0 }, logger: pino({ level: 'silent' }) };
  let calls = 0;
  const start = async () => {
    const fault = fails[calls++];
    if (fault) throw fault;
    return 'child';
  };
  return { deps, reported, start, calls: () => calls };
}

const away = () => new AppError(503, 'storage_unavailable', 'the service cannot write its database; retry later');

describe('a start that waits while the database cannot store it', () => {
  it('tries again while the database is away, telling the storage guard, and answers the child once stored', async () => {
    const { deps, reported, start, calls } = setup([away()]);
    expect(await whileStorageFails(deps, 'tsk_1', new AbortController().signal, 'waits', start)).toBe('child');
    expect(calls()).toBe(2);
    expect(reported).toHaveLength(1);
  });

  it('does not wait out another error: it goes on at once, tried once', async () => {
    const refused = new AppError(400, 'invalid_request', 'no such type');
    const { deps, reported, start, calls } = setup([refused]);
    await expect(whileStorageFails(deps, 'tsk_1', new AbortController().signal, 'waits', start)).rejects.toBe(refused);
    expect(calls()).toBe(1);
    expect(reported).toEqual([]);
  });

  it('answers null once stopped: while it waits, and before its first try without trying', async () => {
    const stop = new AbortController();
    const waiting = setup([away(), away(), away()]);
    const answer = whileStorageFails(waiting.deps, 'tsk_1', stop.signal, 'waits', waiting.start);
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop.abort();
    expect(await answer).toBeNull();
    expect(waiting.calls()).toBe(1);

    const late = setup([]);
    expect(await whileStorageFails(late.deps, 'tsk_1', stop.signal, 'waits', late.start)).toBeNull();
    expect(late.calls()).toBe(0);
  });
});
