import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { monotonicUlid, ulid } from './ids.ts';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('ids', () => {
  it('are ULIDs of the time given, distinct, every letter of the alphabet drawn about equally', () => {
    const at = Date.UTC(2026, 11, 2, 12);
    const ids = Array.from({ length: 20_000 }, () => ulid(at));
    for (const id of ids.slice(0, 100)) {
      expect(id).toMatch(ULID);
      expect(decodeTime(id)).toBe(at);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // 20,000 ids × 16 random letters: each of the 32 letters 10,000 times, give or take 5 %.
    const letters = new Map<string, number>();
    for (const id of ids) for (const c of id.slice(10)) letters.set(c, (letters.get(c) ?? 0) + 1);
    expect(letters.size).toBe(32);
    for (const n of letters.values()) expect(Math.abs(n - 10_000)).toBeLessThan(500);
  });

  it('grow strictly from a monotonic generator, within one millisecond too', () => {
    const next = monotonicUlid();
    const at = Date.now();
    const ids = Array.from({ length: 1_000 }, () => next(at));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
