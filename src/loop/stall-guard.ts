import { APICallError } from '@ai-sdk/provider';
import { Agent } from 'undici';
import { ModelStallError } from './model-guard.ts';
import { requestFetch } from './request-fetch.ts';

const STALL_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'MODEL_STALL']);

type ChainError = { code?: string; cause?: unknown; lastError?: unknown; errors?: unknown[] };

/**
 * What `look` first says of `err`, one of its causes, the last error of the SDK's retries or an
 * error it aggregates (16 at most), or undefined when it says nothing of any.
 */
function inChain<T>(err: unknown, look: (e: ChainError) => T | undefined): T | undefined {
  const seen = new Set<unknown>();
  const stack = [err];
  while (stack.length > 0 && seen.size < 16) {
    const e = stack.pop() as ChainError | undefined;
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const said = look(e);
    if (said !== undefined) return said;
    stack.push(e.cause, e.lastError, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return undefined;
}

/** True when the error is a stall: undici's headers/body timeout or the model guard's content timeout. */
export function isStall(err: unknown): boolean {
  return inChain(err, (e) => (STALL_CODES.has(e.code ?? '') ? true : undefined)) ?? false;
}

/**
 * True when another model may well answer what this one failed: a stall, an answer cut before its
 * end, or an HTTP error the SDK counts as retryable (408, 409, 429, 5xx, a network failure). A
 * refused request (400, 401, 404) is not: the next model would be refused alike.
 */
export function worthFallingBack(err: unknown): boolean {
  return (
    inChain(err, (e) => {
      if (STALL_CODES.has(e.code ?? '') || e.code === 'MODEL_INCOMPLETE') return true;
      return APICallError.isInstance(e) ? e.isRetryable : undefined;
    }) ?? false
  );
}

/**
 * A fetch that cuts a model request when no byte arrives for `ms`: waiting for the response
 * headers, or between two chunks of the body. undici's own socket timers do the watching, and they
 * only run while bytes are awaited, so time the caller spends running tools is never counted.
 * Silence before the first byte is not retried (it would multiply the wait by the retries): it
 * ends the call as a stall at once. Content-level silence is the model guard's job.
 */
export function stallGuardedFetch(ms: number): typeof fetch {
  const modelFetch = requestFetch(new Agent({ headersTimeout: ms, bodyTimeout: ms, keepAliveTimeout: 10_000 }));
  return async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    try {
      return await modelFetch(input, init);
    } catch (err) {
      // Not a TypeError and no network code in its chain: the SDK does not retry it.
      if (isStall(err)) throw new ModelStallError(ms, 'first byte');
      throw err;
    }
  };
}
