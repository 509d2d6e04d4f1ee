/** `npm run bench load`: 1,000 tasks submitted at once, against the bare loop running the same. */
import { bareLoop } from './bare.ts';
import { now, sleep, startBenchService, memoryOf, loopP99Ms, warmUp, submit } from './support.ts';

/** 1,000 tasks at once, 2 s per model step, MAX_CONCURRENT_TASKS=1000. */
export async function benchLoad(tasks = 1000) {
  const svc = await startBenchService({
    MAX_CONCURRENT_TASKS: String(tasks),
    MAX_QUEUED_TASKS: String(tasks),
    // The 1,000 come from one tenant at once: its queue must hold them all while they start.
    MAX_QUEUED_PER_TENANT: String(tasks),
    HEARTBEAT_MS: '15000',
  });
  svc.model.script('LOAD', (ctx) =>
    ctx.turn === 0
      ? { delayMs: 2000, text: 'Listing the workspace.', toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 300, output: 20 } }
      : { delayMs: 2000, toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 400, output: 30 } },
  );
  await warmUp(svc.url);
  const before = memoryOf(svc.pid);
  await loopP99Ms(svc.url);
  let peakRss = 0;
  const loopSamples: number[] = [];
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memoryOf(svc.pid).rss)), 100);
  const scraper = setInterval(() => void loopP99Ms(svc.url).then((v) => loopSamples.push(v)), 1000);
  const started = now();
  const accepted = await Promise.all(Array.from({ length: tasks }, (_, i) => submit(svc.url, `LOAD ${i}`, i)));
  const submitMs = now() - started;
  const ids = new Set(accepted.map((a) => a.id));
  // Completed tasks, from the service's own counter (the warm-up task included).
  const completedCount = async () =>
    Number(/^subagentd_tasks_total\{status="completed",subagent_type="general"\} (\S+)$/m.exec(await (await fetch(`${svc.url}/metrics`)).text())?.[1] ?? 0) - 1;
  while ((await completedCount()) < tasks && now() - started < 120_000) await sleep(100);
  const wall = now() - started;
  clearInterval(sampler);
  clearInterval(scraper);
  loopSamples.push(await loopP99Ms(svc.url));
  const finished = await Promise.all([...ids].map(async (id) => ((await (await fetch(`${svc.url}/tasks/${id}`)).json()) as { status: string }).status));
  const usage = (await (await fetch(`${svc.url}/usage`)).json()) as { totals: { tasks: number; inputTokens: number } };
  const after = memoryOf(svc.pid);
  // The bare loop running the same 1,000 tasks at once on the same model server.
  const bare = await bareLoop(svc.model.url, tasks, tasks, ['--marker', 'LOAD', '--sample']);
  await svc.close();
  return {
    tasks,
    bare: { wallMs: bare.wallMs, peakRssMiB: bare.peakRssMiB!, loopP99Ms: bare.loopP99Ms! },
    completed: finished.filter((st) => st === 'completed').length,
    submitMs,
    wallMs: wall,
    rssBeforeMiB: before.rss,
    peakRssMiB: Math.max(peakRss, after.peak),
    loopP99Ms: Math.max(...loopSamples),
    billedTasks: usage.totals.tasks - 1,
    billedInput: usage.totals.inputTokens - 200,
  };
}
