/** `npm run bench compare`: the service against a bare ai-SDK loop, one task at a time and 32 at a time. */
import { startScriptedModel } from '../scripted-model/server.ts';
import { startBareServer } from './bare.ts';
import { now, pct, startBenchService, warmUp, body, dbCountsOf } from './support.ts';

/** Tasks each side of the compare benchmark runs before measuring (the WARMUP task included). */
export const WARMUP_TASKS = 20;
/** The compare benchmark's tasks come in this many alternating rounds per side and measure. */
export const ROUNDS = 6;

/** The same 4-call task for the service and the bare loop: write, read, list, complete. */
export function scriptCompare(model: Awaited<ReturnType<typeof startScriptedModel>>) {
  const usage = { input: 500, output: 50 };
  model.script('COMPARE', (ctx) => {
    switch (ctx.turn) {
      case 0:
        return { text: 'Writing the notes.', toolCalls: [{ name: 'write_file', args: { path: 'notes/a.md', content: 'x'.repeat(2000) } }], usage };
      case 1:
        return { toolCalls: [{ name: 'read_file', args: { path: 'notes/a.md' } }], usage };
      case 2:
        return { toolCalls: [{ name: 'list_files', args: { path: 'notes' } }], usage };
      default:
        return { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: ['notes/a.md'] } }], usage };
    }
  });
}

/**
 * The service against a bare ai-SDK loop doing the same work on the same scripted model, in the
 * same run: one task at a time (latency), then `total` tasks `concurrency` at a time (wall time).
 */
export async function benchCompare(total = 300, concurrency = 32, sequential = 120) {
  const svc = await startBenchService({ MAX_CONCURRENT_TASKS: String(concurrency), MAX_QUEUED_TASKS: String(total) });
  scriptCompare(svc.model);
  await warmUp(svc.url);
  const once = async (i: number) => {
    const t = now();
    const res = await fetch(`${svc.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body(`COMPARE ${i}`, i)),
    });
    const out = JSON.parse(await res.text()) as { status: string };
    if (out.status !== 'completed') throw new Error(`task ended ${out.status}`);
    return now() - t;
  };
  // Steady state, not start-up: both warm up with the same number of tasks before measuring (the
  // JIT compiles hot code after some runs; the service has more of it than the bare loop).
  for (let i = 1; i < WARMUP_TASKS; i++) await once(-i);
  const bareFrom = svc.model.requests.length;
  const bare = await startBareServer(svc.model.url, WARMUP_TASKS);
  // Both measures in rounds that alternate the two sides, so that a slow spell of this shared
  // machine weighs on both alike: one task at a time, then `concurrency` at a time.
  const serviceSeq: number[] = [];
  const bareSeq: number[] = [];
  let serviceWall = 0;
  let bareWall = 0;
  let index = 0;
  const concurrently = async (n: number) => {
    let left = n;
    const started = now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await once(index++);
      }),
    );
    return now() - started;
  };
  // What the one-at-a-time tasks sent to the database (the few statements of background work,
  // the scheduler's and the webhook outbox's, included).
  const db = { statements: 0, transactions: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const before = await dbCountsOf(svc.url);
    for (let i = 0; i < sequential / ROUNDS; i++) serviceSeq.push(await once(index++));
    const after = await dbCountsOf(svc.url);
    db.statements += after.statements - before.statements;
    db.transactions += after.transactions - before.transactions;
    bareSeq.push(...(await bare.run(sequential / ROUNDS)).latencies);
  }
  for (let round = 0; round < ROUNDS; round++) {
    serviceWall += await concurrently(total / ROUNDS);
    bareWall += (await bare.run(total / ROUNDS, concurrency)).wallMs;
  }
  await bare.close();
  // The size of each side's first model request (system prompt, tools, kickoff) as sent on the wire.
  const firstRequest = (from: number, to: number, prompt: string) =>
    JSON.stringify(svc.model.requests.slice(from, to).find((r) => JSON.stringify(r.body.messages).includes(prompt))?.body ?? {}).length;
  const requestBytes = { service: firstRequest(0, bareFrom, 'COMPARE -1'), bare: firstRequest(bareFrom, Infinity, 'COMPARE -1') };
  await svc.close();
  return {
    total,
    concurrency,
    sequential,
    service: { p50: pct(serviceSeq, 50), p99: pct(serviceSeq, 99), wallMs: serviceWall },
    bare: { p50: pct(bareSeq, 50), p99: pct(bareSeq, 99), wallMs: bareWall },
    requestBytes,
    /** Per 4-call task, one at a time. */
    statementsPerTask: db.statements / sequential,
    transactionsPerTask: db.transactions / sequential,
  };
}
