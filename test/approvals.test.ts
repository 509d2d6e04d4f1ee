import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

let model: ScriptedModel;
let svc: TestService;
beforeAll(async () => {
  model = await startScriptedModel();
  svc = await startService({ model });
});
afterAll(async () => {
  await svc.close();
  await model.close();
});

const post = (url: string, payload?: object) => svc.inject({ method: 'POST', url, payload });
const task = async (id: string) => (await svc.inject({ url: `/tasks/${id}` })).json();
const paused = (id: string) => until(async () => (await task(id)).status === 'paused');
const submit = async (prompt: string, parentTaskId: string, options: object) =>
  (await post('/tasks', taskBody({ prompt, context: { parentTaskId, userId: 'u' }, options }))).json().id as string;
/** What the model read back for its call `toolCallId` (the tool result in a later request). */
const resultSeen = (key: string) =>
  model.requests
    .filter((r) => JSON.stringify(r.body.messages).includes(key))
    .flatMap((r) => r.body.messages)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('approvals', () => {
  it('pauses a call whose rule is ask without running it, then runs it once the caller allows it', async () => {
    model.script('ASK-ALLOW', [
      {
        toolCalls: [
          { name: 'bash', args: { command: 'echo ran > asked.txt' } },
          { name: 'list_files', args: {} },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: ['asked.txt'] } }] },
    ]);
    const id = await submit('ASK-ALLOW', 'T-ask', { permissions: { bash: 'ask' } });
    await paused(id);
    const waiting = await task(id);
    expect(waiting.pause).toMatchObject({ reason: 'approval', toolName: 'bash', input: { command: 'echo ran > asked.txt' } });
    expect(waiting.pause.pending).toHaveLength(1);
    const { requestId } = waiting.pause;
    const ws = path.join(svc.config.workspacesDir, 'T-ask');
    expect(existsSync(path.join(ws, 'asked.txt'))).toBe(false);
    // A budget resume is not an answer.
    expect((await post(`/tasks/${id}/resume`)).json().error.code).toBe('approval_pending');
    expect((await post(`/tasks/${id}/approvals/apr_unknown`, { decision: 'allow' })).statusCode).toBe(404);

    const allowed = await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'allow' });
    expect(allowed.statusCode).toBe(200);
    const done = await taskEnd(svc, id);
    expect(done).toMatchObject({ status: 'completed', summary: 'done' });
    expect(readFileSync(path.join(ws, 'asked.txt'), 'utf8')).toBe('ran\n');
    // The same answer again is fine; a different one is not.
    expect((await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'allow' })).statusCode).toBe(200);
    const other = await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'deny' });
    expect([other.statusCode, other.json().error.code]).toEqual([409, 'approval_answered']);

    const events = (await storedEvents(svc, id)).map((e) => e.type);
    expect(events.filter((t) => t.startsWith('approval.') || t.startsWith('task.'))).toEqual([
      'task.started',
      'approval.requested',
      'task.paused',
      'approval.answered',
      'task.resumed',
      'task.finished',
    ]);
    const answered = (await storedEvents(svc, id)).find((e) => e.type === 'approval.answered')!;
    expect(answered.data).toEqual({ requestId, decision: 'allow', by: 'caller' });
    const resumed = (await storedEvents(svc, id)).find((e) => e.type === 'task.resumed')!;
    expect(resumed.data).toMatchObject({ reason: 'approval' });
  });

  it("gives the model the caller's message as a tool error when it denies, and the task goes on", async () => {
    model.script('ASK-DENY', [
      { toolCalls: [{ name: 'bash', args: { command: 'echo no > denied.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'gave up', paths: [] } }] },
    ]);
    const id = await submit('ASK-DENY', 'T-deny', { permissions: { 'bash(echo *)': 'ask' } });
    await paused(id);
    const { requestId } = (await task(id)).pause;
    expect((await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'deny', message: 'not on a Friday' })).statusCode).toBe(200);
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'gave up' });
    expect(existsSync(path.join(svc.config.workspacesDir, 'T-deny', 'denied.txt'))).toBe(false);
    expect(resultSeen('ASK-DENY').join('\n')).toContain('not on a Friday');
  });

  it('runs an allowed call with the input the caller gave, checked against the tool', async () => {
    model.script('ASK-EDIT', [
      { toolCalls: [{ name: 'write_file', args: { path: 'a.txt', content: 'model' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'written', paths: [] } }] },
    ]);
    const id = await submit('ASK-EDIT', 'T-edit', { permissions: { write_file: 'ask' } });
    await paused(id);
    const { requestId } = (await task(id)).pause;
    const bad = await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'allow', input: { path: 'a.txt' } });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'invalid_request']);
    expect((await task(id)).status).toBe('paused');
    expect((await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'allow', input: { path: 'a.txt', content: 'caller' } })).statusCode).toBe(200);
    await taskEnd(svc, id);
    expect(readFileSync(path.join(svc.config.workspacesDir, 'T-edit', 'a.txt'), 'utf8')).toBe('caller');
  });

  it('denies what was not answered in time (by: timeout), within a second of approvalTimeoutMs', async () => {
    model.script('ASK-LATE', [
      { toolCalls: [{ name: 'bash', args: { command: 'echo late > late.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'timed out', paths: [] } }] },
    ]);
    const id = await submit('ASK-LATE', 'T-late', { permissions: { bash: 'ask' }, approvalTimeoutMs: 1000 });
    await paused(id);
    const done = await taskEnd(svc, id, { ms: 10_000 });
    expect(done).toMatchObject({ status: 'completed', summary: 'timed out' });
    expect(existsSync(path.join(svc.config.workspacesDir, 'T-late', 'late.txt'))).toBe(false);
    const answered = (await storedEvents(svc, id)).find((e) => e.type === 'approval.answered')!;
    expect(answered.data).toMatchObject({ decision: 'deny', by: 'timeout' });
    expect(resultSeen('ASK-LATE').join('\n')).toContain('approval timeout');
  });

  it('refuses a denied command with a tool error naming the rule, and does not offer a tool denied whole', async () => {
    model.script('DENY-RULE', [
      { toolCalls: [{ name: 'bash', args: { command: 'rm -rf notes' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'refused', paths: [] } }] },
    ]);
    const id = await submit('DENY-RULE', 'T-rule', { permissions: { 'bash(rm *)': 'deny', write_file: 'deny' } });
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'refused' });
    expect(resultSeen('DENY-RULE').join('\n')).toContain('denied by the permission rule "bash(rm *)"');
    const offered = model.requests.find((r) => JSON.stringify(r.body.messages).includes('DENY-RULE'))!.body.tools!.map((t) => t.function.name);
    expect(offered).toContain('bash');
    expect(offered).not.toContain('write_file');
  });

  it('asks for every asked call of a step together, and goes on only once all are answered', async () => {
    model.script('ASK-TWO', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'one.txt', content: '1' } },
          { name: 'write_file', args: { path: 'two.txt', content: '2' } },
          { name: 'list_files', args: {} },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'both answered', paths: [] } }] },
    ]);
    const id = await submit('ASK-TWO', 'T-two', { permissions: { write_file: 'ask' } });
    await paused(id);
    const { pending } = (await task(id)).pause;
    expect(pending.map((p: { input: { path: string } }) => p.input.path)).toEqual(['one.txt', 'two.txt']);
    const first = await post(`/tasks/${id}/approvals/${pending[0].requestId}`, { decision: 'allow' });
    expect(first.json()).toMatchObject({ status: 'paused', pause: { pending: [{ answer: { decision: 'allow', by: 'caller' } }, { answer: null }] } });
    expect((await post(`/tasks/${id}/approvals/${pending[1].requestId}`, { decision: 'deny' })).statusCode).toBe(200);
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'both answered' });
    const ws = path.join(svc.config.workspacesDir, 'T-two');
    expect([existsSync(path.join(ws, 'one.txt')), existsSync(path.join(ws, 'two.txt'))]).toEqual([true, false]);
  });

  it('refuses permissions that are not rules, in the contract error shape', async () => {
    const res = await post('/tasks', taskBody({ options: { permissions: { 'curl(*)': 'allow', bash: 'maybe' } } }));
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('invalid_request');
  });
});
