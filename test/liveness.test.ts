import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, wsUrl, type TestService } from './support/harness';
import { until } from './support/until';
import { openStream } from './support/ws-client';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { HEARTBEAT_MS: '100' } });
});
afterAll(() => svc.close());

const progressOf = async (id: string) => (await svc.inject({ url: `/tasks/${id}` })).json().progress;
const complete = { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };

/** Starts a task whose first step runs `command`, and returns its id once the command runs. */
async function runningTool(marker: string, command: string) {
  svc.model.script(marker, [{ toolCalls: [{ name: 'bash', args: { command } }], usage: { input: 10, output: 1 } }, complete]);
  const id = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: marker }) })).json().id;
  await until(async () => (await progressOf(id))?.phase === 'tool');
  return id;
}

describe('liveness: progress tells a busy subagent from a stuck one', () => {
  it('a silent tool keeps its last activity at the start of the phase; a tool that prints moves it', async () => {
    const silent = await runningTool('LIVE-SILENT', 'sleep 1.2');
    await new Promise((r) => setTimeout(r, 600));
    const quiet = await progressOf(silent);
    expect(quiet).toMatchObject({ phase: 'tool', tool: 'bash', step: 1, usage: { inputTokens: 10 } });
    expect(quiet.lastActivityAt).toBe(quiet.phaseSince);

    const chatty = await runningTool('LIVE-CHATTY', 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i; sleep 0.1; done');
    await new Promise((r) => setTimeout(r, 600));
    const busy = await progressOf(chatty);
    expect(busy).toMatchObject({ phase: 'tool', tool: 'bash' });
    expect(Date.parse(busy.lastActivityAt) - Date.parse(busy.phaseSince)).toBeGreaterThan(200);

    for (const id of [silent, chatty]) expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', progress: null });
  });

  it('a model that streams moves it; one that sends nothing does not', async () => {
    svc.model.script('LIVE-STREAMING', [{ text: 'x'.repeat(200), chunkSize: 4, chunkDelayMs: 20, ...complete }]);
    svc.model.script('LIVE-STALLED', [{ delayMs: 1200, ...complete }]);
    const streaming = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-STREAMING' }) })).json().id;
    const stalled = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-STALLED' }) })).json().id;
    await new Promise((r) => setTimeout(r, 600));
    const a = await progressOf(streaming);
    const b = await progressOf(stalled);
    expect(a).toMatchObject({ phase: 'model', step: 1 });
    expect(Date.parse(a.lastActivityAt) - Date.parse(a.phaseSince)).toBeGreaterThan(200);
    expect(b).toMatchObject({ phase: 'model', step: 1 });
    expect(b.lastActivityAt).toBe(b.phaseSince);
    for (const id of [streaming, stalled]) await taskEnd(svc, id);
  });

  it('heartbeats on a task stream carry the progress', async () => {
    const id = await runningTool('LIVE-BEAT', 'sleep 0.8');
    const stream = await openStream(wsUrl(svc, `/tasks/${id}/stream`));
    const beat = await stream.waitFor((m) => m.type === 'heartbeat' && m.data.phase !== undefined);
    expect(beat.data).toMatchObject({ lastSeq: expect.any(Number), phase: 'tool', tool: 'bash', step: 1, usage: { inputTokens: 10 } });
    expect(Date.parse(beat.data.lastActivityAt)).toBeGreaterThanOrEqual(Date.parse(beat.data.phaseSince));
    await stream.closed;
  });

  it('a queued task says so', async () => {
    const one = await startService({ model: svc.model, env: { MAX_CONCURRENT_TASKS: '1' } });
    try {
      one.model.script('LIVE-BLOCK', [{ delayMs: 800, ...complete }]);
      const first = (await one.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-BLOCK' }) })).json().id;
      const second = (await one.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-BLOCK 2' }) })).json().id;
      const p = (await one.inject({ url: `/tasks/${second}` })).json().progress;
      expect(p).toMatchObject({ phase: 'queued', step: 0 });
      await taskEnd(one, first);
      await taskEnd(one, second);
    } finally {
      await one.close();
    }
  });
});
