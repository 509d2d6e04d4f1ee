import { describe, expect, it } from 'vitest';
import { isConflict, isRunAgain, isTakenOver, isUniqueViolation } from './sql-errors.ts';

const err = (code: string) => Object.assign(new Error(code), { code });

describe('sql errors', () => {
  it('runs again on a deadlock, a serialization failure or a statement that asks for it, nothing else', () => {
    for (const code of ['40P01', '40001', 'SA002']) expect(isConflict(err(code))).toBe(true);
    for (const e of [err('23505'), err('SA001'), new Error('x'), null, undefined]) expect(isConflict(e)).toBe(false);
  });

  it('tells a unique violation on either engine', () => {
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY', '23505']) expect(isUniqueViolation(err(code))).toBe(true);
    expect(isUniqueViolation(err('SQLITE_CONSTRAINT_NOTNULL'))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });

  it("tells the service's own two codes apart", () => {
    expect(isTakenOver(err('SA001'))).toBe(true);
    expect(isTakenOver(err('SA002'))).toBe(false);
    expect(isRunAgain(err('SA002'))).toBe(true);
    expect(isRunAgain(err('SA001'))).toBe(false);
    expect(isRunAgain(undefined)).toBe(false);
  });
});
