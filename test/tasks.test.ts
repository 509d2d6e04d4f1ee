import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, TEST_API_KEY, type TestService } from './support/harness';
import { until } from './support/until';

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(() => svc.close());

const post = (body: unknown, query = '', headers: Record<string, string> = {}) =>
  svc.inject({ method: 'POST', url: `/tasks${query}`, payload: body as object, headers });

describe('a subagent task end to end', () => {
  it('writes a file, runs a command, completes, and bills every step exactly', async () => {
    svc.model.script('REPORT-RUN', [
      {
        text: 'I will write the report.',
        toolCalls: [{ name: 'write_file', args: { path: 'out/report.md', content: '# Errors\n\n3 errors found\n' } }],
        usage: { input: 120, output: 30, cached: 20 },
      },
      {
        toolCalls: [{ name: 'bash', args: { command: 'wc -l out/report.md && echo "$OPENAI_API_KEY|$HOME"' } }],
        usage: { input: 180, output: 15, reasoning: 5 },
      },
      {
        toolCalls: [{ name: 'complete', args: { summary: 'Report written to out/report.md', paths: ['out/report.md', 'missing.md', '../etc/passwd'] } }],
        usage: { input: 260, output: 25, cached: 100 },
      },
    ]);
    const res = await post(
      taskBody({
        prompt: 'REPORT-RUN summarise the logs',
        context: { parentTaskId: 'T-run', userId: 'u-42', toolCallId: 'call_abc', timezone: 'Europe/Berlin' },
      }),
      '?wait=true',
    );
    expect(res.statusCode).toBe(200);
    const out = res.json();
    expect(out).toMatchObject({
      status: 'completed',
      subagent_type: 'general',
      description: 'Test task',
      model: 'gpt-4.1-mini',
      context: { parentTaskId: 'T-run', userId: 'u-42', toolCallId: 'call_abc', timezone: 'Europe/Berlin' },
      summary: 'Report written to out/report.md',
      steps: 3,
      stopReason: 'complete',
      output: null,
      error: null,
      usage: { inputTokens: 560, outputTokens: 70, totalTokens: 630, cachedInputTokens: 120, reasoningTokens: 5 },
    });
    expect(out.id).toMatch(/^tsk_[0-9A-Z]{26}$/);
    const ws = path.join(svc.config.workspacesDir, 'T-run');
    expect(out.artifacts).toEqual([
      {
        path: path.join(ws, 'out/report.md'),
        relativePath: 'out/report.md',
        size: 25,
        fsType: 'file',
        modifiedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        url: '/workspaces/T-run/files/out/report.md',
      },
    ]);
    expect(out.skipped).toEqual([
      { path: 'missing.md', relativePath: 'missing.md', reason: 'not_found' },
      { path: '../etc/passwd', relativePath: null, reason: 'outside_workspace' },
    ]);
    expect(readFileSync(path.join(ws, 'out/report.md'), 'utf8')).toBe('# Errors\n\n3 errors found\n');
    for (const t of ['startedAt', 'completedAt', 'createdAt']) expect(Date.parse(out[t])).not.toBeNaN();

    // What the model saw: the bash result ran in the workspace with no provider key in its environment.
    const bashResult = svc.model.requests.filter((r) => JSON.stringify(r.body).includes('REPORT-RUN')).at(-1)!;
    const toolMsg = bashResult.body.messages.filter((m) => m.role === 'tool').at(-1)!;
    expect(JSON.stringify(toolMsg.content)).toContain('3 out/report.md');
    expect(JSON.stringify(toolMsg.content)).toContain(`|${ws}`);
    expect(JSON.stringify(svc.model.requests.map((r) => r.body.messages))).not.toContain(TEST_API_KEY);
    // The provider got the key, the prompt as the only user message, and the system prompt.
    expect(bashResult.authorization).toBe(`Bearer ${TEST_API_KEY}`);
    const first = svc.model.requests.find((r) => JSON.stringify(r.body).includes('REPORT-RUN'))!;
    expect(first.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    // No path of the service's host in what the service tells the model (its own `pwd` aside).
    expect(String(first.body.messages[0].content)).toContain('workspace: the current folder of your commands');
    expect(String(first.body.messages[0].content)).not.toContain(svc.config.workspacesDir);
    expect(String(first.body.messages[0].content)).toContain('Europe/Berlin');
    expect(first.body.tools!.map((t) => t.function.name).sort()).toEqual([
      'bash',
      'complete',
      'edit_file',
      'glob',
      'grep',
      'list_files',
      'read_file',
      'write_file',
    ]);

    // Exactly one usage record with the same sums.
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-run' })).json().records;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      taskId: out.id,
      subagent_type: 'general',
      parentTaskId: 'T-run',
      userId: 'u-42',
      toolCallId: 'call_abc',
      description: 'Test task',
      model: 'gpt-4.1-mini',
      steps: 3,
      inputTokens: 560,
      outputTokens: 70,
      totalTokens: 630,
      cachedInputTokens: 120,
      reasoningTokens: 5,
      status: 'completed',
    });
    expect(records[0].durationMs).toBeGreaterThanOrEqual(0);
  });

  it('answers 202 with the stream URL, then the task can be polled to its end', async () => {
    svc.model.script('ASYNC-RUN', [{ delayMs: 100, toolCalls: [{ name: 'complete', args: { summary: 'async done', paths: [] } }] }]);
    const res = await post(taskBody({ prompt: 'ASYNC-RUN' }));
    expect(res.statusCode).toBe(202);
    const accepted = res.json();
    expect(accepted).toEqual({
      id: expect.stringMatching(/^tsk_/),
      status: expect.stringMatching(/^(queued|running)$/),
      streamUrl: `/tasks/${accepted.id}/stream`,
    });
    expect(res.headers.location).toBe(`/tasks/${accepted.id}`);
    let task = (await svc.inject({ url: `/tasks/${accepted.id}` })).json();
    expect(['queued', 'running']).toContain(task.status);
    await taskEnd(svc, accepted.id);
    task = (await svc.inject({ url: `/tasks/${accepted.id}` })).json();
    expect(task).toMatchObject({ status: 'completed', summary: 'async done', steps: 1, stopReason: 'complete' });
  });

  it('falls back to the final text when the subagent never calls complete', async () => {
    svc.model.script('TEXT-ONLY', [{ toolCalls: [{ name: 'list_files', args: {} }] }, { text: 'The workspace is empty; nothing to report.' }]);
    const out = (await post(taskBody({ prompt: 'TEXT-ONLY', context: { parentTaskId: 'T-text', userId: 'u-1' } }), '?wait=true')).json();
    expect(out).toMatchObject({
      status: 'completed',
      summary: 'The workspace is empty; nothing to report.',
      stopReason: 'text',
      steps: 2,
      artifacts: [],
      skipped: [],
    });
  });

  it('stops at the step limit, which options.maxSteps may lower', async () => {
    svc.model.script('LOOPER', () => ({ toolCalls: [{ name: 'list_files', args: {} }] }));
    const out = (await post(taskBody({ prompt: 'LOOPER', options: { maxSteps: 3 } }), '?wait=true')).json();
    expect(out).toMatchObject({ status: 'completed', stopReason: 'max_steps', steps: 3, summary: null });
    expect(out.usage.inputTokens).toBe(300);
  });

  it('uses the small model for explore and gives it only read-only tools', async () => {
    svc.model.script('EXPLORE-RUN', [
      { toolCalls: [{ name: 'write_file', args: { path: 'x.txt', content: 'no' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'looked around', paths: [] } }] },
    ]);
    const out = (
      await post(taskBody({ subagent_type: 'explore', prompt: 'EXPLORE-RUN', context: { parentTaskId: 'T-explore', userId: 'u-1' } }), '?wait=true')
    ).json();
    expect(out).toMatchObject({ status: 'completed', stopReason: 'complete', model: 'gpt-4.1-mini' });
    const req = svc.model.requests.find((r) => JSON.stringify(r.body).includes('EXPLORE-RUN'))!;
    expect(req.body.tools!.map((t) => t.function.name).sort()).toEqual(['complete', 'glob', 'grep', 'list_files', 'read_file']);
    expect(existsSync(path.join(svc.config.workspacesDir, 'T-explore', 'x.txt'))).toBe(false);
  });

  it('honours options.model', async () => {
    svc.model.script('MODEL-OVERRIDE', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const out = (await post(taskBody({ prompt: 'MODEL-OVERRIDE', options: { model: 'my-local-model' } }), '?wait=true')).json();
    expect(out.model).toBe('my-local-model');
    expect(svc.model.requests.find((r) => JSON.stringify(r.body).includes('MODEL-OVERRIDE'))!.body.model).toBe('my-local-model');
  });

  it('turns a provider failure into status error / provider_error without leaking the key, and still records it', async () => {
    svc.model.script('PROVIDER-DOWN', [{ status: 500, errorMessage: 'upstream exploded' }]);
    const out = (await post(taskBody({ prompt: 'PROVIDER-DOWN', context: { parentTaskId: 'T-down', userId: 'u-1' } }), '?wait=true')).json();
    expect(out.status).toBe('error');
    expect(out.error.code).toBe('provider_error');
    expect(out.error.message).toContain('upstream exploded');
    expect(JSON.stringify(out)).not.toContain(TEST_API_KEY);
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-down' })).json().records;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: 'error', steps: 0, totalTokens: 0 });
  });

  it('feeds a failing tool back to the model as an error it can read', async () => {
    let seen = '';
    svc.model.script('TOOL-ERROR', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'edit_file', args: { path: 'nothing.md', oldString: 'a', newString: 'b' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'gave up', paths: [] } }] };
    });
    const out = (await post(taskBody({ prompt: 'TOOL-ERROR' }), '?wait=true')).json();
    expect(out.status).toBe('completed');
    expect(seen).toContain('does not exist');
  });

  it('cancels a running task: aborted / cancelled, and the finished steps stay billed', async () => {
    svc.model.script('SLOW-CANCEL', [
      { toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 50, output: 5 } },
      { delayMs: 30_000, text: 'never' },
    ]);
    const { id } = (await post(taskBody({ prompt: 'SLOW-CANCEL', context: { parentTaskId: 'T-cancel', userId: 'u-1' } }))).json();
    await until(async () => (await svc.inject({ url: `/tasks/${id}` })).json().steps === 1);
    const cancel = await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    expect(cancel.statusCode).toBe(202);
    expect((await taskEnd(svc, id)).status).toBe('aborted');
    const out = (await svc.inject({ url: `/tasks/${id}` })).json();
    expect(out).toMatchObject({ status: 'aborted', error: { code: 'cancelled' }, steps: 1, usage: { inputTokens: 50, outputTokens: 5 } });
    const again = await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    expect(again.statusCode).toBe(202);
    expect(again.json().status).toBe('aborted');
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-cancel' })).json().records;
    expect(records).toMatchObject([{ status: 'aborted', steps: 1, inputTokens: 50, outputTokens: 5 }]);
  });

  it('times a task out with options.timeoutMs: aborted / timeout', async () => {
    svc.model.script('SLOW-TIMEOUT', [{ delayMs: 30_000, text: 'never' }]);
    const out = (await post(taskBody({ prompt: 'SLOW-TIMEOUT', options: { timeoutMs: 300 } }), '?wait=true')).json();
    expect(out).toMatchObject({ status: 'aborted', error: { code: 'timeout' } });
  });
});

describe('GET /tasks', () => {
  it('lists newest first with filters and cursor pagination', async () => {
    svc.model.script('LIST-ME', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const out = (
        await post(taskBody({ prompt: `LIST-ME ${i}`, context: { parentTaskId: 'T-list', userId: i % 2 ? 'u-odd' : 'u-even' } }), '?wait=true')
      ).json();
      ids.push(out.id);
    }
    const page1 = (await svc.inject({ url: '/tasks?parentTaskId=T-list&limit=2' })).json();
    expect(page1.tasks.map((t: { id: string }) => t.id)).toEqual([ids[4], ids[3]]);
    expect(page1.nextCursor).toBe(ids[3]);
    const page2 = (await svc.inject({ url: `/tasks?parentTaskId=T-list&limit=2&cursor=${page1.nextCursor}` })).json();
    expect(page2.tasks.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
    const page3 = (await svc.inject({ url: `/tasks?parentTaskId=T-list&limit=2&cursor=${page2.nextCursor}` })).json();
    expect(page3).toEqual({ tasks: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
    const odd = (await svc.inject({ url: '/tasks?parentTaskId=T-list&userId=u-odd' })).json();
    expect(odd.tasks.map((t: { id: string }) => t.id)).toEqual([ids[3], ids[1]]);
    const completed = (await svc.inject({ url: '/tasks?parentTaskId=T-list&status=completed' })).json();
    expect(completed.tasks).toHaveLength(5);
    const none = (await svc.inject({ url: '/tasks?parentTaskId=T-list&status=error' })).json();
    expect(none).toEqual({ tasks: [], nextCursor: null });
  });

  it('answers 404 in the contract shape for an unknown task', async () => {
    const res = await svc.inject({ url: '/tasks/tsk_01ARZ3NDEKTSV4RRFFQ69G5FAV' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
  });
});
