import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { sseBlocks } from './support/sse-client';
import { until } from './support/until';

let model: ScriptedModel;
let svc: TestService;
let hooks: { server: Server; url: string; received: Array<{ type: string; taskId: string }> };
beforeAll(async () => {
  model = await startScriptedModel();
  svc = await startService({ model, env: { WEBHOOK_ALLOW_PRIVATE: 'true', HEARTBEAT_MS: '100' } });
  const received: Array<{ type: string; taskId: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const event = JSON.parse(body) as { type: string; data: { taskId: string } };
      received.push({ type: event.type, taskId: event.data.taskId });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hooks = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
  const created = await svc.inject({ method: 'POST', url: '/webhooks', payload: { url: hooks.url, events: ['tool.requested'] } });
  expect(created.statusCode).toBe(201);
});
afterAll(async () => {
  await svc.close();
  await model.close();
  await new Promise<void>((r) => hooks.server.close(() => r()));
});

const post = (url: string, payload?: object) => svc.inject({ method: 'POST', url, payload });
const task = async (id: string) => (await svc.inject({ url: `/tasks/${id}` })).json();
const paused = (id: string) => until(async () => (await task(id)).status === 'paused');
const submit = async (prompt: string, parentTaskId: string, options: object) => {
  const res = await post('/tasks', taskBody({ prompt, context: { parentTaskId, userId: 'u' }, options }));
  expect(res.statusCode).toBe(202);
  return res.json().id as string;
};
/** The tool results the model read in the requests of the script `key`. */
const resultsSeen = (key: string) =>
  model.requests
    .filter((r) => JSON.stringify(r.body.messages).includes(key))
    .flatMap((r) => r.body.messages)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

const weather = {
  name: 'get_weather',
  description: "The weather at a place, from the caller's own service",
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string', minLength: 1 } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('caller-run tools (options.clientTools)', () => {
  it("offers the caller's tool, pauses on its call, and gives the model the result the caller posts", async () => {
    model.script('CT-RUN', [
      { toolCalls: [{ name: 'get_weather', args: { city: 'Lyon' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'sunny in Lyon', paths: [] } }] },
    ]);
    const id = await submit('CT-RUN', 'T-ct', { clientTools: [weather] });
    await paused(id);

    const offered = model.requests.find((r) => JSON.stringify(r.body.messages).includes('CT-RUN'))!.body.tools!;
    const sent = offered.find((t) => t.function.name === 'get_weather')!;
    expect(sent.function).toMatchObject({ description: weather.description, parameters: { properties: { city: { type: 'string' } }, required: ['city'] } });

    const waiting = await task(id);
    expect(waiting.pause).toMatchObject({ reason: 'tool', toolName: 'get_weather', input: { city: 'Lyon' }, requestId: expect.stringMatching(/^tlr_/) });
    expect(waiting.pause.pending).toEqual([expect.objectContaining({ kind: 'tool', toolName: 'get_weather', answer: null })]);
    // What a client reconnecting to the stream sees in a heartbeat: what the task waits for.
    expect(waiting.progress).toMatchObject({ phase: 'paused', reason: 'tool', pending: [{ kind: 'tool', requestId: waiting.pause.requestId }] });
    const { requestId } = waiting.pause;
    // ... and on the stream itself: a heartbeat carries the request.
    const stream = await fetch(`${svc.url}/tasks/${id}/events?after=4`);
    for await (const block of sseBlocks(stream)) {
      // Heartbeats travel as comments holding their JSON.
      if (!block.comment?.includes('"heartbeat"')) continue;
      expect(JSON.parse(block.comment).data).toMatchObject({
        phase: 'paused',
        reason: 'tool',
        pending: [{ requestId, toolName: 'get_weather', input: { city: 'Lyon' } }],
      });
      break;
    }

    // Not an answer: a budget resume, an approval route, an unknown request, a body that is neither shape.
    expect((await post(`/tasks/${id}/resume`)).json().error.code).toBe('approval_pending');
    expect((await post(`/tasks/${id}/approvals/${requestId}`, { decision: 'allow' })).statusCode).toBe(404);
    expect((await post(`/tasks/${id}/tool-results/tlr_unknown`, { output: 1 })).statusCode).toBe(404);
    const neither = await post(`/tasks/${id}/tool-results/${requestId}`, { result: 'sunny' });
    expect([neither.statusCode, neither.json().error.code]).toEqual([400, 'invalid_request']);

    const answered = await post(`/tasks/${id}/tool-results/${requestId}`, { output: { sky: 'sunny', celsius: 24 } });
    expect(answered.statusCode).toBe(200);
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'sunny in Lyon' });
    expect(resultsSeen('CT-RUN').join('\n')).toContain('"celsius":24');

    // The same result again is fine; a different one is not.
    expect((await post(`/tasks/${id}/tool-results/${requestId}`, { output: { celsius: 24, sky: 'sunny' } })).statusCode).toBe(200);
    const other = await post(`/tasks/${id}/tool-results/${requestId}`, { output: 'rain' });
    expect([other.statusCode, other.json().error.code]).toEqual([409, 'tool_result_submitted']);

    const events = await storedEvents(svc, id);
    expect(events.map((e) => e.type).filter((t) => t.startsWith('tool.') || t.startsWith('task.'))).toEqual([
      'task.started',
      'tool.call',
      'tool.requested',
      'task.paused',
      'tool.answered',
      'task.resumed',
      'tool.result',
      'tool.call',
      'tool.result',
      'task.finished',
    ]);
    expect(events.find((e) => e.type === 'tool.requested')!.data).toEqual({
      requestId,
      toolCallId: expect.any(String),
      toolName: 'get_weather',
      input: { city: 'Lyon' },
    });
    expect(events.find((e) => e.type === 'tool.answered')!.data).toEqual({ requestId, by: 'caller', isError: false });
    expect(events.find((e) => e.type === 'tool.result')!.data).toMatchObject({
      toolName: 'get_weather',
      output: { sky: 'sunny', celsius: 24 },
      isError: false,
    });
    await until(async () => hooks.received.some((h) => h.type === 'tool.requested' && h.taskId === id));
  });

  it("gives the model the caller's error as a tool error; the task goes on", async () => {
    model.script('CT-ERR', [
      { toolCalls: [{ name: 'get_weather', args: { city: 'Atlantis' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'no such city', paths: [] } }] },
    ]);
    const id = await submit('CT-ERR', 'T-ct-err', { clientTools: [weather] });
    await paused(id);
    const { requestId } = (await task(id)).pause;
    expect((await post(`/tasks/${id}/tool-results/${requestId}`, { error: 'unknown city: Atlantis' })).statusCode).toBe(200);
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'no such city' });
    expect(resultsSeen('CT-ERR').join('\n')).toContain('unknown city: Atlantis');
    const result = (await storedEvents(svc, id)).find((e) => e.type === 'tool.result')!;
    expect(result.data).toMatchObject({ toolName: 'get_weather', isError: true });
  });

  it("refuses the model's input that does not fit the tool's schema as a tool error, without asking the caller", async () => {
    model.script('CT-BAD', [
      { toolCalls: [{ name: 'get_weather', args: { town: 'Lyon' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'schema said no', paths: [] } }] },
    ]);
    const id = await submit('CT-BAD', 'T-ct-bad', { clientTools: [weather] });
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', summary: 'schema said no' });
    expect(resultsSeen('CT-BAD').join('\n')).toMatch(/Invalid input for tool get_weather/);
    expect((await storedEvents(svc, id)).some((e) => e.type === 'tool.requested')).toBe(false);
  });

  it('waits for an approval and a tool result of one step together; a late result after the timeout is refused', async () => {
    model.script('CT-MIX', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'mix.txt', content: 'x' } },
          { name: 'get_weather', args: { city: 'Oslo' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'mixed', paths: [] } }] },
    ]);
    const id = await submit('CT-MIX', 'T-ct-mix', { clientTools: [weather], permissions: { write_file: 'ask' }, approvalTimeoutMs: 1500 });
    await paused(id);
    const { pause } = await task(id);
    expect(pause.reason).toBe('approval');
    expect(pause.pending.map((p: { kind: string }) => p.kind)).toEqual(['approval', 'tool']);
    const approved = await post(`/tasks/${id}/approvals/${pause.pending[0].requestId}`, { decision: 'allow' });
    expect(approved.json()).toMatchObject({ status: 'paused', progress: { pending: [{ kind: 'tool' }] } });
    // Nobody posts the weather: the timeout fails the call, the model reads why, the task goes on.
    expect(await taskEnd(svc, id, { ms: 10_000 })).toMatchObject({ status: 'completed', summary: 'mixed' });
    expect(resultsSeen('CT-MIX').join('\n')).toContain('no result came from the caller within the timeout');
    const answered = (await storedEvents(svc, id)).find((e) => e.type === 'tool.answered')!;
    expect(answered.data).toMatchObject({ requestId: pause.pending[1].requestId, by: 'timeout', isError: true });
    const late = await post(`/tasks/${id}/tool-results/${pause.pending[1].requestId}`, { output: 'cold' });
    expect([late.statusCode, late.json().error.code]).toEqual([409, 'tool_result_submitted']);
  });

  it('says input-required over A2A while a tool result is awaited, and refuses a result once the task was cancelled', async () => {
    model.script('CT-A2A', [
      { toolCalls: [{ name: 'get_weather', args: { city: 'Rome' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] },
    ]);
    const id = await submit('CT-A2A', 'T-ct-a2a', { clientTools: [weather] });
    await paused(id);
    const got = (await (
      await fetch(`${svc.url}/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id } }),
      })
    ).json()) as { result: { status: { state: string; message: unknown } } };
    expect(got.result.status.state).toBe('input-required');
    expect(JSON.stringify(got.result.status.message)).toContain(`/tasks/${id}/tool-results/`);
    const { requestId } = (await task(id)).pause;
    // Cancelled while it waits: the request can no longer be answered.
    expect((await post(`/tasks/${id}/cancel`)).json().status).toBe('aborted');
    const cancelled = await post(`/tasks/${id}/tool-results/${requestId}`, { output: 1 });
    expect([cancelled.statusCode, cancelled.json().error.code]).toEqual([409, 'task_finished']);
  });

  it('refuses caller-run tools named like a service tool, given twice, with a schema that is not one, or for a shell task', async () => {
    const bad = async (options: object, type = 'general') =>
      (await post('/tasks', taskBody({ subagent_type: type, ...(type === 'shell' && { prompt: undefined, command: 'true' }), options }))).json();
    const named = await bad({ clientTools: [{ ...weather, name: 'bash' }] });
    expect(named.error).toMatchObject({ code: 'invalid_request', details: [{ field: 'body.options.clientTools.0.name' }] });
    expect((await bad({ clientTools: [weather, weather] })).error.details).toEqual([
      { field: 'body.options.clientTools.1.name', message: '"get_weather" is given twice' },
    ]);
    expect((await bad({ clientTools: [{ ...weather, inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }] })).error.code).toBe(
      'invalid_request',
    );
    expect((await bad({ clientTools: [{ ...weather, inputSchema: { type: 'string' } }] })).error.details[0].field).toBe(
      'body.options.clientTools.0.inputSchema',
    );
    expect((await bad({ clientTools: [weather] }, 'shell')).error.details[0].field).toBe('body.options.clientTools');
  });
});
