/** `npm run bench crash`: kill -9 under load, then a clean start: what was served is billed once (SQLite). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { closeDatabase, openSqlite } from '../src/store/database.ts';
import { startChildService } from '../test/support/child-service.ts';
import { startScriptedModel } from '../scripted-model/server.ts';
import { sleep, benchEnv } from './support.ts';

/**
 * Kill -9 at random moments under load, `rounds` times, then compare what the model server served
 * (answers whose usage chunk and [DONE] left it in full) with what the records bill. An answer the
 * dead process may never have read (still in its socket buffer at the kill) cannot be billed by
 * anyone; to tell those apart, the bench probes `/healthz` every 20 ms: an answer served more than
 * `marginMs` before the last probe the service answered had been read by its event loop. Answers
 * after that point are counted as in flight, billed or not.
 */
export async function benchCrash(rounds = 20, tasksPerRound = 24, marginMs = 100) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-crash-bench-'));
  const model = await startScriptedModel();
  const env = { ...benchEnv(dir, model.url), MAX_CONCURRENT_TASKS: '16', BASH_SANDBOX: 'none' };
  // Four steps: two with a short command (a kill can land while it runs), one listing, then complete.
  const script = [
    {
      text: 'looking around',
      chunkSize: 4,
      chunkDelayMs: 10,
      toolCalls: [{ name: 'bash', args: { command: 'sleep 0.2' } }],
      usage: { input: 1000, output: 10 },
    },
    { toolCalls: [{ name: 'list_files', args: {} }], chunkDelayMs: 20, usage: { input: 1000, output: 10 } },
    { text: 'one more', chunkSize: 2, chunkDelayMs: 15, toolCalls: [{ name: 'bash', args: { command: 'sleep 0.1' } }], usage: { input: 1000, output: 10 } },
    { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 1000, output: 10 } },
  ];
  const taskOf = new Map<string, string>(); // prompt marker → task id
  const kills: number[] = [];
  /** Per kill: the send time of the last /healthz probe answered before it. */
  const lastAlive: number[] = [];
  /** Per round: when its process was started (an answer served before it went to a dead one). */
  const starts: number[] = [];
  let n = 0;
  const submit = async (url: string) => {
    const marker = `CRASH-BENCH-${++n}`;
    model.script(marker, script);
    const res = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        subagent_type: 'general',
        description: 'crash bench',
        prompt: marker,
        context: { parentTaskId: 'P-crash', userId: `u-${n % 5}` },
      }),
    });
    if (res.status !== 202) throw new Error(`submit answered ${res.status}`);
    taskOf.set(marker, ((await res.json()) as { id: string }).id);
  };
  for (let round = 0; round < rounds; round++) {
    starts.push(Date.now());
    const svc = await startChildService(env, [], { built: true });
    await Promise.all(Array.from({ length: tasksPerRound }, () => submit(svc.url)));
    let alive = Date.now();
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const sent = Date.now();
        const ok = await fetch(`${svc.url}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok && probing) alive = sent;
        await sleep(20);
      }
    })();
    await sleep(300 + Math.random() * 2200);
    probing = false;
    lastAlive.push(alive);
    kills.push(Date.now());
    svc.child.kill('SIGKILL');
    await svc.exited;
    await probe;
  }
  // A last start: recovery ends what was running, the queued tasks run to their end.
  const last = await startChildService(env, [], { built: true });
  const end = Date.now() + 120_000;
  for (;;) {
    const open = await fetch(`${last.url}/tasks?status=queued&limit=1`).then((r) => r.json() as Promise<{ tasks: unknown[] }>);
    const running = await fetch(`${last.url}/tasks?status=running&limit=1`).then((r) => r.json() as Promise<{ tasks: unknown[] }>);
    if (open.tasks.length + running.tasks.length === 0 || Date.now() > end) break;
    await sleep(200);
  }
  last.child.kill('SIGTERM');
  await last.exited;
  spawnSync('pkill', ['-f', 'sleep 0\\.[12]']);

  const db = openSqlite(path.join(dir, 'db.sqlite'));
  const billedRows = db
    .sqlite!.prepare('SELECT task_id AS taskId, count(*) AS n, sum(input_tokens) AS input FROM usage_reports GROUP BY task_id')
    .all() as Array<{ taskId: string; n: number; input: number }>;
  const records = db.sqlite!.prepare('SELECT task_id AS taskId, input_tokens AS input, status FROM subagent_records').all() as Array<{
    taskId: string;
    input: number;
    status: string;
  }>;
  const unfinished = db.sqlite!.prepare("SELECT count(*) FROM tasks WHERE status IN ('queued', 'running')").pluck().get() as number;
  await closeDatabase(db);
  const billedOf = new Map(billedRows.map((r) => [r.taskId, r]));
  const recordOf = new Map(records.map((r) => [r.taskId, r]));
  let served = 0;
  let inFlight = 0;
  let billed = 0;
  let lost = 0;
  let duplicated = 0;
  let inFlightBilled = 0;
  let recordMismatch = 0;
  const settled = (at: number) => {
    const i = kills.findIndex((k) => k >= at);
    if (i === -1) return true; // the last, clean run
    // Served to the process of round i, long enough before it stopped answering.
    return at > starts[i] && at < lastAlive[i] - marginMs;
  };
  for (const [marker, taskId] of taskOf) {
    const answers = model.served.filter((s) => s.prompt === marker);
    const sure = answers.filter((a) => settled(a.at)).length;
    const maybe = answers.length - sure;
    const b = billedOf.get(taskId)?.n ?? 0;
    served += sure;
    inFlight += maybe;
    billed += b;
    if (b < sure) {
      lost += sure - b;
      if (process.env.BENCH_DEBUG) {
        const gaps = answers.map((a) => {
          const i = kills.findIndex((x) => x >= a.at);
          return `turn ${a.turn}: round ${i}, ${i === -1 ? 'after the last kill' : `${kills[i] - a.at} ms before its kill, ${lastAlive[i] - a.at} ms before its last probe`}`;
        });
        console.error('lost', marker, taskId, 'billed', b, recordOf.get(taskId)?.status, '|', gaps.join(' | '));
      }
    }
    if (b > sure + maybe) duplicated += b - sure - maybe;
    inFlightBilled += Math.min(Math.max(b - sure, 0), maybe);
    if ((recordOf.get(taskId)?.input ?? 0) !== (billedOf.get(taskId)?.input ?? 0)) recordMismatch++;
  }
  await model.close();
  rmSync(dir, { recursive: true, force: true });
  return { rounds, tasks: taskOf.size, served, inFlight, inFlightBilled, billed, lost, duplicated, recordMismatch, unfinished, records: records.length };
}
