import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { metric, startService, taskBody, taskEnd, wsUrl, type TestService } from './support/harness';
import { until } from './support/until';
import { openStream, range, seqsOf } from './support/ws-client';

let svc: TestService;
beforeAll(async () => {
  // Pings at the default pace: a busy machine can hold a test's own client past a short one.
  svc = await startService({ env: { HEARTBEAT_MS: '100' } });
});
afterAll(() => svc.close());

const submit = async (s: TestService, body: Record<string, unknown>) => {
  const res = await s.inject({ method: 'POST', url: '/tasks', payload: body });
  expect(res.statusCode).toBe(202);
  return res.json<{ id: string; streamUrl: string }>();
};

function scriptReport(model: ScriptedModel, marker: string, opts: { firstDelayMs?: number } = {}) {
  model.script(marker, [
    {
      delayMs: opts.firstDelayMs ?? 0,
      text: 'Writing the report now.',
      chunkDelayMs: 2,
      toolCalls: [{ name: 'write_file', args: { path: `${marker}.md`, content: '# report\n' } }],
      usage: { input: 100, output: 10 },
    },
    {
      toolCalls: [{ name: 'complete', args: { summary: 'report ready', paths: [`${marker}.md`] } }],
      usage: { input: 150, output: 12, cached: 50 },
    },
  ]);
}

describe('GET /tasks/:id/stream', () => {
  it('streams every event in order with gap-free seq, then task.finished and close 1000', async () => {
    scriptReport(svc.model, 'STREAM-ORDER', { firstDelayMs: 150 });
    const { id, streamUrl } = await submit(svc, taskBody({ prompt: 'STREAM-ORDER' }));
    const client = await openStream(wsUrl(svc, streamUrl));
    const { code } = await client.closed;
    expect(code).toBe(1000);
    const events = client.messages.filter((m) => m.type !== 'heartbeat');
    expect(seqsOf(events)).toEqual(range(1, events.length));
    const types = events.map((m) => m.type).filter((t, i, all) => t !== 'text.delta' || all[i - 1] !== 'text.delta');
    expect(types).toEqual([
      'task.started',
      'step.started',
      'text.delta',
      'tool.call',
      'tool.result',
      'step.finished',
      'step.started',
      'tool.call',
      'tool.result',
      'step.finished',
      'task.finished',
    ]);
    for (const m of events) {
      expect(m.taskId).toBe(id);
      expect(Date.parse(m.at)).not.toBeNaN();
    }
    expect(events[0].data).toEqual({ subagent_type: 'general', model: 'gpt-4.1-mini', workspace: path.join(svc.config.workspacesDir, 'T-1') });
    expect(
      events
        .filter((m) => m.type === 'text.delta')
        .map((m) => m.data.text)
        .join(''),
    ).toBe('Writing the report now.');
    const call = events.find((m) => m.type === 'tool.call')!;
    expect(call.data).toMatchObject({ step: 1, toolName: 'write_file', input: { path: 'STREAM-ORDER.md', content: '# report\n' } });
    const result = events.find((m) => m.type === 'tool.result')!;
    expect(result.data).toMatchObject({ step: 1, toolCallId: call.data.toolCallId, toolName: 'write_file', isError: false });
    const finishedSteps = events.filter((m) => m.type === 'step.finished');
    expect(finishedSteps.map((m) => m.data)).toEqual([
      // gpt-4.1-mini: $0.40 input, $0.10 cached input, $1.60 output per million tokens.
      {
        step: 1,
        finishReason: 'tool-calls',
        usage: { inputTokens: 100, outputTokens: 10, totalTokens: 110, cachedInputTokens: 0, reasoningTokens: 0, costMicroUsd: 56 },
      },
      // 100 × 0.4 + 50 × 0.1 + 12 × 1.6 = 64.2 → 64
      {
        step: 2,
        finishReason: 'tool-calls',
        usage: { inputTokens: 150, outputTokens: 12, totalTokens: 162, cachedInputTokens: 50, reasoningTokens: 0, costMicroUsd: 64 },
      },
    ]);
    const final = events.at(-1)!;
    expect(final.data).toEqual((await svc.inject({ url: `/tasks/${id}` })).json());
    expect(final.data).toMatchObject({ status: 'completed', summary: 'report ready', steps: 2 });
  });

  it('replays stored events after the task ended, from ?after=N, then closes', async () => {
    scriptReport(svc.model, 'STREAM-REPLAY');
    const { id } = await submit(svc, taskBody({ prompt: 'STREAM-REPLAY' }));
    await taskEnd(svc, id);
    const all = await openStream(wsUrl(svc, `/tasks/${id}/stream`));
    await all.closed;
    const n = all.messages.length;
    expect(seqsOf(all.messages)).toEqual(range(1, n));
    const tail = await openStream(wsUrl(svc, `/tasks/${id}/stream?after=3`));
    expect((await tail.closed).code).toBe(1000);
    expect(tail.messages.map((m) => m.seq)).toEqual(range(4, n));
    expect(tail.messages.map((m) => m.type)).toEqual(all.messages.slice(3).map((m) => m.type));
  });

  it('lets a reader reconnect mid-run with ?after= and get every event exactly once', async () => {
    svc.model.script('STREAM-RECONNECT', [
      { toolCalls: [{ name: 'list_files', args: {} }] },
      { delayMs: 300, toolCalls: [{ name: 'list_files', args: {} }] },
      { delayMs: 300, toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] },
    ]);
    const { id, streamUrl } = await submit(svc, taskBody({ prompt: 'STREAM-RECONNECT' }));
    const first = await openStream(wsUrl(svc, streamUrl));
    await first.waitFor((m) => m.type === 'step.finished');
    first.socket.close();
    await first.closed;
    const got = seqsOf(first.messages);
    const second = await openStream(wsUrl(svc, `${streamUrl}?after=${got.at(-1)}`));
    await second.closed;
    const all = [...got, ...seqsOf(second.messages)];
    expect(all).toEqual(range(1, all.length));
    expect(second.messages.at(-1)!.type).toBe('task.finished');
    expect((await svc.inject({ url: `/tasks/${id}` })).json().status).toBe('completed');
  });

  it('gives readers joining at random moments, from random points, every event exactly once in order', async () => {
    svc.model.script('STREAM-BUSY', (ctx) =>
      ctx.turn < 25
        ? { text: `step ${ctx.turn} `.repeat(20), chunkDelayMs: 1, toolCalls: [{ name: 'list_files', args: {} }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'busy done', paths: [] } }] },
    );
    const { streamUrl } = await submit(svc, taskBody({ prompt: 'STREAM-BUSY' }));
    // A first reader from the start tells how far the task has got.
    const watcher = await openStream(wsUrl(svc, streamUrl));
    const readers: Array<{ after: number; client: Awaited<ReturnType<typeof openStream>> }> = [];
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 15 + Math.random() * 30));
      const after = Math.floor(Math.random() * (seqsOf(watcher.messages).at(-1) ?? 0));
      readers.push({ after, client: await openStream(wsUrl(svc, `${streamUrl}?after=${after}`)) });
    }
    await watcher.closed;
    const total = seqsOf(watcher.messages).length;
    expect(seqsOf(watcher.messages)).toEqual(range(1, total));
    expect(total).toBeGreaterThan(100);
    for (const { after, client } of readers) {
      expect((await client.closed).code).toBe(1000);
      expect(seqsOf(client.messages)).toEqual(range(after + 1, total));
    }
  });

  it('sends heartbeats while a step is silent', async () => {
    svc.model.script('STREAM-SILENT', [{ delayMs: 700, toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const { id, streamUrl } = await submit(svc, taskBody({ prompt: 'STREAM-SILENT' }));
    const client = await openStream(wsUrl(svc, streamUrl));
    await client.closed;
    const beats = client.messages.filter((m) => m.type === 'heartbeat');
    expect(beats.length).toBeGreaterThanOrEqual(3);
    for (const b of beats) {
      expect(b.seq).toBeUndefined();
      expect(b.taskId).toBe(id);
      expect(b.data.lastSeq).toEqual(expect.any(Number));
    }
    // A heartbeat names the last event sent before it.
    const i = client.messages.indexOf(beats.at(-1)!);
    expect(beats.at(-1)!.data.lastSeq).toBe(seqsOf(client.messages.slice(0, i)).at(-1));
  });

  it('refuses an unknown task with a 404 in the contract shape before the upgrade', async () => {
    const err = await openStream(wsUrl(svc, '/tasks/tsk_01ARZ3NDEKTSV4RRFFQ69G5FAV/stream')).catch((e) => e);
    expect(err.statusCode).toBe(404);
    expect(JSON.parse(err.body).error.code).toBe('not_found');
  });

  it('terminates a client that stops answering pings', async () => {
    const pinging = await startService({ model: svc.model, env: { WS_PING_MS: '150' } });
    try {
      pinging.model.script('STREAM-DEAD', [{ delayMs: 6000, toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
      const { id, streamUrl } = await submit(pinging, taskBody({ prompt: 'STREAM-DEAD' }));
      const client = await openStream(wsUrl(pinging, streamUrl));
      await client.waitFor((m) => m.type === 'task.started');
      const open = await metric(pinging, 'subagentd_stream_connections', { transport: 'websocket' });
      expect(open).toBe(1);
      // Stop reading: pings are never answered, and the server drops the socket while the task runs.
      (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
      await until(async () => (await metric(pinging, 'subagentd_stream_connections', { transport: 'websocket' })) === 0, 5000);
      expect((await pinging.inject({ url: `/tasks/${id}` })).json().status).toBe('running');
      expect((await taskEnd(pinging, id)).status).toBe('completed');
      client.socket.terminate();
    } finally {
      await pinging.close();
    }
  });
});

describe('slow readers', () => {
  let slow: TestService;
  beforeAll(async () => {
    slow = await startService({ env: { WS_MAX_BUFFERED_BYTES: '1024', HEARTBEAT_MS: '60000' } });
  });
  afterAll(() => slow.close());

  it('never stall the task; one too far behind is closed with 1013 and can catch up with ?after=', async () => {
    const big = 'x'.repeat(200_000);
    slow.model.script('STREAM-SLOW', [
      // ~16 MB of text deltas: more than the loopback socket buffers can hide.
      { text: 'y'.repeat(16 * 1024 * 1024), chunkSize: 65536, toolCalls: [{ name: 'write_file', args: { path: 'big1.txt', content: big } }] },
      { toolCalls: [{ name: 'write_file', args: { path: 'big2.txt', content: big } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: ['big1.txt', 'big2.txt'] } }] },
    ]);
    const { id, streamUrl } = await submit(slow, taskBody({ prompt: 'STREAM-SLOW' }));
    const reader = await openStream(wsUrl(slow, streamUrl));
    (reader.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    expect((await taskEnd(slow, id)).status).toBe('completed');
    (reader.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    const { code } = await reader.closed;
    expect(code).toBe(1013);
    const got = seqsOf(reader.messages);
    const catchUp = await openStream(wsUrl(slow, `${streamUrl}?after=${got.at(-1) ?? 0}`));
    expect((await catchUp.closed).code).toBe(1000);
    const all = [...got, ...seqsOf(catchUp.messages)];
    expect(all).toEqual(range(1, all.length));
    expect(catchUp.messages.at(-1)!.type).toBe('task.finished');
    // Large tool inputs are capped in events and say so.
    const call = [...reader.messages, ...catchUp.messages].find((m) => m.type === 'tool.call')!;
    expect(call.data.input).toMatchObject({ truncated: true, bytes: expect.any(Number) });
  });
});

describe('GET /stream?parentTaskId=', () => {
  it('follows three parallel subagents of one parent on one socket', async () => {
    for (const n of [1, 2, 3]) {
      svc.model.script(`PARALLEL-${n}`, [
        { delayMs: 50 * n, toolCalls: [{ name: 'write_file', args: { path: `part-${n}.md`, content: `part ${n}` } }] },
        { delayMs: 20, toolCalls: [{ name: 'complete', args: { summary: `part ${n}`, paths: [`part-${n}.md`] } }] },
      ]);
    }
    const client = await openStream(wsUrl(svc, '/stream?parentTaskId=T-parallel'));
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push((await submit(svc, taskBody({ prompt: `PARALLEL-${n}`, context: { parentTaskId: 'T-parallel', userId: 'u-1' } }))).id);
    }
    // Another parent's task must not show up.
    scriptReport(svc.model, 'OTHER-PARENT');
    const other = await submit(svc, taskBody({ prompt: 'OTHER-PARENT', context: { parentTaskId: 'T-other', userId: 'u-1' } }));
    for (const id of ids) await client.waitFor((m) => m.type === 'task.finished' && m.taskId === id);
    await taskEnd(svc, other.id);
    for (const id of ids) {
      const seqs = seqsOf(client.messages, id);
      expect(seqs).toEqual(range(1, seqs.length));
      expect(client.messages.filter((m) => m.taskId === id).at(-1)!.data.summary).toMatch(/^part \d$/);
    }
    expect(client.messages.some((m) => m.taskId === other.id)).toBe(false);
    client.socket.close();
  });

  it('requires parentTaskId', async () => {
    const err = await openStream(wsUrl(svc, '/stream')).catch((e) => e);
    expect(err.statusCode).toBe(400);
    expect(JSON.parse(err.body).error.code).toBe('invalid_request');
  });
});

describe('after a restart of the service', () => {
  it('replays the stored events of a finished task', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-restart-'));
    const model = await startScriptedModel();
    try {
      const first = await startService({ dir, model });
      scriptReport(model, 'RESTART-REPLAY');
      const { id } = await submit(first, taskBody({ prompt: 'RESTART-REPLAY' }));
      await taskEnd(first, id);
      const before = await openStream(wsUrl(first, `/tasks/${id}/stream`));
      await before.closed;
      await first.close();

      const second = await startService({ dir, model });
      const after = await openStream(wsUrl(second, `/tasks/${id}/stream`));
      expect((await after.closed).code).toBe(1000);
      expect(after.messages).toEqual(before.messages);
      await second.close();
    } finally {
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
