import { describe, expect, it } from 'vitest';
import { createFairQueue } from './fair-queue';

describe('createFairQueue', () => {
  it('serves keys round-robin and each key in order', () => {
    const q = createFairQueue<{ user: string; n: number }>((i) => i.user);
    for (let n = 1; n <= 3; n++) q.push({ user: 'a', n });
    q.push({ user: 'b', n: 1 });
    q.push({ user: 'c', n: 1 });
    expect(q.size).toBe(5);
    expect(q.drain().map((i) => `${i.user}${i.n}`)).toEqual(['a1', 'b1', 'c1', 'a2', 'a3']);
    expect(q.size).toBe(0);
  });

  it('prefers the key with the fewest running items', () => {
    const q = createFairQueue<string>((s) => s[0]);
    q.push('a1');
    q.push('a2');
    q.push('b1');
    const running = new Map([['a', 2], ['b', 0]]);
    expect(q.shift((k) => running.get(k) ?? 0)).toBe('b1');
    expect(q.shift((k) => running.get(k) ?? 0)).toBe('a1');
  });

  it('removes a queued item', () => {
    const q = createFairQueue<string>((s) => s[0]);
    q.push('a1');
    q.push('a2');
    expect(q.remove((s) => s === 'a1')).toBe(true);
    expect(q.remove((s) => s === 'zz')).toBe(false);
    expect(q.shift()).toBe('a2');
    expect(q.shift()).toBeUndefined();
  });
});
