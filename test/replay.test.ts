import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

/** Replays: a finished task run again on another model, its recorded tool results answering. */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-replay-'));
  const prices = path.join(dir, 'prices.json');
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'replay-lead.md'), '---\nname: replay-lead\ndescription: Starts a child\nmaxDepth: 1\n---\nLead.\n');
  writeFileSync(prices, JSON.stringify({ 'first-model': { inputPerMTok: 1, outputPerMTok: 10 }, 'second-model': { inputPerMTok: 2, outputPerMTok: 20 } }));
  svc = await startService({ model, dir, env: { PRICES_FILE: prices } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspace = (parent: string) => path.join(svc.config.workspacesDir, parent);
const run = async (payload: object) => {
  const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};
const replay = async (id: string, payload: object) => {
  const res = await svc.inject({ method: 'POST', url: `/tasks/${id}/replay`, payload });
  expect(res.statusCode, res.body).toBe(202);
  return taskEnd(svc, res.json().id);
};

/**
 * A task that appends to a log with bash, writes notes, then completes with them. `notes` says
 * what each model writes: another text from the second model makes the replay diverge there.
 */
function scriptNotes(marker: string, notes: (model: string) => string) {
  model.script(marker, (ctx) => {
    if (ctx.turn === 0)
      return { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> log.txt && wc -l < log.txt' } }], usage: { input: 1000, output: 100 } };
    if (ctx.turn === 1)
      return { toolCalls: [{ name: 'write_file', args: { path: 'notes.md', content: notes(ctx.model) } }], usage: { input: 1000, output: 100 } };
    return { toolCalls: [{ name: 'complete', args: { summary: 'Wrote the notes', paths: ['notes.md'] } }], usage: { input: 1000, output: 100 } };
  });
}

describe('POST /tasks/:id/replay', () => {
  it('answers every recorded call from the record on another model: the command ran once in all', async () => {
    scriptNotes('REPLAY-SAME', () => '# Notes\n');
    const context = { parentTaskId: 'T-replay-same', userId: 'u-r' };
    const original = await run(taskBody({ prompt: 'REPLAY-SAME', context, options: { model: 'first-model' } }));
    expect(original).toMatchObject({ status: 'completed', replayOf: null, replay: null });

    const again = await replay(original.id, { model: 'second-model' });
    expect(again).toMatchObject({ status: 'completed', model: 'second-model', summary: 'Wrote the notes', replayOf: original.id });
    // The second model read the first run's results: the bash line's output is the recorded "1".
    const served = model.requests.filter((r) => r.body.model === 'second-model' && JSON.stringify(r.body.messages).includes('REPLAY-SAME'));
    expect(served).toHaveLength(3);
    expect(JSON.stringify(served[1].body.messages)).toContain('1');
    // Ran once in all: the shared log has one line, and the replay's copy too.
    expect(readFileSync(path.join(workspace('T-replay-same'), 'log.txt'), 'utf8')).toBe('ran\n');

    const events = await storedEvents(svc, again.id);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'tool.replayed')).toHaveLength(2);
    expect(types).not.toContain('replay.diverged');
    // The replayed call's events in order: its call, answered from the record, then its result.
    const bashCall = types.indexOf('tool.call');
    expect(types.slice(bashCall, bashCall + 3)).toEqual(['tool.call', 'tool.replayed', 'tool.result']);

    // Only the replay's own model calls are billed: 3 calls of 1000 in, 100 out at $2/$20 per MTok.
    expect(again.usage).toMatchObject({ inputTokens: 3000, outputTokens: 300, costMicroUsd: 12_000 });
    expect(again.replay).toEqual({
      of: original.id,
      tools: 'recorded',
      divergedAtStep: null,
      comparison: {
        steps: { original: 3, replay: 3 },
        inputTokens: { original: 3000, replay: 3000 },
        outputTokens: { original: 300, replay: 300 },
        costMicroUsd: { original: 6_000, replay: 12_000 },
        sameSummary: true,
        artifacts: { same: ['notes.md'], changed: [], missing: [] },
      },
    });
    // It ran in a worktree copy: nothing to apply, since recorded answers changed nothing.
    expect(again.changes).toMatchObject({ added: [], modified: [], deleted: [] });
  });

  it('diverges at the first call that differs and goes on live in a copy, the shared workspace untouched', async () => {
    scriptNotes('REPLAY-DIVERGE', (m) => (m === 'second-model' ? '# Better notes\n' : '# Notes\n'));
    const context = { parentTaskId: 'T-replay-diverge', userId: 'u-r' };
    const original = await run(taskBody({ prompt: 'REPLAY-DIVERGE', context, options: { model: 'first-model' } }));
    const again = await replay(original.id, { model: 'second-model' });
    expect(again).toMatchObject({ status: 'completed', replay: { divergedAtStep: 2 } });

    const events = await storedEvents(svc, again.id);
    const diverged = events.find((e) => e.type === 'replay.diverged')!;
    expect(diverged.data).toEqual({
      step: 2,
      expected: { toolName: 'write_file', input: { path: 'notes.md', content: '# Notes\n' } },
      got: { toolName: 'write_file', input: { path: 'notes.md', content: '# Better notes\n' } },
    });
    expect(events.filter((e) => e.type === 'tool.replayed')).toHaveLength(1);
    // Live from there, in its copy: the shared notes are the original's until the replay is applied.
    const shared = path.join(workspace('T-replay-diverge'), 'notes.md');
    expect(readFileSync(shared, 'utf8')).toBe('# Notes\n');
    expect(readFileSync(path.join(workspace('T-replay-diverge'), 'log.txt'), 'utf8')).toBe('ran\n');
    expect(again.changes).toMatchObject({ modified: ['notes.md'] });
    expect(again.replay.comparison).toMatchObject({ sameSummary: true, artifacts: { same: [], changed: ['notes.md'], missing: [] } });
    const applied = await svc.inject({ method: 'POST', url: `/tasks/${again.id}/apply` });
    expect(applied.statusCode, applied.body).toBe(200);
    expect(readFileSync(shared, 'utf8')).toBe('# Better notes\n');
  });

  it('runs every call with tools "live", in a copy', async () => {
    scriptNotes('REPLAY-LIVE', () => '# Notes\n');
    const context = { parentTaskId: 'T-replay-live', userId: 'u-r' };
    const original = await run(taskBody({ prompt: 'REPLAY-LIVE', context, options: { model: 'first-model' } }));
    const again = await replay(original.id, { tools: 'live' });
    expect(again).toMatchObject({ status: 'completed', model: 'first-model', replay: { tools: 'live', divergedAtStep: null } });
    const types = (await storedEvents(svc, again.id)).map((e) => e.type);
    expect(types).not.toContain('tool.replayed');
    // The command ran again, in the copy: the shared log still has the original's one line.
    expect(readFileSync(path.join(workspace('T-replay-live'), 'log.txt'), 'utf8')).toBe('ran\n');
    expect(again.changes.modified).toContain('log.txt');
  });

  it('keeps its place in the record across an approval pause; a call the original was refused is decided again', async () => {
    model.script('REPLAY-ASK', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo hi >> approved.txt' } }] };
      if (ctx.turn === 1) return { toolCalls: [{ name: 'bash', args: { command: 'echo no >> refused.txt' } }] };
      if (ctx.turn === 2) return { toolCalls: [{ name: 'list_files', args: {} }] };
      return { toolCalls: [{ name: 'complete', args: { summary: 'asked', paths: [] } }] };
    });
    const context = { parentTaskId: 'T-replay-ask', userId: 'u-r' };
    const answerEach = async (id: string, decisions: Array<'allow' | 'deny'>) => {
      for (const decision of decisions) {
        let task: any;
        await until(async () => {
          task = (await svc.inject({ url: `/tasks/${id}` })).json();
          return task.status === 'paused';
        });
        const res = await svc.inject({ method: 'POST', url: `/tasks/${id}/approvals/${task.pause.requestId}`, payload: { decision } });
        expect(res.statusCode, res.body).toBe(200);
      }
      return taskEnd(svc, id);
    };
    const started = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ prompt: 'REPLAY-ASK', context, options: { permissions: { bash: 'ask' } } }),
    });
    const original = await answerEach(started.json().id, ['allow', 'deny']);
    expect(original.status).toBe('completed');

    // The replay asks too (it keeps the original's options): allowed both times.
    const again = await svc.inject({ method: 'POST', url: `/tasks/${original.id}/replay`, payload: {} });
    const replay = await answerEach(again.json().id, ['allow', 'allow']);
    expect(replay).toMatchObject({ status: 'completed', replay: { divergedAtStep: null } });
    const events = await storedEvents(svc, replay.id);
    // The approved call is answered from the record after the pause; the one refused in the
    // original runs (in the copy), and the record is followed on: list_files is answered.
    expect(events.filter((e) => e.type === 'tool.replayed').map((e) => (e.data as { toolName: string }).toolName)).toEqual(['bash', 'list_files']);
    expect(events.some((e) => e.type === 'replay.diverged')).toBe(false);
    expect(readFileSync(path.join(workspace('T-replay-ask'), 'approved.txt'), 'utf8')).toBe('hi\n');
    expect(replay.changes).toMatchObject({ added: ['refused.txt'], modified: [] });
  });

  it("refuses to replay a child task alone: it ran within its parent's limits", async () => {
    model.script('REPLAY-LEAD', [
      { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'child', prompt: 'REPLAY-CHILD' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'led', paths: [] } }] },
    ]);
    model.script('REPLAY-CHILD', [{ toolCalls: [{ name: 'complete', args: { summary: 'child done', paths: [] } }] }]);
    const led = await run(taskBody({ subagent_type: 'replay-lead', prompt: 'REPLAY-LEAD', context: { parentTaskId: 'T-replay-lead', userId: 'u-r' } }));
    expect(led.status).toBe('completed');
    const children = (await svc.inject({ url: '/tasks?parentTaskId=T-replay-lead' })).json().tasks.filter((t: any) => t.depth === 1);
    expect(children).toHaveLength(1);
    const refused = await svc.inject({ method: 'POST', url: `/tasks/${children[0].id}/replay`, payload: { tools: 'live' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ code: 'not_replayable', message: expect.stringContaining('replay the task that started it') });
  });

  it('refuses to replay a task that ran candidates: one replay on one model is not what it did', async () => {
    model.script('REPLAY-CANDIDATES', [{ toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] }]);
    const options = { isolation: 'worktree', outcome: { verify: { command: 'true' } }, candidates: { n: 2, models: ['first-model', 'second-model'] } };
    const tried = await run(taskBody({ prompt: 'REPLAY-CANDIDATES', context: { parentTaskId: 'T-replay-candidates', userId: 'u-r' }, options }));
    expect(tried).toMatchObject({ status: 'completed', summary: 'tried' });
    const refused = await svc.inject({ method: 'POST', url: `/tasks/${tried.id}/replay`, payload: { model: 'second-model' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ code: 'not_replayable', message: expect.stringContaining('ran candidates') });
  });

  it('is 404 for an unknown task, 409 for one not finished or purged, 400 for a shell task or a bad body', async () => {
    const post = (id: string, payload: object = {}) => svc.inject({ method: 'POST', url: `/tasks/${id}/replay`, payload });
    expect((await post('tsk_unknown')).json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await post('tsk_unknown')).statusCode).toBe(404);

    model.script('REPLAY-SLOW', () => ({ text: 'slow', delayMs: 5_000 }));
    const slow = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ prompt: 'REPLAY-SLOW', context: { parentTaskId: 'T-replay-x', userId: 'u-r' } }),
    });
    const unfinished = await post(slow.json().id);
    expect(unfinished.statusCode).toBe(409);
    expect(unfinished.json().error.code).toBe('task_not_finished');
    await svc.inject({ method: 'POST', url: `/tasks/${slow.json().id}/cancel` });

    scriptNotes('REPLAY-PURGED', () => '# Notes\n');
    const purged = await run(taskBody({ prompt: 'REPLAY-PURGED', context: { parentTaskId: 'T-replay-x', userId: 'u-r' } }));
    expect((await svc.inject({ method: 'DELETE', url: `/tasks/${purged.id}` })).statusCode).toBeLessThan(300);
    const gone = await post(purged.id);
    expect(gone.statusCode).toBe(409);
    expect(gone.json().error.code).toBe('task_purged');

    const shell = await run(taskBody({ subagent_type: 'shell', command: 'true', context: { parentTaskId: 'T-replay-x', userId: 'u-r' } }));
    const notModel = await post(shell.id);
    expect(notModel.statusCode).toBe(400);
    expect(notModel.json().error.code).toBe('not_replayable');

    const bad = await post(purged.id, { tools: 'sometimes' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('invalid_request');
  });
});

describe('POST /replays', () => {
  it("replays 5 tasks on 2 variants: 10 rows whose costs sum to the replays' usage", async () => {
    scriptNotes('REPLAY-BATCH', () => '# Notes\n');
    const context = { parentTaskId: 'T-replay-batch', userId: 'u-r' };
    const originals: string[] = [];
    for (let i = 0; i < 5; i++) originals.push((await run(taskBody({ prompt: `REPLAY-BATCH ${i}`, context, options: { model: 'first-model' } }))).id);

    const started = await svc.inject({
      method: 'POST',
      url: '/replays',
      payload: { filter: { parentTaskId: 'T-replay-batch' }, variants: [{ model: 'first-model' }, { model: 'second-model' }] },
    });
    expect(started.statusCode, started.body).toBe(202);
    let batch: any;
    await until(async () => {
      batch = (await svc.inject({ url: `/replays/${started.json().id}` })).json();
      return batch.status === 'completed';
    });
    expect(batch.rows).toHaveLength(10);
    expect(batch.rows.map((r: any) => [r.taskId, r.variant.model])).toEqual(
      originals.flatMap((id) => [
        [id, 'first-model'],
        [id, 'second-model'],
      ]),
    );
    expect(batch.rows.every((r: any) => r.status === 'completed' && r.replay.comparison.sameSummary && r.error === null)).toBe(true);
    // Each row's cost is its replay's billed usage; together 5 × 6,000 + 5 × 12,000 µ$.
    let billed = 0;
    for (const r of batch.rows) billed += (await svc.inject({ url: `/tasks/${r.replayTaskId}` })).json().usage.costMicroUsd;
    const rowCosts = batch.rows.reduce((sum: number, r: any) => sum + r.replay.comparison.costMicroUsd.replay, 0);
    expect(rowCosts).toBe(billed);
    expect(billed).toBe(90_000);
    // The batch is listed, newest first, with its variants and its count of replays.
    const listed = (await svc.inject({ url: '/replays?limit=1' })).json();
    expect(listed.batches).toEqual([
      { id: started.json().id, createdAt: batch.createdAt, variants: [{ model: 'first-model' }, { model: 'second-model' }], replays: 10 },
    ]);
    expect((await svc.inject({ url: '/replays?limit=0' })).statusCode).toBe(400);
    // Every recorded command was answered from the record: the log has the originals' 5 lines.
    expect(readFileSync(path.join(workspace('T-replay-batch'), 'log.txt'), 'utf8')).toBe('ran\n'.repeat(5));
  });

  it('is 400 for both or neither of taskIds and filter, or more than 100 replays; 404 for an unknown task or batch', async () => {
    const post = (payload: object) => svc.inject({ method: 'POST', url: '/replays', payload });
    const variants = [{ model: 'first-model' }, { model: 'second-model' }];
    expect((await post({ variants })).statusCode).toBe(400);
    expect((await post({ variants, taskIds: ['tsk_a'], filter: {} })).statusCode).toBe(400);
    const many = await post({ variants, taskIds: Array.from({ length: 51 }, (_, i) => `tsk_${i}`) });
    expect(many.statusCode).toBe(400);
    expect(many.json().error.message).toContain('at most 100 replays');
    const unknown = await post({ variants, taskIds: ['tsk_unknown'] });
    expect(unknown.statusCode).toBe(404);
    expect((await svc.inject({ url: '/replays/rpb_unknown' })).statusCode).toBe(404);
  });
});
