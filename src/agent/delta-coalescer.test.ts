import { describe, expect, it } from 'vitest';
import { createDeltaCoalescer } from './delta-coalescer';

describe('createDeltaCoalescer', () => {
  it('joins deltas of a step within the window and flushes on demand', async () => {
    const out: Array<[number, string]> = [];
    const c = createDeltaCoalescer((s, t) => out.push([s, t]), 10);
    c.push(1, 'Hel');
    c.push(1, 'lo');
    expect(out).toEqual([]);
    await new Promise((r) => setTimeout(r, 30));
    expect(out).toEqual([[1, 'Hello']]);
    c.push(1, ' wor');
    c.push(2, 'ld');
    c.flush();
    expect(out).toEqual([[1, 'Hello'], [1, ' wor'], [2, 'ld']]);
  });

  it('flushes early once the buffered text reaches maxChars', () => {
    const out: string[] = [];
    const c = createDeltaCoalescer((_s, t) => out.push(t), 1000, 4);
    c.push(1, 'ab');
    c.push(1, 'cd');
    c.push(1, 'e');
    expect(out).toEqual(['abcd']);
    c.flush();
    expect(out).toEqual(['abcd', 'e']);
  });
});
