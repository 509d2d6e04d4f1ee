import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type TurnContext } from '../scripted-model/server';
import Database from 'better-sqlite3';
import pg from 'pg';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { testDatabaseUrl } from './support/postgres';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';

/**
 * A lead whose process is killed (SIGKILL) while its background children run: the next start
 * resumes the lead and the children from where they were, and starts no child twice. On SQLite,
 * and on PostgreSQL with TEST_DATABASE=postgres (the restarted instance keeps its name).
 */
let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bg-crash-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Runs subagents at once\nmaxDepth: 1\nbackground: true\n---\nDelegate.\n');
  // RECOVERY_MODE is left at its default: resume.
  env = childEnv(dir, model.url, TEST_API_KEY);
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const kill9 = async (svc: ChildService) => {
  svc.child.kill('SIGKILL');
  await svc.exited;
  // Without the sandbox nothing ties a command to the dead service.
  spawnSync('pkill', ['-f', 'sleep 7373']);
};
const post = (svc: ChildService, body: unknown) =>
  json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const tasksOf = async (svc: ChildService, parentTaskId: string) => (await json(`${svc.url}/tasks?parentTaskId=${parentTaskId}`)).body.tasks as any[];
/** The model's requests of the task whose prompt holds `marker`, with their turn. */
const asked = (marker: string) =>
  model.requests
    .filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker))
    .map((r) => ({ turn: r.body.messages.filter((m) => m.role === 'assistant').length, body: r.body }));

/** A lead's turn after the first: `wait` for those still running, then complete with their summaries. */
function waitThenComplete(ctx: TurnContext) {
  const results = ctx.messages
    .filter((m) => m.role === 'tool')
    .flatMap((m) => {
      try {
        return [JSON.parse(String(m.content)) as Record<string, any>];
      } catch {
        return [];
      }
    });
  const started = results.filter((r) => 'task_id' in r).map((r) => r.task_id as string);
  const waits = results.filter((r) => 'finished' in r);
  const running = waits.length === 0 ? started : (waits.at(-1)!.running as Array<{ task_id: string }>).map((r) => r.task_id);
  if (running.length > 0) return { toolCalls: [{ name: 'wait', args: { task_ids: running } }] };
  const summaries = waits.flatMap((w) => (w.finished as Array<{ summary: string }>).map((f) => f.summary));
  return { toolCalls: [{ name: 'complete', args: { summary: summaries.sort().join(', '), paths: [] } }] };
}

/** Children that hang on their first call until the kill, and finish at once when asked again. */
function scriptChildren(prefix: string, parts: string[]) {
  for (const x of parts) {
    model.script(`${prefix}-${x}`, (ctx) =>
      ctx.attempt === 1 ? { delayMs: 60_000, text: 'never arrives' } : { toolCalls: [{ name: 'complete', args: { summary: `${x} done`, paths: [] } }] },
    );
  }
}
const spawnCalls = (prefix: string, parts: string[]) =>
  parts.map((x) => ({ name: 'task', args: { subagent_type: 'general', description: `Part ${x}`, prompt: `${prefix}-${x}` } }));

describe('a lead killed while its background children run', () => {
  it('resumes, waits again and finds its three children as they are: none is started twice', async () => {
    const parts = ['A', 'B', 'C'];
    model.script('BGC-WAIT-LEAD', (ctx) => (ctx.turn === 0 ? { toolCalls: spawnCalls('BGC-WAIT', parts) } : waitThenComplete(ctx)));
    scriptChildren('BGC-WAIT', parts);
    const first = await startChildService(env);
    const lead = (await post(first, taskBody({ subagent_type: 'lead', prompt: 'BGC-WAIT-LEAD', context: { parentTaskId: 'T-bgc-wait', userId: 'u' } }))).body
      .id as string;
    // Every child is in its first model call, and the lead waits for them.
    await until(async () => parts.every((x) => asked(`BGC-WAIT-${x}`).length === 1));
    await until(async () => (await json(`${first.url}/tasks/${lead}`)).body.progress?.tool === 'wait');
    const before = (await tasksOf(first, 'T-bgc-wait')).filter((t) => t.parentTask === lead);
    expect(before).toHaveLength(3);
    await kill9(first);

    const second = await startChildService(env);
    try {
      await until(async () => (await json(`${second.url}/tasks/${lead}`)).body.status === 'completed', 30_000);
      expect((await json(`${second.url}/tasks/${lead}`)).body).toMatchObject({ summary: 'A done, B done, C done' });
      const all = await tasksOf(second, 'T-bgc-wait');
      const children = all.filter((t) => t.parentTask === lead);
      expect(all).toHaveLength(4);
      expect(children.map((c) => c.id).sort()).toEqual(before.map((c) => c.id).sort());
      for (const c of children) expect(c).toMatchObject({ status: 'completed', background: true, steps: 1 });
      // The step that started them was stored before the kill: asked once. Each child was asked
      // its first step again (cut by the kill), and resumed, not started again.
      expect(asked('BGC-WAIT-LEAD').filter((r) => r.turn === 0)).toHaveLength(1);
      for (const x of parts) expect(asked(`BGC-WAIT-${x}`).map((r) => r.turn)).toEqual([0, 0]);
      const records = (await json(`${second.url}/usage/records?parentTaskId=T-bgc-wait`)).body.records as Array<{ taskId: string }>;
      expect(records.map((r) => r.taskId).sort()).toEqual(all.map((t) => t.id).sort());
    } finally {
      await kill9(second);
    }
  });

  it('asks the cut step again with new call ids, and the children it started are found by their place', async () => {
    const parts = ['A', 'B', 'C'];
    model.script('BGC-STEP-LEAD', (ctx) => {
      if (ctx.turn > 0) return waitThenComplete(ctx);
      // The step that starts them also runs a command, cut by the kill: the step is not stored,
      // and the next start asks it again. The scripted model gives each answer new call ids.
      return { toolCalls: [...spawnCalls('BGC-STEP', parts), { name: 'bash', args: { command: ctx.attempt === 1 ? 'sleep 7373' : 'true' } }] };
    });
    scriptChildren('BGC-STEP', parts);
    const first = await startChildService(env);
    const lead = (await post(first, taskBody({ subagent_type: 'lead', prompt: 'BGC-STEP-LEAD', context: { parentTaskId: 'T-bgc-step', userId: 'u' } }))).body
      .id as string;
    await until(async () => parts.every((x) => asked(`BGC-STEP-${x}`).length === 1));
    await until(async () => spawnSync('pgrep', ['-f', 'sleep 7373']).status === 0);
    const before = (await tasksOf(first, 'T-bgc-step')).filter((t) => t.parentTask === lead);
    expect(before).toHaveLength(3);
    await kill9(first);

    const second = await startChildService(env);
    try {
      await until(async () => (await json(`${second.url}/tasks/${lead}`)).body.status === 'completed', 30_000);
      expect((await json(`${second.url}/tasks/${lead}`)).body).toMatchObject({ summary: 'A done, B done, C done' });
      const all = await tasksOf(second, 'T-bgc-step');
      expect(all).toHaveLength(4);
      expect(
        all
          .filter((t) => t.parentTask === lead)
          .map((c) => c.id)
          .sort(),
      ).toEqual(before.map((c) => c.id).sort());
      // Asked twice, with other call ids the second time: the children keep the first run's.
      expect(asked('BGC-STEP-LEAD').filter((r) => r.turn === 0)).toHaveLength(2);
      const secondRun = asked('BGC-STEP-LEAD')
        .find((r) => r.turn === 1)!
        .body.messages.find((m) => m.role === 'assistant')!;
      const idsNow = (secondRun.tool_calls as Array<{ id: string; function: { name: string } }>).filter((c) => c.function.name === 'task').map((c) => c.id);
      expect(idsNow).toHaveLength(3);
      for (const c of before) expect(idsNow).not.toContain(c.context.toolCallId);
    } finally {
      await kill9(second);
    }
  });

  it('a child left running by a lead that ended is cancelled at the next start (parent_ended), a waited-for one too', async () => {
    model.script('BGC-LOST-LEAD', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Waited for', prompt: 'BGC-LOST-CHILD', run_in_background: false } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'lead done', paths: [] } }] },
    );
    // Never answers: only a cancel ends it.
    model.script('BGC-LOST-CHILD', () => ({ delayMs: 60_000, text: 'never arrives' }));
    const first = await startChildService(env);
    const lead = (await post(first, taskBody({ subagent_type: 'lead', prompt: 'BGC-LOST-LEAD', context: { parentTaskId: 'T-bgc-lost', userId: 'u' } }))).body
      .id as string;
    await until(async () => asked('BGC-LOST-CHILD').length === 1);
    const [child] = (await tasksOf(first, 'T-bgc-lost')).filter((t) => t.parentTask === lead);
    expect(child).toMatchObject({ background: false, status: 'running' });
    await kill9(first);
    // What a start whose answer was lost leaves behind: the lead ended, stopped while its `task`
    // call could not know the child was stored, and the child not cancelled.
    const url = await testDatabaseUrl(dir);
    if (url) {
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      await db.query(`UPDATE tasks SET status = 'aborted' WHERE id = $1`, [lead]);
      await db.end();
    } else {
      const db = new Database(env.DATABASE_PATH);
      db.prepare(`UPDATE tasks SET status = 'aborted' WHERE id = ?`).run(lead);
      db.close();
    }

    const second = await startChildService(env);
    try {
      await until(async () => (await json(`${second.url}/tasks/${child.id}`)).body.status === 'aborted', 15_000);
      expect((await json(`${second.url}/tasks/${child.id}`)).body.error).toMatchObject({ code: 'parent_ended' });
    } finally {
      await kill9(second);
    }
  });
});
