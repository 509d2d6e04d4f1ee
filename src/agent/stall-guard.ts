import { Agent, fetch as undiciFetch } from 'undici';

const STALL_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** True when `err` or one of its causes is undici's headers/body timeout: the model went silent. */
export function isStall(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (STALL_CODES.has((e as { code?: string }).code ?? '')) return true;
  }
  return false;
}

/**
 * A fetch that cuts a model request when no byte arrives for `ms`: waiting for the response
 * headers, or between two chunks of the body. undici's own socket timers do the watching (no
 * extra stream layer, no timer per chunk), and they only run while bytes are awaited, so time the
 * caller spends running tools is never counted.
 */
export function stallGuardedFetch(ms: number): typeof fetch {
  const dispatcher = new Agent({ headersTimeout: ms, bodyTimeout: ms, keepAliveTimeout: 10_000 });
  return ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
}
