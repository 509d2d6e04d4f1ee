import { describe, expect, it } from 'vitest';
import { hashBody } from './hash-body.ts';

describe('hashBody', () => {
  it('ignores key order and undefined fields, not values', () => {
    expect(hashBody({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(hashBody({ b: { d: 'x', c: [1, 2] }, a: 1, e: undefined }));
    expect(hashBody({ a: 1 })).not.toBe(hashBody({ a: 2 }));
    expect(hashBody({ a: [1, 2] })).not.toBe(hashBody({ a: [2, 1] }));
  });
});
