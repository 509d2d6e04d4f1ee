import { describe, expect, it } from 'vitest';
import { createOutputCapture } from './output-capture.ts';

describe('createOutputCapture', () => {
  it('keeps everything under the budget', () => {
    const c = createOutputCapture(100);
    c.write(Buffer.from('hello '));
    c.write(Buffer.from('world'));
    expect(c.result()).toEqual({ text: 'hello world', truncated: false, totalBytes: 11 });
  });

  it('keeps head and tail and says how much was cut', () => {
    const c = createOutputCapture(10);
    for (let i = 0; i < 100; i++) c.write(Buffer.from(String(i % 10)));
    const r = c.result();
    expect(r.truncated).toBe(true);
    expect(r.totalBytes).toBe(100);
    expect(r.text).toBe('01234\n[... 90 bytes cut of 100 ...]\n56789');
  });

  it('handles one chunk larger than the budget', () => {
    const c = createOutputCapture(4);
    c.write(Buffer.from('abcdefghij'));
    expect(c.result().text).toBe('ab\n[... 6 bytes cut of 10 ...]\nij');
  });
});
