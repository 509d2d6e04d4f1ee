import { describe, expect, it } from 'vitest';
import { pickFair } from './dispatcher.ts';

const head = (tenant: string, n: number) => ({ id: `${tenant}${n}`, webhookId: `w-${tenant}${n}`, tenant });
const idle = { endpoints: new Set<string>(), perTenant: new Map<string, number>(), total: 0 };

describe('pickFair', () => {
  it('takes tenants in turn, at most 8 of one tenant and 32 in all', () => {
    const heads = [...Array.from({ length: 20 }, (_, i) => head('a', i)), head('b', 0), ...Array.from({ length: 30 }, (_, i) => head('c', i))];
    const picked = pickFair(heads, idle);
    expect(picked.slice(0, 3).map((h) => h.id)).toEqual(['a0', 'b0', 'c0']);
    expect(picked.filter((h) => h.tenant === 'a')).toHaveLength(8);
    expect(picked.filter((h) => h.tenant === 'b')).toHaveLength(1);
    expect(picked.filter((h) => h.tenant === 'c')).toHaveLength(8);
  });

  it('skips busy endpoints and counts what is already in flight', () => {
    const heads = [head('a', 0), head('a', 1), head('b', 0)];
    const picked = pickFair(heads, { endpoints: new Set(['w-a0']), perTenant: new Map([['a', 8]]), total: 8 });
    expect(picked.map((h) => h.id)).toEqual(['b0']);
    expect(pickFair(heads, { endpoints: new Set(), perTenant: new Map(), total: 31 }).map((h) => h.id)).toEqual(['a0']);
  });
});
