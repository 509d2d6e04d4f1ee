/** How long a loop over work that settles at once may hold the event loop before it gives a turn. */
export const SLICE_MS = 10;

/**
 * For a loop whose steps settle at once (SQLite's writes, a local queue): before each step,
 * `turn()` answers a promise that gives the event loop a turn (timers, sockets, heartbeats) once
 * `sliceMs` has passed since the last one, and undefined otherwise, so that a caller awaits only
 * when it is due (`const pause = turn(); if (pause) await pause;`: no microtask hop per step).
 */
export function turnTaker(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since <= sliceMs) return undefined;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      since = performance.now();
    });
  };
}
