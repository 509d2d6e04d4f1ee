import { randomFillSync } from 'node:crypto';
import { monotonicFactory, ulid as ulidOf } from 'ulid';

/**
 * Random bytes for ids, drawn from the OS 4 KiB at a time. ulid's own source asks for one byte per
 * character (16 calls and 16 arrays per id, found on every task's profile); these are the same
 * system CSPRNG's bytes. 256 is a multiple of the 32 letters of ulid's alphabet, so each letter
 * stays equally likely.
 */
const pool = new Uint8Array(4096);
let next = pool.length;
function randomFraction(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++] / 256;
}

/** A ULID for the time `at` (epoch ms; now when left out). */
export const ulid = (at?: number): string => ulidOf(at, randomFraction);

/** A ULID generator whose ids grow strictly, also within one millisecond. */
export const monotonicUlid = (): ((at?: number) => string) => monotonicFactory(randomFraction);
