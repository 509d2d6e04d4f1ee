import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ClusterStore } from '../../store/cluster-store.ts';
import type { TaskRow } from '../../store/schema.ts';
import { newTaskRow } from './admission.ts';
import { clusterScheduler, localScheduler } from './scheduler.ts';

const row = (id: string, tenant: string, userId = 'u'): TaskRow =>
  newTaskRow(id, tenant, { subagent_type: 'general', description: id, prompt: 'p', context: { parentTaskId: 'P', userId } }, 0, null, null);
const ids = async (s: ReturnType<typeof localScheduler>) => {
  const out: string[] = [];
  for (let next = await s.next(); next; next = await s.next()) out.push(next.row.id);
  return out;
};

describe("this process's scheduler", () => {
  it('serves the tenant with the fewest running first, and a tenant at its quota waits until one of its tasks is done', async () => {
    const s = localScheduler(1);
    for (const r of [row('a1', 'A'), row('a2', 'A'), row('a3', 'A'), row('b1', 'B')]) s.offer(r);
    expect(await s.waiting('A')).toEqual({ all: 4, tenant: 3 });
    // One of A, one of B: then each tenant is at its quota.
    expect(await ids(s)).toEqual(['a1', 'b1']);
    expect(await s.waiting('A')).toEqual({ all: 2, tenant: 2 });
    s.done(row('a1', 'A'), false);
    const next = await s.next();
    expect(next).toMatchObject({ row: { id: 'a2' }, alone: false });
    expect(await s.next()).toBeUndefined();
  });

  it('hands back the reason a running task was offered for, and says when nothing else waits', async () => {
    const s = localScheduler(4);
    s.offer(row('r1', 'A'), 'restart');
    s.offer(row('q1', 'A'));
    expect(await s.next()).toMatchObject({ row: { id: 'r1' }, reason: 'restart', alone: false });
    expect(await s.next()).toEqual({ row: expect.objectContaining({ id: 'q1' }), reason: undefined, alone: true });
  });

  it("does not count a task waiting on its child against its tenant's quota, and counts it again after", async () => {
    const s = localScheduler(1);
    const parent = row('p', 'A');
    s.offer(parent);
    s.offer(row('child', 'A'));
    expect((await s.next())!.row.id).toBe('p');
    expect(await s.next()).toBeUndefined();
    await s.lend(parent, true);
    expect((await s.next())!.row.id).toBe('child');
    await s.lend(parent, false);
    s.offer(row('later', 'A'));
    s.done(row('child', 'A'), false);
    // The parent holds the tenant's one slot again.
    expect(await s.next()).toBeUndefined();
  });

  it('takes a waiting task out to cancel it, and only a waiting one', async () => {
    const s = localScheduler(4);
    s.offer(row('a', 'A'), 'budget');
    s.offer(row('b', 'A'));
    expect(await s.withdraw('a')).toBe(true);
    expect(await s.withdraw('a')).toBe(false);
    expect(await ids(s)).toEqual(['b']);
    expect(await s.withdraw('b')).toBe(false);
  });
});

describe("the cluster's scheduler", () => {
  /** A ClusterStore that records what it is asked and claims `claimable` in turn. */
  function fakeStore(claimable: TaskRow[]) {
    const asked: string[] = [];
    const store = {
      instanceId: 'me',
      claim: async (max: number, until: number, busy: string[]) => {
        asked.push(`claim ${max} ${until} [${busy.join(',')}]`);
        const next = claimable.shift();
        return next && { row: next, last: claimable.length === 0, alone: false };
      },
      lend: async (id: string, on: boolean) => void asked.push(`lend ${id} ${on}`),
      claimWaiting: async (id: string, until: number) => (asked.push(`claimWaiting ${id} ${until}`), true),
      waiting: async () => ({ all: 7, tenant: 2 }),
      notify: async (channel: string, payload = '') => void asked.push(`notify ${channel} ${payload}`),
    };
    return { asked, store: store as unknown as ClusterStore };
  }

  it('claims in the database with its quota, lease and busy tasks, and resumes a running task for its reason', async () => {
    const running = { ...row('r', 'A'), status: 'running' as const, resumeReason: 'approval' };
    const orphan = { ...row('o', 'A'), status: 'running' as const, resumeReason: null };
    const { asked, store } = fakeStore([row('q', 'A'), running, orphan]);
    const s = clusterScheduler(store, { maxRunningPerTenant: 3, leaseMs: 1000, now: () => 5000, logger: pino({ level: 'silent' }), busy: () => ['x'] });
    expect(await s.next()).toMatchObject({ row: { id: 'q' }, reason: undefined, last: false });
    expect(await s.next()).toMatchObject({ row: { id: 'r' }, reason: 'approval' });
    expect(await s.next()).toMatchObject({ row: { id: 'o' }, reason: 'restart', last: true });
    expect(await s.next()).toBeUndefined();
    expect(asked[0]).toBe('claim 3 6000 [x]');
    expect(await s.waiting('A')).toEqual({ all: 7, tenant: 2 });
  });

  it('wakes the other instances when a task is offered or a slot freed while others waited, not when nothing did', async () => {
    const { asked, store } = fakeStore([]);
    const s = clusterScheduler(store, { maxRunningPerTenant: 3, leaseMs: 1000, now: () => 5000, logger: pino({ level: 'silent' }), busy: () => [] });
    s.offer(row('q', 'A'));
    s.done(row('q', 'A'), true);
    s.done(row('q', 'A'), false);
    await s.lend(row('q', 'A'), true);
    expect(await s.withdraw('q')).toBe(true);
    expect(asked).toEqual(['notify subagentd_wake me', 'notify subagentd_wake me', 'lend q true', 'claimWaiting q 6000']);
  });
});
