import { describe, expect, it } from 'vitest';
import { createDeltaCoalescer } from './delta-coalescer.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('createDeltaCoalescer', () => {
  it('sends the first delta at once and joins the ones that follow within the window', async () => {
    const out: Array<[number, string]> = [];
    const c = createDeltaCoalescer((s, t) => out.push([s, t]), 20);
    c.push(1, 'Hel');
    expect(out).toEqual([[1, 'Hel']]);
    c.push(1, 'lo');
    c.push(1, ' wor');
    expect(out).toEqual([[1, 'Hel']]);
    await sleep(40);
    expect(out).toEqual([
      [1, 'Hel'],
      [1, 'lo wor'],
    ]);
    await sleep(40);
    // Quiet again: the next delta goes out at once.
    c.push(1, 'ld');
    expect(out.at(-1)).toEqual([1, 'ld']);
    c.close();
  });

  it('flushes on demand and when the step changes, keeping order', () => {
    const out: Array<[number, string]> = [];
    const c = createDeltaCoalescer((s, t) => out.push([s, t]), 1000);
    c.push(1, 'a');
    c.push(1, 'b');
    c.push(2, 'c');
    c.push(2, 'd');
    c.flush();
    expect(out).toEqual([
      [1, 'a'],
      [1, 'b'],
      [2, 'cd'],
    ]);
    c.close();
  });

  it('sends early once the joined text reaches maxChars', () => {
    const out: string[] = [];
    const c = createDeltaCoalescer((_s, t) => out.push(t), 1000, 4);
    c.push(1, 'ab');
    c.push(1, 'cd');
    c.push(1, 'ef');
    expect(out).toEqual(['ab', 'cdef']);
    c.close();
  });
});
