import { describe, expect, it } from 'vitest';
import { createSessionTable, type HeldSession } from './mcp-sessions.ts';

function table(limits = { maxSessions: 5, perTenant: 3, perKey: 2, idleMs: 60_000 }) {
  let clock = 1_000_000;
  const ended: HeldSession[] = [];
  const t = createSessionTable<HeldSession>({ limits, now: () => clock, end: (s) => ended.push(s) });
  let n = 0;
  const open = (tenant: string, key: string) => {
    const s: HeldSession = { tenant, key, lastSeen: clock, open: 0 };
    t.add(`s${++n}`, s);
    return s;
  };
  return { t, open, ended, advance: (ms: number) => (clock += ms) };
}

describe('createSessionTable', () => {
  it('refuses a key, then a tenant, past its share (429), the instance past its whole (503), and no one else', () => {
    const { t, open } = table();
    open('a', 'k1');
    open('a', 'k1');
    expect(t.refusal('a', 'k1')).toMatchObject({ status: 429, code: 'too_many_sessions', message: expect.stringContaining('MCP_SESSIONS_PER_KEY') });
    expect(t.refusal('a', 'k2')).toBeNull();
    open('a', 'k2');
    expect(t.refusal('a', 'k3')).toMatchObject({ status: 429, message: expect.stringContaining('MCP_SESSIONS_PER_TENANT') });
    expect(t.refusal('b', 'k4')).toBeNull();
    open('b', 'k4');
    open('c', 'k5');
    expect(t.refusal('d', 'k6')).toMatchObject({ status: 503, code: 'overloaded' });
  });

  it('says when the oldest idle session of the share frees its place, and frees it then without waiting for the sweep', () => {
    const { t, open, ended, advance } = table();
    const first = open('a', 'k1');
    advance(20_000);
    open('a', 'k1');
    advance(10_000);
    expect(t.refusal('a', 'k1')?.retryAfterS).toBe(30);
    advance(30_000);
    expect(t.refusal('a', 'k1')).toBeNull();
    expect(ended).toEqual([first]);
    expect(t.size).toBe(1);
  });

  it('never ends a session with a request open; its end restarts the idle time', () => {
    const { t, open, ended, advance } = table();
    const busy = open('a', 'k1');
    const done = t.begin(busy);
    advance(120_000);
    t.sweep();
    expect(ended).toEqual([]);
    done();
    done(); // told twice (close after finish): counted once
    expect(busy.open).toBe(0);
    advance(59_999);
    t.sweep();
    expect(ended).toEqual([]);
    advance(1);
    t.sweep();
    expect(ended).toEqual([busy]);
  });

  it('a removed session frees its place at once', () => {
    const { t, open } = table();
    open('a', 'k1');
    open('a', 'k1');
    expect(t.refusal('a', 'k1')).not.toBeNull();
    t.remove('s1');
    expect(t.refusal('a', 'k1')).toBeNull();
  });
});
