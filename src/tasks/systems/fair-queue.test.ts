import { describe, expect, it } from 'vitest';
import { createFairQueue } from './fair-queue.ts';

type Item = { tenant: string; user: string; n: number };
const item = (s: string): Item => ({ tenant: s[0], user: s[1], n: Number(s.slice(2)) });
const name = (i: Item | undefined) => (i ? `${i.tenant}${i.user}${i.n}` : undefined);
const queue = (max?: number) => createFairQueue<Item>({ groupOf: (i) => i.tenant, keyOf: (i) => `${i.tenant}/${i.user}`, maxRunningPerGroup: max });

describe('createFairQueue', () => {
  it('serves keys round-robin and each key in order', () => {
    const q = queue();
    for (const s of ['Aa1', 'Aa2', 'Aa3', 'Ab1', 'Ac1']) q.push(item(s));
    expect(q.size).toBe(5);
    const served: Array<string | undefined> = [];
    for (let i = 0; i < 5; i++) {
      const next = q.shift()!;
      served.push(name(next));
      q.done(next);
    }
    expect(served).toEqual(['Aa1', 'Ab1', 'Ac1', 'Aa2', 'Aa3']);
    expect(q.size).toBe(0);
  });

  it('prefers the tenant with the fewest running items, then the user', () => {
    const q = queue();
    for (const s of ['Aa1', 'Aa2', 'Ab1', 'Ba1']) q.push(item(s));
    expect(name(q.shift())).toBe('Aa1');
    // Tenant A has one running: B goes next although A's user b has none running.
    expect(name(q.shift())).toBe('Ba1');
    expect(name(q.shift())).toBe('Ab1');
    expect(q.running).toBe(3);
  });

  it('holds a tenant at its running quota while another may start', () => {
    const q = queue(1);
    for (const s of ['Aa1', 'Aa2', 'Ba1']) q.push(item(s));
    const first = q.shift()!;
    expect(name(q.shift())).toBe('Ba1');
    expect(q.shift()).toBeUndefined();
    expect(q.queuedIn('A')).toBe(1);
    q.done(first);
    expect(name(q.shift())).toBe('Aa2');
  });

  it('removes a queued item', () => {
    const q = queue();
    q.push(item('Aa1'));
    q.push(item('Aa2'));
    expect(q.remove((i) => i.n === 1)).toBe(true);
    expect(q.remove((i) => i.n === 9)).toBe(false);
    expect(q.queuedIn('A')).toBe(1);
    expect(name(q.shift())).toBe('Aa2');
    expect(q.shift()).toBeUndefined();
  });
});
