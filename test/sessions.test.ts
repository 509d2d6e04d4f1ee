import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnContext } from '../scripted-model/server';
import { startService, storedEvents, taskBody, taskEnd, wsUrl, type TestService } from './support/harness';
import { openStream } from './support/ws-client';
import { until } from './support/until';

const A = { authorization: 'Bearer key-a' };
const B = { authorization: 'Bearer key-b' };
let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: 'key-a:tenant-a,key-b:tenant-b' } });
});
afterAll(() => svc.close());

const post = (body: unknown, headers = A) => svc.inject({ method: 'POST', url: '/tasks', headers, payload: body as object });
const get = (url: string, headers = A) => svc.inject({ url, headers });
const lastUserText = (ctx: TurnContext) => {
  const users = ctx.messages.filter((m) => m.role === 'user');
  const c = users[users.length - 1]?.content;
  return typeof c === 'string' ? c : JSON.stringify(c);
};
const complete = (summary: string) => ({ toolCalls: [{ name: 'complete', args: { summary, paths: [] } }], usage: { input: 20, output: 2 } });
const end = (id: string) => taskEnd(svc, id, { key: 'key-a' });
const roles = (messages: Array<{ role: string }>) => messages.map((m) => m.role);

describe('the transcript: GET /tasks/:id/messages', () => {
  it("holds the conversation as the model saw it, after each step, for the task's tenant only", async () => {
    svc.model.script('TRANSCRIPT', [{ toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 10, output: 1 } }, complete('listed')]);
    const id = (await post(taskBody({ prompt: 'TRANSCRIPT' }))).json().id;
    expect((await end(id)).status).toBe('completed');
    const { messages } = (await get(`/tasks/${id}/messages`)).json();
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(messages[0]).toEqual({ role: 'user', content: 'TRANSCRIPT' });
    expect(messages[1].content).toEqual([expect.objectContaining({ type: 'tool-call', toolName: 'list_files' })]);
    expect(messages[4].content).toEqual([expect.objectContaining({ type: 'tool-result', toolName: 'complete' })]);
    // What the model was sent for its second step is what is stored before it.
    const second = svc.model.requests.filter((r) => JSON.stringify(r.body.messages).includes('TRANSCRIPT'))[1];
    expect(roles(second.body.messages)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect((await get(`/tasks/${id}/messages`, B)).statusCode).toBe(404);
  });
});

describe('follow-up: POST /tasks with task_id', () => {
  it('continues the conversation in a new task of the same session, with its own record', async () => {
    svc.model.script('SESSION-1', (ctx) => (lastUserText(ctx).includes('FOLLOW-UP') ? complete('second answer') : complete('first answer')));
    const first = await end((await post(taskBody({ prompt: 'SESSION-1', context: { parentTaskId: 'T-s', userId: 'u' } }))).json().id);
    expect(first).toMatchObject({ status: 'completed', summary: 'first answer', sessionId: first.id, previousTaskId: null });

    const res = await post(taskBody({ task_id: first.id, prompt: 'FOLLOW-UP: and now the tests', context: { parentTaskId: 'T-s', userId: 'u' } }));
    expect(res.statusCode).toBe(202);
    const second = await end(res.json().id);
    expect(second).toMatchObject({ status: 'completed', summary: 'second answer', sessionId: first.id, previousTaskId: first.id });
    expect(second.id).not.toBe(first.id);
    // The model got the whole earlier conversation, then the new prompt.
    const sent = svc.model.requests.filter((r) => JSON.stringify(r.body.messages).includes('FOLLOW-UP')).at(-1)!;
    expect(roles(sent.body.messages)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(roles((await get(`/tasks/${second.id}/messages`)).json().messages)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'tool']);

    const chain = (await get(`/tasks?sessionId=${first.id}`)).json().tasks.map((t: { id: string }) => t.id);
    expect(chain).toEqual([second.id, first.id]);
    const records = (await get('/usage/records?parentTaskId=T-s')).json().records;
    expect(records.map((r: { taskId: string }) => r.taskId).sort()).toEqual([first.id, second.id].sort());
  });

  it("the model reads back its artifacts by relative path only, never a path of the service's host", async () => {
    svc.model.script('REL-PATHS', (ctx) =>
      lastUserText(ctx).includes('AGAIN')
        ? complete('again')
        : ctx.turn === 0
          ? { toolCalls: [{ name: 'write_file', args: { path: 'notes/a.md', content: 'a' } }] }
          : { toolCalls: [{ name: 'complete', args: { summary: 'wrote it', paths: ['notes/a.md', 'nope.md', '/etc/passwd'] } }] },
    );
    const first = await end((await post(taskBody({ prompt: 'REL-PATHS', context: { parentTaskId: 'T-rel', userId: 'u' } }))).json().id);
    expect(first.artifacts).toEqual([expect.objectContaining({ relativePath: 'notes/a.md', path: expect.stringContaining('T-rel/notes/a.md') })]);
    await end((await post(taskBody({ task_id: first.id, prompt: 'AGAIN', context: { parentTaskId: 'T-rel', userId: 'u' } }))).json().id);
    const sent = svc.model.requests.filter((r) => JSON.stringify(r.body.messages).includes('AGAIN')).at(-1)!;
    const completed = sent.body.messages.filter((m) => m.role === 'tool').at(-1)!;
    expect(JSON.stringify(completed.content)).toContain('\\"relativePath\\":\\"notes/a.md\\"');
    expect(JSON.stringify(sent.body.messages)).not.toContain(svc.config.workspacesDir);
  });

  it("answers session_mismatch, task_not_finished and 404 (another tenant's task too)", async () => {
    svc.model.script('SESSION-ERR', [complete('done')]);
    const done = await end((await post(taskBody({ prompt: 'SESSION-ERR', context: { parentTaskId: 'T-e', userId: 'u' } }))).json().id);
    const type = await post(taskBody({ task_id: done.id, subagent_type: 'explore', context: { parentTaskId: 'T-e', userId: 'u' } }));
    expect(type.statusCode).toBe(400);
    expect(type.json().error.code).toBe('session_mismatch');
    const parent = await post(taskBody({ task_id: done.id, context: { parentTaskId: 'T-other', userId: 'u' } }));
    expect(parent.json().error).toMatchObject({ code: 'session_mismatch', details: [{ field: 'body.context.parentTaskId' }] });
    expect((await post(taskBody({ task_id: done.id, context: { parentTaskId: 'T-e', userId: 'u' } }), B)).statusCode).toBe(404);
    expect((await post(taskBody({ task_id: 'tsk_00000000000000000000000000' }))).json().error.code).toBe('not_found');

    svc.model.script('SESSION-SLOW', [{ delayMs: 1500, ...complete('slow') }]);
    const slow = (await post(taskBody({ prompt: 'SESSION-SLOW', context: { parentTaskId: 'T-e', userId: 'u' } }))).json().id;
    const early = await post(taskBody({ task_id: slow, context: { parentTaskId: 'T-e', userId: 'u' } }));
    expect(early.statusCode).toBe(409);
    expect(early.json().error.code).toBe('task_not_finished');
    await end(slow);
  });
});

describe('steering: POST /tasks/:id/messages', () => {
  it('gives the message to the model before its next step, with message.received, and 409 once finished', async () => {
    svc.model.script('STEER', (ctx) => {
      if (ctx.turn === 0) return { delayMs: 500, toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 10, output: 1 } };
      return complete(lastUserText(ctx).includes('focus on the tests') ? 'steered' : 'not steered');
    });
    const { id, streamUrl } = (await post(taskBody({ prompt: 'STEER' }))).json();
    const stream = await openStream(wsUrl(svc, `${streamUrl}?access_token=key-a`));
    await stream.waitFor((m) => m.type === 'step.started');
    const steer = await svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, headers: A, payload: { prompt: 'focus on the tests' } });
    expect(steer.statusCode).toBe(202);
    expect(steer.json()).toEqual({ accepted: true });
    await stream.closed;
    expect((await get(`/tasks/${id}`)).json()).toMatchObject({ status: 'completed', summary: 'steered' });
    const types = stream.messages.filter((m) => m.type !== 'heartbeat' && m.type !== 'text.delta').map((m) => m.type);
    expect(types).toEqual([
      'task.started',
      'step.started',
      'tool.call',
      'tool.result',
      'step.finished',
      'message.received',
      'step.started',
      'tool.call',
      'tool.result',
      'step.finished',
      'task.finished',
    ]);
    expect(stream.messages.find((m) => m.type === 'message.received')!.data).toEqual({ text: 'focus on the tests' });
    const { messages } = (await get(`/tasks/${id}/messages`)).json();
    expect(roles(messages)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'tool']);
    expect(messages[3]).toEqual({ role: 'user', content: 'focus on the tests' });

    const late = await svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, headers: A, payload: { prompt: 'too late' } });
    expect(late.statusCode).toBe(409);
    expect(late.json().error.code).toBe('task_finished');
    expect((await svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, headers: B, payload: { prompt: 'x' } })).statusCode).toBe(404);
    expect((await svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, headers: A, payload: { prompt: '' } })).statusCode).toBe(400);
  });
});

describe('steering bounds', () => {
  it("refuses what would make a task's waiting messages larger than 64 Ki characters", async () => {
    svc.model.script('STEER-BOUND', [{ delayMs: 800, ...complete('done') }]);
    const { id } = (await post(taskBody({ prompt: 'STEER-BOUND' }))).json();
    // In its first model call: the messages sent now wait for its second step.
    await until(async () => svc.model.requests.some((r) => JSON.stringify(r.body).includes('STEER-BOUND')));
    const send = (prompt: string) => svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, headers: A, payload: { prompt } });
    expect((await send('x'.repeat(40_000))).statusCode).toBe(202);
    const over = await send('y'.repeat(40_000));
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('inbox_full');
    expect((await send('z'.repeat(70_000))).statusCode).toBe(400);
    await end(id);
  });
});

describe('compaction', () => {
  it("replaces older turns with a summary once a step's input reaches compactAtTokens, and bills it", async () => {
    // A definition that compacts early, with its own compaction model.
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-compact-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(
      path.join(dir, 'agents', 'compacting.md'),
      '---\nname: compacting\ndescription: compacts early\ncompactAtTokens: 1000\ncompactionModel: compactor\n---\nWork.\n',
    );
    const restarted = await startService({ env: { API_KEYS: 'key-a:tenant-a' }, model: svc.model, dir });
    try {
      svc.model.script('COMPACT-ME', (ctx) => {
        if (ctx.model === 'compactor') return { text: 'SUMMARY: read a, b and c.', usage: { input: 300, output: 30 } };
        if (JSON.stringify(ctx.messages).includes('SUMMARY:')) return complete('compacted and done');
        return { toolCalls: [{ name: 'read_file', args: { path: `COMPACT-ME-${ctx.turn}.txt` } }], usage: { input: 1200, output: 5 } };
      });
      const id = (
        await restarted.inject({ method: 'POST', url: '/tasks', headers: A, payload: taskBody({ subagent_type: 'compacting', prompt: 'COMPACT-ME' }) })
      ).json().id;
      const out = await taskEnd(restarted, id, { key: 'key-a' });
      expect(out).toMatchObject({ status: 'completed', summary: 'compacted and done' });
      // Three steps of 1200 input tokens; then two steps are kept and the first is summarised, once
      // there is a step older than the last two (before step 4); the final step sees the summary.
      const compactions = 1;
      expect(out).toMatchObject({ steps: 4, usage: { compactions, inputTokens: 3 * 1200 + 300 + 20, outputTokens: 3 * 5 + 30 + 2 } });
      const record = (await restarted.inject({ url: '/usage/records', headers: A })).json().records.find((r: { taskId: string }) => r.taskId === id);
      expect(record).toMatchObject({ steps: 4, inputTokens: 3 * 1200 + 300 + 20 });

      const events = await storedEvents(restarted, id, { key: 'key-a' });
      const compacted = events.filter((e) => e.type === 'context.compacted');
      expect(compacted).toHaveLength(compactions);
      expect(compacted[0].data).toMatchObject({ beforeTokens: 1200, model: 'compactor', afterTokens: expect.any(Number) });
      // It sits between step 3's end and step 4's start.
      const at = events.indexOf(compacted[0]);
      expect([events[at - 1].type, events[at + 1].type]).toEqual(['step.finished', 'step.started']);
      expect(events[at + 1].data.step).toBe(4);
      const { messages } = (await restarted.inject({ url: `/tasks/${id}/messages`, headers: A })).json();
      // The kickoff prompt stays first, the summary follows, each tool call keeps its result.
      expect(messages[0]).toEqual({ role: 'user', content: 'COMPACT-ME' });
      expect(messages[1].content).toContain('SUMMARY: read a, b and c.');
      for (let i = 0; i < messages.length; i++) if (messages[i].role === 'tool') expect(messages[i - 1].role).toBe('assistant');
      // Kickoff, summary (of step 1), steps 2 and 3 kept whole, then step 4: an answer and its result each.
      expect(roles(messages)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool']);
      expect(JSON.stringify(messages)).not.toContain('COMPACT-ME-0.txt');
      expect(JSON.stringify(messages)).toContain('COMPACT-ME-1.txt');
      const compactionCall = svc.model.requests.find((r) => r.body.model === 'compactor')!;
      expect(JSON.stringify(compactionCall.body.messages)).toContain('COMPACT-ME-0.txt');
    } finally {
      await restarted.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
