import v8 from 'node:v8';

/** V8's own flag: after each full collection the heap may grow to the live size × (1 + percent / 100). */
const FLAG = '--heap-growing-percent';
/** V8 reads `-` and `_` in a flag's name alike. */
const GIVEN = /^--heap[-_]growing[-_]percent=(\d+)$/;

/** Which bound holds, for the start's log line. */
export type HeapGrowth = { percent: number; by: 'HEAP_GROWING_PERCENT' | 'node flag' } | { percent: null; by: 'V8' };

/**
 * Bounds how far V8 lets the heap grow past what a full collection found alive. Left to itself, V8
 * lets a busy process's heap reach up to four times its live size before collecting it again: with
 * 1,000 tasks at once about 100 MB alive became 470-510 MiB of resident memory (BENCHMARKS.md,
 * issue 57). `HEAP_GROWING_PERCENT` sets the bound; 0 leaves V8's own heuristics, and a
 * `--heap-growing-percent` the process was started with (either spelling) is the operator's and wins.
 */
export function boundHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv, setFlags = v8.setFlagsFromString): HeapGrowth {
  const given = execArgv.map((arg) => GIVEN.exec(arg)).findLast((m) => m !== null);
  if (given) return { percent: Number(given[1]), by: 'node flag' };
  if (percent === 0) return { percent: null, by: 'V8' };
  setFlags(`${FLAG}=${percent}`);
  return { percent, by: 'HEAP_GROWING_PERCENT' };
}
