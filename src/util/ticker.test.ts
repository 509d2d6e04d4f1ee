import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTicker } from './ticker.ts';

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('createTicker', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ticks at its interval from start to stop, once per interval however often started', () => {
    vi.useFakeTimers();
    const tick = vi.fn();
    const ticker = createTicker({ everyMs: 1000, tick });
    vi.advanceTimersByTime(5000);
    expect(tick).not.toHaveBeenCalled();
    ticker.start();
    ticker.start();
    expect(ticker.running).toBe(true);
    vi.advanceTimersByTime(3500);
    expect(tick).toHaveBeenCalledTimes(3);
    ticker.stop();
    expect(ticker.running).toBe(false);
    vi.advanceTimersByTime(5000);
    expect(tick).toHaveBeenCalledTimes(3);
    ticker.start();
    vi.advanceTimersByTime(1000);
    expect(tick).toHaveBeenCalledTimes(4);
    ticker.stop();
  });

  it('does not keep the process alive', () => {
    const before = timeouts();
    const ticker = createTicker({ everyMs: 60_000, tick: () => {} });
    ticker.start();
    expect(timeouts()).toBe(before);
    ticker.stop();
  });
});
