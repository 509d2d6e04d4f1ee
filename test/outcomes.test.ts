import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';
import { until } from './support/until';

/** Outcomes: a subagent's `complete` is checked (a verify command, a rubric grader) before the task trusts it. */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-outcomes-'));
  mkdirSync(path.join(dir, 'agents'));
  // A definition whose outcome applies to every task of it, a child's included.
  writeFileSync(
    path.join(dir, 'agents', 'checked.md'),
    '---\nname: checked\ndescription: Its work is verified\noutcome:\n  verify:\n    command: test -f checked.txt\n  maxIterations: 2\n---\nWork.\n',
  );
  writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Starts checked children\nmaxDepth: 1\n---\nDelegate.\n');
  const prices = path.join(dir, 'prices.json');
  writeFileSync(prices, JSON.stringify({ 'worker-model': { inputPerMTok: 1, outputPerMTok: 10 }, 'grader-model': { inputPerMTok: 100, outputPerMTok: 1000 } }));
  svc = await startService({ model, dir, env: { PRICES_FILE: prices, DEFAULT_MODEL: 'worker-model' } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (payload: object) => {
  const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};
const complete = (summary: string, paths: string[] = []) => ({ toolCalls: [{ name: 'complete', args: { summary, paths } }] });
const writeFile = (p: string, content: string) => ({ toolCalls: [{ name: 'write_file', args: { path: p, content } }] });
const ctxOf = (parent: string) => ({ parentTaskId: parent, userId: 'u-outcome' });
const workspaceFile = (parent: string, name: string) => readFileSync(path.join(svc.config.workspacesDir, parent, name), 'utf8');

describe('outcome: verify', () => {
  it("refuses an early complete with the command's evidence; the next iteration passes and the task completes", async () => {
    const read: string[] = [];
    model.script('VERIFY-ONCE', (ctx) => {
      if (ctx.turn === 0) return complete('done already');
      if (ctx.turn === 1) {
        read.push(ctx.toolResults[0].content);
        return writeFile('built.txt', 'ok');
      }
      return complete('built it', ['built.txt']);
    });
    const done = await run(
      taskBody({
        prompt: 'VERIFY-ONCE',
        context: ctxOf('T-verify'),
        options: { outcome: { verify: { command: 'test -f built.txt || { echo "built.txt is missing"; exit 3; }' } } },
      }),
    );
    expect(done).toMatchObject({ status: 'completed', stopReason: 'complete', summary: 'built it', steps: 3 });
    expect(done.outcome).toEqual({ status: 'satisfied', iterations: 2, criteria: [{ name: 'verify', passed: true, note: 'exit code 0' }], feedback: null });
    // The worker read the refusal as the complete tool's error, with the command's output.
    expect(read[0]).toContain('complete was refused');
    expect(read[0]).toContain('check 1 of 3');
    expect(read[0]).toContain('built.txt is missing');
    expect(workspaceFile('T-verify', 'built.txt')).toBe('ok');

    const events = await storedEvents(svc, done.id);
    const evaluated = events.filter((e) => e.type === 'outcome.evaluated').map((e) => e.data);
    expect(evaluated.map((e) => [e.iteration, e.satisfied, e.by])).toEqual([
      [1, false, 'verify'],
      [2, true, 'verify'],
    ]);
    expect(evaluated[0].criteria[0]).toMatchObject({ name: 'verify', passed: false, note: expect.stringContaining('exit code 3') });
    // Each check comes after its complete call and before the tool's result, and before the end.
    const order = events.map((e) => e.type).filter((t) => ['tool.result', 'outcome.evaluated', 'task.finished'].includes(t));
    expect(order.slice(-3)).toEqual(['outcome.evaluated', 'tool.result', 'task.finished']);
    expect(events.at(-1)!.data.outcome.status).toBe('satisfied');
  });

  it('an outcome never met ends the task after exactly maxIterations checks: completed, max_iterations_reached', async () => {
    let turns = 0;
    model.script('NEVER-MET', () => {
      turns++;
      return complete(`attempt ${turns}`);
    });
    const done = await run(
      taskBody({ prompt: 'NEVER-MET', context: ctxOf('T-never'), options: { outcome: { verify: { command: 'exit 1' }, maxIterations: 2 } } }),
    );
    expect(done).toMatchObject({ status: 'completed', stopReason: 'complete', summary: 'attempt 2', steps: 2 });
    expect(done.outcome).toMatchObject({ status: 'max_iterations_reached', iterations: 2, criteria: [{ name: 'verify', passed: false }] });
    expect(done.outcome.feedback).toContain('exit code 1');
    expect(turns).toBe(2);
    const evaluated = (await storedEvents(svc, done.id)).filter((e) => e.type === 'outcome.evaluated');
    expect(evaluated.map((e) => e.data.iteration)).toEqual([1, 2]);
  });

  it('a task that never calls complete ends with its outcome failed after 0 checks; a task without one has none', async () => {
    model.script('NO-COMPLETE', [{ text: 'I just answer.' }]);
    const done = await run(taskBody({ prompt: 'NO-COMPLETE', context: ctxOf('T-nocomplete'), options: { outcome: { verify: { command: 'true' } } } }));
    expect(done).toMatchObject({ status: 'completed', stopReason: 'text', outcome: { status: 'failed', iterations: 0, criteria: [], feedback: null } });
    const plain = await run(taskBody({ prompt: 'NO-COMPLETE plain', context: ctxOf('T-nocomplete') }));
    expect(plain.outcome).toBeNull();
  });

  it("a definition's outcome applies to its tasks, a child started by another task included", async () => {
    model.script('CHILD-CHECKED', (ctx) => (ctx.turn === 0 ? complete('too early') : ctx.turn === 1 ? writeFile('checked.txt', 'x') : complete('checked')));
    const told: string[] = [];
    model.script('LEAD-STARTS', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'task', args: { subagent_type: 'checked', description: 'checked child', prompt: 'CHILD-CHECKED' } }] }
        : (told.push(ctx.toolResults[0].content), complete('lead done')),
    );
    const lead = await run(taskBody({ subagent_type: 'lead', prompt: 'LEAD-STARTS', context: ctxOf('T-nested') }));
    expect(lead).toMatchObject({ status: 'completed', outcome: null });
    const children = (await svc.inject({ url: '/tasks?parentTaskId=T-nested' })).json().tasks.filter((t: any) => t.parentTask === lead.id);
    expect(children).toHaveLength(1);
    expect(children[0]).toMatchObject({ subagent_type: 'checked', status: 'completed', summary: 'checked', outcome: { status: 'satisfied', iterations: 2 } });
    // The parent model reads whether its child's outcome was met.
    expect(JSON.parse(told[0])).toMatchObject({ status: 'completed', summary: 'checked', outcome: { status: 'satisfied', iterations: 2 } });
  });
});

describe('outcome: rubric', () => {
  it("grades in a fresh context that sees the rubric and the delivered work, never the worker's prompt; its feedback reaches the worker; its calls are billed under its model", async () => {
    const fed: string[] = [];
    model.script('WORKER-SECRET-PROMPT', (ctx) => {
      if (ctx.turn === 0) return { ...writeFile('report.md', 'The capital of France is Berlin.'), usage: { input: 1000, output: 100 } };
      if (ctx.turn === 1) return { ...complete('report written', ['report.md']), usage: { input: 1000, output: 100 } };
      if (ctx.turn === 2) {
        fed.push(ctx.toolResults[0].content);
        return { ...writeFile('report.md', 'The capital of France is Paris.'), usage: { input: 1000, output: 100 } };
      }
      return { ...complete('report fixed', ['report.md']), usage: { input: 1000, output: 100 } };
    });
    model.script('RUBRIC-CAPITAL', (ctx) => {
      const seen = JSON.stringify(ctx.messages);
      const passed = seen.includes('Paris');
      const verdict = {
        satisfied: passed,
        criteria: [{ name: 'capital', passed, note: passed ? 'names Paris' : 'names Berlin' }],
        feedback: passed ? '' : 'FIX-IT: the capital of France is Paris',
      };
      return { text: JSON.stringify(verdict), usage: { input: 2000, output: 50 } };
    });
    const rubric = 'RUBRIC-CAPITAL: report.md names the capital of France correctly.';
    const done = await run(
      taskBody({ prompt: 'WORKER-SECRET-PROMPT', context: ctxOf('T-rubric'), options: { outcome: { rubric, graderModel: 'grader-model' } } }),
    );
    expect(done).toMatchObject({ status: 'completed', summary: 'report fixed', model: 'worker-model' });
    expect(done.outcome).toEqual({ status: 'satisfied', iterations: 2, criteria: [{ name: 'capital', passed: true, note: 'names Paris' }], feedback: null });
    expect(fed[0]).toContain('FIX-IT: the capital of France is Paris');

    const graded = model.requests.filter((r) => r.body.model === 'grader-model');
    expect(graded).toHaveLength(2);
    for (const r of graded) {
      const seen = JSON.stringify(r.body.messages);
      expect(seen).toContain('RUBRIC-CAPITAL');
      expect(seen).toContain('report written'.slice(0, 6));
      expect(seen).not.toContain('WORKER-SECRET-PROMPT');
      // A fresh context: its own system prompt and one user message, no tool, no worker transcript.
      expect(r.body.messages.filter((m) => m.role === 'user')).toHaveLength(1);
      expect(r.body.messages.some((m) => m.role === 'assistant' || m.role === 'tool')).toBe(false);
      expect(r.body.tools ?? []).toEqual([]);
    }
    expect(JSON.stringify(graded[0].body.messages)).toContain('report written');
    expect(JSON.stringify(graded[0].body.messages)).toContain('The capital of France is Berlin.');
    expect(JSON.stringify(graded[1].body.messages)).toContain('report fixed');

    // Worker: 4 calls of 1000 in / 100 out at $1/$10 per MTok = 4 × 2,000 µ$; grader: 2 of 2000 / 50 at $100/$1000 = 2 × 250,000 µ$.
    expect(done.usage).toMatchObject({ inputTokens: 8000, outputTokens: 500, costMicroUsd: 508_000 });
    // Each call is stored once, under the model that answered it, at that model's price.
    const calls = await svc.db.sql.all<{ model: string; input: number; cost: number }>(
      'SELECT model, input_tokens AS input, cost_micro_usd AS cost FROM usage_reports WHERE task_id = ? ORDER BY n',
      [done.id],
    );
    expect(calls.map((c) => [c.model, Number(c.input), Number(c.cost)])).toEqual([
      ['worker-model', 1000, 2_000],
      ['worker-model', 1000, 2_000],
      ['grader-model', 2000, 250_000],
      ['worker-model', 1000, 2_000],
      ['worker-model', 1000, 2_000],
      ['grader-model', 2000, 250_000],
    ]);
    const evaluated = (await storedEvents(svc, done.id)).filter((e) => e.type === 'outcome.evaluated').map((e) => e.data);
    expect(evaluated.map((e) => [e.satisfied, e.by])).toEqual([
      [false, 'grader'],
      [true, 'grader'],
    ]);
  });

  it("the grader's cost counts against the task's budget: the next model call pauses once it is spent", async () => {
    model.script('BUDGET-WORKER', () => ({ ...complete('first try'), usage: { input: 1000, output: 100 } }));
    model.script('RUBRIC-PRICEY', () => ({
      text: JSON.stringify({ satisfied: false, criteria: [{ name: 'x', passed: false, note: 'no' }], feedback: 'again' }),
      usage: { input: 2000, output: 50 },
    }));
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({
        prompt: 'BUDGET-WORKER',
        context: ctxOf('T-budget'),
        options: { budget: { maxCostUsd: 0.1 }, outcome: { rubric: 'RUBRIC-PRICEY', graderModel: 'grader-model' } },
      }),
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json().id;
    let task: any;
    await until(async () => {
      task = (await svc.inject({ url: `/tasks/${id}` })).json();
      return task.status !== 'queued' && task.status !== 'running';
    }, 30_000);
    // 2,000 µ$ for the worker's call, 250,000 µ$ for the grader's: past 100,000 µ$ before the second worker call.
    expect(task).toMatchObject({ status: 'paused', pause: { reason: 'budget', budget: 'task', measure: 'costMicroUsd', limit: 100_000, spent: 252_000 } });
    expect(task.outcome).toMatchObject({ status: 'failed', iterations: 1 });
    expect((await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` })).statusCode).toBe(202);
  });

  it("a purge removes the outcome's text from the database: rubric, criteria and feedback; its status and checks stay", async () => {
    model.script('PURGE-OUTCOME', (ctx) => (ctx.turn % 2 === 0 ? writeFile('a.md', `draft ${ctx.turn}`) : complete(`draft written ${ctx.turn}`, ['a.md'])));
    model.script('RUBRIC-PURGE-SECRET', () => ({
      text: JSON.stringify({
        satisfied: false,
        criteria: [{ name: 'CRITERION-SECRET', passed: false, note: 'NOTE-SECRET' }],
        feedback: 'FEEDBACK-SECRET',
      }),
    }));
    const done = await run(
      taskBody({
        prompt: 'PURGE-OUTCOME',
        context: ctxOf('T-purge-outcome'),
        options: { outcome: { rubric: 'RUBRIC-PURGE-SECRET: every claim is sourced.', graderModel: 'grader-model', maxIterations: 1 } },
      }),
    );
    expect(done.outcome).toMatchObject({ status: 'max_iterations_reached', iterations: 1, feedback: 'FEEDBACK-SECRET' });
    const purged = await svc.inject({ method: 'DELETE', url: `/tasks/${done.id}` });
    expect(purged.statusCode, purged.body).toBe(200);
    expect(purged.json()).toMatchObject({
      purged: true,
      outcome: { status: 'max_iterations_reached', iterations: 1, criteria: [{ name: '(purged)', passed: false, note: '(purged)' }], feedback: '(purged)' },
    });
    // Nothing of the outcome's text is left in any row of the task.
    const rows = JSON.stringify([
      await svc.db.sql.all('SELECT * FROM tasks WHERE id = ?', [done.id]),
      await svc.db.sql.all('SELECT * FROM task_events WHERE task_id = ?', [done.id]),
      await svc.db.sql.all('SELECT * FROM subagent_records WHERE task_id = ?', [done.id]),
    ]);
    for (const secret of ['RUBRIC-PURGE-SECRET', 'CRITERION-SECRET', 'NOTE-SECRET', 'FEEDBACK-SECRET']) expect(rows).not.toContain(secret);
    // How it was checked stays, as the other options do.
    expect(rows).toContain('grader-model');
  });

  it('with verify and a rubric, a failing command is the verdict and the grader is not asked', async () => {
    model.script('BOTH-CHECKS', () => complete('nothing built'));
    model.script('RUBRIC-UNASKED', () => ({ text: JSON.stringify({ satisfied: true, criteria: [], feedback: '' }) }));
    const before = model.requests.length;
    const done = await run(
      taskBody({
        prompt: 'BOTH-CHECKS',
        context: ctxOf('T-both'),
        options: { outcome: { verify: { command: 'exit 2' }, rubric: 'RUBRIC-UNASKED', maxIterations: 1 } },
      }),
    );
    expect(done.outcome).toMatchObject({ status: 'max_iterations_reached', iterations: 1, criteria: [{ name: 'verify', passed: false }] });
    expect(model.requests.slice(before).filter((r) => JSON.stringify(r.body.messages).includes('RUBRIC-UNASKED'))).toHaveLength(0);
  });
});

describe('outcome: invalid combinations', () => {
  const post = (over: Record<string, unknown>) => svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ context: ctxOf('T-invalid'), ...over }) });
  it.each([
    ['neither rubric nor verify', { options: { outcome: { maxIterations: 2 } } }, 'body.options.outcome.rubric', 'rubric, a verify command, or both'],
    ['maxIterations over 10', { options: { outcome: { verify: { command: 'true' }, maxIterations: 11 } } }, 'body.options.outcome.maxIterations', ''],
    ['maxIterations 0', { options: { outcome: { verify: { command: 'true' }, maxIterations: 0 } } }, 'body.options.outcome.maxIterations', ''],
    ['a rubric over 64 KiB', { options: { outcome: { rubric: 'x'.repeat(64 * 1024 + 1) } } }, 'body.options.outcome.rubric', '65536 bytes'],
    [
      'a grader model without a rubric',
      { options: { outcome: { verify: { command: 'true' }, graderModel: 'grader-model' } } },
      'body.options.outcome.graderModel',
      'give outcome.rubric too',
    ],
    [
      'a shell task',
      { subagent_type: 'shell', prompt: undefined, command: 'true', options: { outcome: { verify: { command: 'true' } } } },
      'body.options.outcome',
      'calls no complete',
    ],
  ])('%s → 400', async (_name, over, field, says) => {
    const res = await post(over);
    expect(res.statusCode, res.body).toBe(400);
    const error = res.json().error;
    expect(error.code).toBe('invalid_request');
    const detail = error.details.find((d: { field: string }) => d.field === field);
    expect(detail, JSON.stringify(error.details)).toBeDefined();
    expect(detail.message).toContain(says);
  });
});
