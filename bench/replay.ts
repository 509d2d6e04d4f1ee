/** `npm run bench replay`: what replaying a 20-step task costs the service beyond its model calls. */
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ScriptedTurn } from '../scripted-model/server.ts';
import { cpuMsOf, dbCountsOf, now, pct, startBenchService, warmUp } from './support.ts';

/** The task's tool calls before `complete`: writes, reads, listings and a bash line every fifth step. */
const STEPS = 20;
/** Files in the parent's workspace before the first task: a replay's copy is made of them. */
const FILES = Number(process.env.BENCH_REPLAY_FILES ?? 500);

function steps(): ScriptedTurn[] {
  const calls = Array.from({ length: STEPS }, (_, i): ScriptedTurn => {
    if (i % 5 === 4) return { toolCalls: [{ name: 'bash', args: { command: `echo step ${i} >> log.txt` } }] };
    if (i % 3 === 0) return { toolCalls: [{ name: 'write_file', args: { path: `notes/${i}.md`, content: `# Step ${i}\n${'text '.repeat(200)}\n` } }] };
    if (i % 3 === 1) return { toolCalls: [{ name: 'read_file', args: { path: `src/f${i}.ts` } }] };
    return { toolCalls: [{ name: 'list_files', args: { path: 'src' } }] };
  });
  return [...calls, { toolCalls: [{ name: 'complete', args: { summary: 'twenty steps done', paths: ['log.txt'] } }] }];
}

interface Run {
  wallMs: number;
  cpuMs: number;
  statements: number;
  dbBytes: number;
}

/**
 * `rounds` rounds, each one original 20-step task (`?wait=true`) and then its replay on the same
 * model with recorded tools (every call answered from the record), alternating. The model answers
 * at once, so the wall time is the service's and the model server's; the service's CPU time, its
 * statements and the database's growth are its own. What a replay costs beyond its model calls is
 * its figures, next to the original's (which ran every tool).
 */
export async function benchReplay(rounds = 7) {
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-replay-'));
  const svc = await startBenchService({}, { dir });
  const dbBytes = () => ['db.sqlite', 'db.sqlite-wal'].reduce((n, f) => n + (statSync(path.join(dir, f), { throwIfNoEntry: false })?.size ?? 0), 0);
  const measure = async (run: () => Promise<void>): Promise<Run> => {
    const [cpu, db, bytes, t] = [cpuMsOf(svc.pid), await dbCountsOf(svc.url), dbBytes(), now()];
    await run();
    const wallMs = now() - t;
    return { wallMs, cpuMs: cpuMsOf(svc.pid) - cpu, statements: (await dbCountsOf(svc.url)).statements - db.statements, dbBytes: dbBytes() - bytes };
  };
  const end = async (id: string) => {
    const res = await fetch(`${svc.url}/tasks/${id}/events`);
    await res.text();
    const task = (await (await fetch(`${svc.url}/tasks/${id}`)).json()) as { status: string; replay?: { divergedAtStep: number | null } };
    if (task.status !== 'completed') throw new Error(`task ${id} ended ${task.status}`);
    return task;
  };
  try {
    await warmUp(svc.url);
    const originals: Run[] = [];
    const replays: Run[] = [];
    for (let r = -1; r < rounds; r++) {
      const parent = `P-replay-${r}`;
      const root = path.join(dir, 'workspaces', parent);
      mkdirSync(path.join(root, 'src'), { recursive: true });
      for (let i = 0; i < FILES; i++) writeFileSync(path.join(root, 'src', `f${i}.ts`), `export const v${i} = ${i};\n`.repeat(20));
      const marker = `REPLAY-BENCH-${r}`;
      svc.model.script(marker, steps());
      let id = '';
      const original = await measure(async () => {
        const res = await fetch(`${svc.url}/tasks?wait=true`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ subagent_type: 'general', description: 'bench', prompt: marker, context: { parentTaskId: parent, userId: 'u-bench' } }),
        });
        const task = (await res.json()) as { id: string; status: string; steps: number };
        if (task.status !== 'completed' || task.steps !== STEPS + 1) throw new Error(`original ended ${task.status} after ${task.steps} steps`);
        id = task.id;
      });
      const replay = await measure(async () => {
        const res = await fetch(`${svc.url}/tasks/${id}/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        if (res.status !== 202) throw new Error(`replay answered ${res.status}: ${await res.text()}`);
        const task = await end(((await res.json()) as { id: string }).id);
        if (task.replay?.divergedAtStep !== null) throw new Error(`the replay diverged at ${task.replay?.divergedAtStep}`);
      });
      // Round -1 warms the paths a replay takes; it is not counted.
      if (r >= 0) {
        originals.push(original);
        replays.push(replay);
      }
    }
    const sum = (runs: Run[]) => ({
      wallMs: pct(
        runs.map((x) => x.wallMs),
        50,
      ),
      cpuMs: pct(
        runs.map((x) => x.cpuMs),
        50,
      ),
      statements: pct(
        runs.map((x) => x.statements),
        50,
      ),
      dbBytes: pct(
        runs.map((x) => x.dbBytes),
        50,
      ),
    });
    return { rounds, steps: STEPS, files: FILES, original: sum(originals), replay: sum(replays) };
  } finally {
    await svc.close();
  }
}
