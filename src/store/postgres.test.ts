import { describe, expect, it } from 'vitest';
import { redactUrl } from './postgres.ts';

describe('redactUrl', () => {
  it('hides the password of a database URL and keeps the rest', () => {
    const shown = redactUrl('postgres://svc:s3cret-p%40ss@db.internal:5432/subagentd?sslmode=require');
    expect(shown).not.toContain('s3cret');
    expect(shown).toBe('postgres://svc:***@db.internal:5432/subagentd?sslmode=require');
  });

  it('never echoes an unparsable URL, which may hold a password', () => {
    expect(redactUrl('postgres://user:pw@[bad')).toBe('postgres://(unparsable URL)');
  });
});
