/** `npm run bench instances`: several instances on one PostgreSQL database. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, startTestPostgres } from '../test/support/postgres.ts';
import { startChildService, type ChildService } from '../test/support/child-service.ts';
import { startScriptedModel } from '../scripted-model/server.ts';
import { WARMUP_TASKS, scriptCompare } from './compare.ts';
import { now, sleep, pct, benchEnv, cpuMsOf, warmUp, body, machineCpu, dbCountsOf } from './support.ts';

/**
 * Throughput with 1, 2 and 3 instances on one PostgreSQL database (a local cluster, fsync off):
 * `total` 4-call tasks (the compare script) submitted round-robin, `concurrency` at a time, each
 * waited for (?wait=true) on the instance it was sent to, whichever instance runs it.
 */
export async function benchInstances(total = 300, concurrency = 48) {
  const postgres = await startTestPostgres();
  const model = await startScriptedModel();
  scriptCompare(model);
  model.script('WARMUP', [{ toolCalls: [{ name: 'complete', args: { summary: 'warm', paths: [] } }] }]);
  const rows: Array<{
    instances: number;
    wallMs: number;
    perSecond: number;
    p50: number;
    p99: number;
    serviceCpuPct: number;
    machineCpuPct: number;
    completed: number;
    commitsPerTask: number;
    statementsPerTask: number;
    transactionsPerTask: number;
  }> = [];
  const countsOf = async (services: ChildService[]) => {
    const each = await Promise.all(services.map((s) => dbCountsOf(s.url)));
    return { statements: each.reduce((n, c) => n + c.statements, 0), transactions: each.reduce((n, c) => n + c.transactions, 0) };
  };
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  const commits = async (db: string) =>
    Number((await admin.query('SELECT pg_stat_clear_snapshot(), xact_commit FROM pg_stat_database WHERE datname = $1', [db])).rows[0].xact_commit);
  try {
    for (const n of [1, 2, 3]) {
      const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-instances-'));
      await ensureDatabase(postgres.url, `instances_${n}`);
      const { DATABASE_PATH: _file, ...env } = benchEnv(dir, model.url);
      const services: ChildService[] = [];
      for (let i = 0; i < n; i++) {
        services.push(
          await startChildService(
            {
              ...env,
              DATABASE_URL: postgres.urlOf(`instances_${n}`),
              INSTANCE_ID: `bench-${i}`,
              MAX_CONCURRENT_TASKS: String(concurrency),
              MAX_CONCURRENT_PER_TENANT: String(concurrency * 3),
              MAX_QUEUED_TASKS: String(total),
            },
            [],
            { built: true },
          ),
        );
      }
      try {
        for (const svc of services) for (let w = 0; w < WARMUP_TASKS; w++) await warmUp(svc.url);
        const latencies: number[] = [];
        let next = 0;
        let completed = 0;
        const cpuBefore = services.map((s) => cpuMsOf(s.child.pid!));
        const machineBefore = machineCpu();
        const commitsBefore = await commits(`instances_${n}`);
        const countsBefore = await countsOf(services);
        const started = now();
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            for (let i = next++; i < total; i = next++) {
              const t = now();
              const res = await fetch(`${services[i % n].url}/tasks?wait=true`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify(body(`COMPARE ${i}`, i)),
              });
              const out = (await res.json()) as { status: string };
              if (out.status === 'completed') completed++;
              latencies.push(now() - t);
            }
          }),
        );
        const wallMs = now() - started;
        const machineAfter = machineCpu();
        // The statistics collector reports with a delay of up to half a second.
        await sleep(1000);
        const commitsPerTask = ((await commits(`instances_${n}`)) - commitsBefore) / total;
        const countsAfter = await countsOf(services);
        const serviceCpuMs = services.reduce((sum, s, i) => sum + cpuMsOf(s.child.pid!) - cpuBefore[i], 0);
        rows.push({
          instances: n,
          wallMs,
          perSecond: (total / wallMs) * 1000,
          p50: pct(latencies, 50),
          p99: pct(latencies, 99),
          serviceCpuPct: (serviceCpuMs / wallMs) * 100,
          machineCpuPct: ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100,
          completed,
          commitsPerTask,
          statementsPerTask: (countsAfter.statements - countsBefore.statements) / total,
          transactionsPerTask: (countsAfter.transactions - countsBefore.transactions) / total,
        });
      } finally {
        for (const svc of services) {
          svc.child.kill('SIGTERM');
          await svc.exited;
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await admin.end();
    await model.close();
    await postgres.stop();
  }
  return { total, concurrency, rows };
}
