import { describe, expect, it } from 'vitest';
import { InstanceLockLost, isRead, notApplied, retrying, retryWindowFor, transient, type RetryWatch } from './postgres-retry.ts';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });
const watch = (stopped = false): RetryWatch & { seen: unknown[] } => {
  const seen: unknown[] = [];
  return { seen, stopped: () => stopped, retrying: (err) => seen.push(err) };
};

describe('which errors leave a statement unapplied', () => {
  it('a refused connection, a server starting, a deadlock, a lost lock, a stale plan: sent again', () => {
    for (const code of ['ECONNREFUSED', '57P03', '53300', '40001', '40P01']) expect(notApplied(pgError(code)), code).toBe(true);
    expect(notApplied(new InstanceLockLost('lost'))).toBe(true);
    expect(notApplied(pgError('0A000', 'cached plan must not change result type'))).toBe(true);
    expect(notApplied(pgError('26000'))).toBe(true);
    expect(notApplied(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });

  it('a connection lost under a statement may have applied it: only a read is repeated', () => {
    expect(notApplied(pgError('ECONNRESET'))).toBe(false);
    expect(transient(pgError('ECONNRESET'))).toBe(true);
    expect(transient(pgError('08006'))).toBe(true);
  });

  it('a constraint violation, a syntax error or a full disk is not tried again', () => {
    for (const code of ['23505', '42601', '53100', '0A000']) {
      expect(notApplied(pgError(code)), code).toBe(false);
      expect(transient(pgError(code)), code).toBe(false);
    }
  });
});

describe('a read', () => {
  it('is a SELECT that locks nothing and calls nothing with effects', () => {
    expect(isRead('SELECT * FROM tasks WHERE id = ?')).toBe(true);
    expect(isRead('  select count(*) from task_events')).toBe(true);
    expect(isRead('SELECT * FROM tasks WHERE id = ? FOR UPDATE')).toBe(false);
    expect(isRead('SELECT pg_advisory_lock(1)')).toBe(false);
    expect(isRead("SELECT nextval('s')")).toBe(false);
    expect(isRead("SELECT pg_notify('c', 'x')")).toBe(false);
    expect(isRead('UPDATE tasks SET status = ?')).toBe(false);
  });
});

describe('retrying', () => {
  it('sends again after an error it may repeat, and answers the first success', async () => {
    const w = watch();
    let tries = 0;
    const answer = await retrying(
      async () => {
        if (++tries < 3) throw pgError('57P03');
        return 'done';
      },
      notApplied,
      w,
    );
    expect(answer).toBe('done');
    expect(tries).toBe(3);
    expect(w.seen).toHaveLength(2);
  });

  it('gives up at once on an error it may not repeat, or when the database closes', async () => {
    let tries = 0;
    const refused = pgError('23505');
    await expect(
      retrying(
        () => {
          tries++;
          return Promise.reject(refused);
        },
        notApplied,
        watch(),
      ),
    ).rejects.toBe(refused);
    const gone = pgError('57P03');
    await expect(retrying(() => Promise.reject(gone), notApplied, watch(true))).rejects.toBe(gone);
    expect(tries).toBe(1);
  });
});

describe('how long a statement is tried again', () => {
  it('a third of the task lease, at most 12 s: a renewal never retries past the lease it renews', () => {
    expect(retryWindowFor(30_000)).toBe(10_000);
    expect(retryWindowFor(120_000)).toBe(12_000);
    expect(retryWindowFor(3_000)).toBe(1_000);
    expect(retryWindowFor(300)).toBe(100);
  });

  it("gives up once the watch's window has passed, the error going on as it came", async () => {
    const refused = pgError('ECONNREFUSED');
    const w = { ...watch(), windowMs: 120 };
    let tries = 0;
    await expect(
      retrying(
        async () => {
          tries++;
          throw refused;
        },
        notApplied,
        w,
      ),
    ).rejects.toBe(refused);
    // Waits of 50 and 100 ms fit in 120 ms only in part: tried twice, never the 12 s default's dozen.
    expect(tries).toBeLessThanOrEqual(3);
    expect(tries).toBeGreaterThanOrEqual(2);
  });
});
