import { describe, expect, it } from 'vitest';
import { untilAborted } from './tool-calls.ts';

describe('untilAborted', () => {
  it('does not wait for work once its signal is aborted, and still observes the work failing later', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let fail!: (err: Error) => void;
      const work = new Promise((_, reject) => (fail = reject));
      const signal = AbortSignal.abort();
      await expect(untilAborted(work, signal)).resolves.toBeUndefined();
      // An owned write that found the task taken over, after the run was stopped.
      fail(new Error('taken over'));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('answers the work, or its failure, while the signal holds', async () => {
    const signal = new AbortController().signal;
    await expect(untilAborted(Promise.resolve(7), signal)).resolves.toBe(7);
    await expect(untilAborted(Promise.reject(new Error('no')), signal)).rejects.toThrow('no');
  });
});
