/** `npm run bench usage`: GET /usage over a million seeded records (SQLite). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { closeDatabase, openSqlite } from '../src/store/database.ts';
import { rebuildRollups } from '../src/store/rollups.ts';
import { now, sleep, pct, startBenchService } from './support.ts';

/** GET /usage over 1,000,000 seeded records, per groupBy, over HTTP to the service process. */
export async function benchUsage(records = 1_000_000, runs = 30) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-'));
  const seedStart = now();
  const db = openSqlite(path.join(dir, 'db.sqlite'));
  const insert = db.sqlite!.prepare(
    `INSERT INTO subagent_records (id, task_id, tenant, subagent_type, parent_task_id, user_id, tool_call_id, description, model, steps,
       input_tokens, output_tokens, total_tokens, cached_input_tokens, reasoning_tokens, status, started_at, completed_at, duration_ms)
     VALUES (?, ?, 'default', ?, ?, ?, NULL, 'bench', ?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?, ?)`,
  );
  const types = ['general', 'explore', 'shell', 'reviewer', 'writer'];
  const models = ['gpt-4.1-mini', 'gpt-4.1', 'qwen2.5', 'llama3'];
  const t0 = Date.parse('2026-09-01T00:00:00Z');
  db.sqlite!.transaction(() => {
    for (let i = 0; i < records; i++) {
      const input = 100 + (i % 5000);
      const output = 10 + (i % 700);
      const started = t0 + Math.floor((i / records) * 90 * 86_400_000);
      const key = `${String(started).padStart(14, '0')}${String(i).padStart(8, '0')}`;
      insert.run(
        `rec_${key}`,
        `tsk_${key}`,
        types[i % 5],
        `P-${i % 10_000}`,
        `u-${i % 1000}`,
        models[i % 4],
        1 + (i % 9),
        input,
        output,
        input + output,
        i % 3 ? 0 : 50,
        i % 11 ? 0 : 7,
        started,
        started + 5000,
        5000,
      );
    }
  })();
  // The records were written by hand, not through the store: build their roll-ups as the migration does.
  const rollupStart = now();
  await rebuildRollups(db.sql);
  const rollupMs = now() - rollupStart;
  db.sqlite!.exec('ANALYZE');
  await closeDatabase(db);
  const seedMs = now() - seedStart;
  const svc = await startBenchService({}, { dir });
  const queries: Array<[string, string]> = [
    ['totals', '/usage'],
    ['by user', '/usage?groupBy=user'],
    ['by parent task (a page: 1,000 groups)', '/usage?groupBy=parentTask'],
    ['by parent task, a later page', '/usage?groupBy=parentTask&cursor=P-5000'],
    ['by parent task, all 10,000 in one answer', '/usage?groupBy=parentTask&limit=10000'],
    ['by subagent type', '/usage?groupBy=subagentType'],
    ['by model', '/usage?groupBy=model'],
    ['by day', '/usage?groupBy=day'],
    ['one user', '/usage?userId=u-7'],
    ['one user by day', '/usage?userId=u-7&groupBy=day'],
    ['one parent task', '/usage?parentTaskId=P-42'],
    ['one month by type', '/usage?from=2026-10-01&to=2026-11-01&groupBy=subagentType'],
    ['raw records, first page', '/usage/records?limit=100'],
    ['by user, from the raw records', '/usage?groupBy=user&source=records'],
  ];
  const rows = [];
  for (const [name, url] of queries) {
    const times: number[] = [];
    let groups = 0;
    for (let r = 0; r < runs; r++) {
      const t = now();
      const res = await fetch(`${svc.url}${url}`);
      const json = (await res.json()) as { groups?: unknown[]; records?: unknown[] };
      times.push(now() - t);
      if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
      groups = (json.groups ?? json.records ?? []).length;
    }
    rows.push({ name, url, groups, p50: pct(times, 50), p99: pct(times, 99) });
  }
  // The aggregates run on a reader thread: the service keeps answering meanwhile.
  const health: number[] = [];
  let busy = true;
  const heavy = Promise.all(Array.from({ length: 5 }, () => fetch(`${svc.url}/usage?groupBy=user`).then((r) => r.json()))).then(() => (busy = false));
  while (busy) {
    const t = now();
    await fetch(`${svc.url}/healthz`);
    health.push(now() - t);
    await sleep(5);
  }
  await heavy;
  await svc.close();
  return { records, seedMs, rollupMs, rows, healthDuring: { n: health.length, p50: pct(health, 50), p99: pct(health, 99) } };
}
