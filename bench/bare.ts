/** The bare loop (bench/bare-loop.mjs): the ai SDK alone, as its own process, the yardstick of the other benchmarks. */
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

export interface BareRun {
  wallMs: number;
  latencies: number[];
  chunkLatencies?: number[];
  peakRssMiB?: number;
  loopP99Ms?: number;
}

/** The bare loop (bench/bare-loop.mjs) as its own process against `modelUrl` (the model server runs here). */
export async function bareLoop(modelUrl: string, tasks: number, concurrency: number, extra: string[] = []): Promise<BareRun> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['bench/bare-loop.mjs', '--tasks', String(tasks), '--concurrency', String(concurrency), ...extra],
    { env: { ...process.env, OPENAI_BASE_URL: modelUrl }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

/**
 * The bare loop as a warm process that runs tasks one at a time on demand (`--serve`), so that the
 * compare benchmark can alternate it with the service.
 */
export async function startBareServer(modelUrl: string, warmup: number, extra: string[] = []) {
  const child = spawn(process.execPath, ['bench/bare-loop.mjs', '--serve', '--warmup', String(warmup), ...extra], {
    env: { ...process.env, OPENAI_BASE_URL: modelUrl },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const answer = async () => JSON.parse((await lines.next()).value as string);
  await answer(); // { ready: true } once warm
  return {
    /** Runs `n` tasks `concurrency` at a time. */
    async run(n: number, concurrency = 1): Promise<{ wallMs: number; latencies: number[] }> {
      child.stdin.write(`run ${n} ${concurrency}\n`);
      return answer();
    },
    async close() {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}
