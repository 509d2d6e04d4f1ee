import v8 from 'node:v8';

/** V8's own flag: after each full collection the heap may grow to the live size × (1 + percent / 100). */
const FLAG = '--heap-growing-percent';

/**
 * Bounds how far V8 lets the heap grow past what a full collection found alive. Left to itself, V8
 * lets a busy process's heap reach up to four times its live size before collecting it again: with
 * 1,000 tasks at once about 100 MB alive became 450-980 MiB of resident memory (BENCHMARKS.md,
 * issue 57). `HEAP_GROWING_PERCENT` sets the bound; 0 leaves V8's own heuristics, and a
 * `--heap-growing-percent` the process was started with is the operator's and wins.
 * Answers what was applied: the percent, or null if nothing was.
 */
export function boundHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv, setFlags = v8.setFlagsFromString): number | null {
  if (percent === 0 || execArgv.some((arg) => arg === FLAG || arg.startsWith(`${FLAG}=`))) return null;
  setFlags(`${FLAG}=${percent}`);
  return percent;
}
