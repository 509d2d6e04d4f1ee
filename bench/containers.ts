/** `npm run bench containers`: what SANDBOX=container costs against bubblewrap. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createContainerSandbox } from '../src/sandbox/container-sandbox.ts';
import type { Workspace } from '../src/workspace/workspace.ts';
import { DOCKER_HOST, engineClient, engineMissing } from '../test/support/container-engine.ts';
import { now, pct, startBenchService } from './support.ts';

/** bash calls of the model task whose difference gives one call's cost (then `complete`). */
const CALLS = 10;
/** Tasks started at once in the concurrency figure. */
const AT_ONCE = 8;

export interface ContainerBench {
  image: string;
  rounds: number;
  /** A run's container, in-process: its first command (made, started, one exec), a second exec, its removal (after the run, in the background). */
  start: { firstP50: number; firstP99: number; execP50: number; execP99: number; removeP50: number; removeP99: number };
  rows: Array<{ sandbox: 'bwrap' | 'container'; shellP50: number; shellP99: number; perCall: number; eightWall: number }>;
}

type Svc = Awaited<ReturnType<typeof startBenchService>>;

async function post(svc: Svc, body: Record<string, unknown>): Promise<{ status?: string }> {
  const res = await fetch(`${svc.url}/tasks?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const done = (await res.json()) as { status?: string };
  if (done.status !== 'completed') throw new Error(`a bench task ended ${JSON.stringify(done).slice(0, 300)}`);
  return done;
}

const shell = (svc: Svc, i: number) =>
  post(svc, { subagent_type: 'shell', description: 'container bench', command: 'true', context: { parentTaskId: `P-${i % 4}`, userId: 'u' } });

/** A model task of `calls` `bash true` calls, then complete. */
function bashTask(svc: Svc, marker: string, calls: number) {
  svc.model.script(marker, [
    ...Array.from({ length: calls }, () => ({ toolCalls: [{ name: 'bash', args: { command: 'true' } }], usage: { input: 100, output: 10 } })),
    { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 100, output: 10 } },
  ]);
  return post(svc, { subagent_type: 'general', description: 'container bench', prompt: marker, context: { parentTaskId: 'P-bash', userId: 'u' } });
}

/**
 * Per sandbox, `rounds` times: a shell task `true` (a task run with one command: for a container,
 * its making, one exec and its removal), a model task of 1 and of 1 + CALLS `bash true` calls (one
 * call's cost is their difference ÷ CALLS: the container made once in both), and AT_ONCE shell
 * tasks started together (the wall time until all have ended). The two services run one after the
 * other, each on its own; the figures are p50 (and p99 of the shell task).
 */
export async function benchContainers(rounds = 20): Promise<ContainerBench | { skipped: string }> {
  const docker = engineClient();
  const missing = await engineMissing(docker);
  if (missing) return { skipped: missing };
  const image = process.env.SANDBOX_TEST_BASE_IMAGE ?? 'localhost/subagentd-sandbox-base:bookworm';
  const start = await containerStarts(image, rounds);
  const rows: ContainerBench['rows'] = [];
  for (const sandbox of ['bwrap', 'container'] as const) {
    const svc = await startBenchService(
      sandbox === 'bwrap'
        ? { BASH_SANDBOX: 'bwrap', MAX_CONCURRENT_TASKS: String(AT_ONCE) }
        : { SANDBOX: 'container', SANDBOX_IMAGE: image, DOCKER_HOST, MAX_CONCURRENT_TASKS: String(AT_ONCE) },
    );
    const shellMs: number[] = [];
    const oneMs: number[] = [];
    const manyMs: number[] = [];
    const eightMs: number[] = [];
    try {
      for (let i = -2; i < rounds; i++) {
        let t = now();
        await shell(svc, i);
        if (i >= 0) shellMs.push(now() - t);
        t = now();
        await bashTask(svc, `CTR-BENCH-1-${i}`, 1);
        if (i >= 0) oneMs.push(now() - t);
        t = now();
        await bashTask(svc, `CTR-BENCH-${CALLS + 1}-${i}`, CALLS + 1);
        if (i >= 0) manyMs.push(now() - t);
        if (i % 4 === 0 || i < 0) {
          t = now();
          await Promise.all(Array.from({ length: AT_ONCE }, (_, k) => shell(svc, k)));
          if (i >= 0) eightMs.push(now() - t);
        }
      }
    } finally {
      await svc.close();
    }
    rows.push({
      sandbox,
      shellP50: pct(shellMs, 50),
      shellP99: pct(shellMs, 99),
      perCall: (pct(manyMs, 50) - pct(oneMs, 50)) / CALLS,
      eightWall: pct(eightMs, 50),
    });
  }
  return { image, rounds, start, rows };
}

/** `rounds` task runs' containers through the sandbox itself, one after the other, each with two `true` commands. */
async function containerStarts(image: string, rounds: number): Promise<ContainerBench['start']> {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-ctr-'));
  const sandbox = createContainerSandbox({
    engine: { socketPath: DOCKER_HOST.replace(/^unix:\/\//, '') },
    image,
    instanceId: `bench-${process.pid}`,
    maxProcesses: 256,
    maxFileBytes: 1 << 30,
    maxMemoryBytes: 1 << 30,
    tmpBytes: 64 << 20,
    cpus: null,
    engineTimeoutMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  const first: number[] = [];
  const exec: number[] = [];
  const remove: number[] = [];
  const command = { command: 'true', cwd: dir, timeoutMs: 60_000, maxOutputBytes: 1000 };
  try {
    await sandbox.prepare!();
    for (let i = -2; i < rounds; i++) {
      const box = sandbox.forRun!({ taskId: `bench-${i}`, workspace: { root: dir, cwd: dir } as Workspace });
      let t = now();
      const r = await box.run(dir, command);
      if (r.exitCode !== 0) throw new Error(`a container command failed: ${r.stderr}`);
      const a = now() - t;
      t = now();
      await box.run(dir, command);
      const b = now() - t;
      t = now();
      // The run's end does not wait for the removal; the service's end (close) does.
      await box.release();
      await sandbox.close!();
      if (i >= 0) {
        first.push(a);
        exec.push(b);
        remove.push(now() - t);
      }
    }
  } finally {
    await sandbox.close!();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    firstP50: pct(first, 50),
    firstP99: pct(first, 99),
    execP50: pct(exec, 50),
    execP99: pct(exec, 99),
    removeP50: pct(remove, 50),
    removeP99: pct(remove, 99),
  };
}
