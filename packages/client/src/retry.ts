/** How requests that the service turned away (429, 503) or that never reached it are retried. */
export interface RetryOptions {
  /** Retries after the first attempt (default 5). */
  retries?: number;
  /** First backoff when no Retry-After is given; doubles each time (default 500 ms). */
  baseDelayMs?: number;
  /** Longest single wait, Retry-After included (default 60 s). */
  maxDelayMs?: number;
}

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or null. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Backoff for attempt `n` (0-based): exponential with full jitter, capped. */
export function backoffMs(n: number, opts: Required<RetryOptions>): number {
  return Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** n) * (0.5 + Math.random() / 2);
}

/** Waits `ms`, or rejects with the signal's reason when it fires first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(reasonOf(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(reasonOf(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What an aborted signal was aborted with, as an Error (AbortSignal.abort() gives a DOMException, which is one). */
function reasonOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}
