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
  // The commands wait for a file the test writes once it has looked, so what is checked never
  // depends on how fast a busy machine runs them.
  const release = (name: string) => svc.inject({ method: 'PUT', url: `/workspaces/T-1/files/${name}`, payload: 'go' });
  const waitFor = (name: string) => `until [ -f ${name} ]; do sleep 0.05; done`;

  it('a silent tool keeps its last activity at the start of the phase; a tool that prints moves it', async () => {
    const silent = await runningTool('LIVE-SILENT', waitFor('go-silent'));
    await until(async () => Date.now() - Date.parse((await progressOf(silent)).phaseSince) >= 500);
    const quiet = await progressOf(silent);
    expect(quiet).toMatchObject({ phase: 'tool', tool: 'bash', step: 1, usage: { inputTokens: 10 } });
    expect(quiet.lastActivityAt).toBe(quiet.phaseSince);
    await release('go-silent');

    const chatty = await runningTool('LIVE-CHATTY', `echo one; sleep 0.3; echo two; ${waitFor('go-chatty')}`);
    await until(async () => {
      const p = await progressOf(chatty);
      return Date.parse(p.lastActivityAt) - Date.parse(p.phaseSince) > 200;
    });
    expect(await progressOf(chatty)).toMatchObject({ phase: 'tool', tool: 'bash' });
    await release('go-chatty');

    for (const id of [silent, chatty]) expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed', progress: null });
  });

  it('a model that streams moves it; one that sends nothing does not', async () => {
    svc.model.script('LIVE-STREAMING', [{ text: 'x'.repeat(200), chunkSize: 4, chunkDelayMs: 20, ...complete }]);
    svc.model.script('LIVE-STALLED', [{ delayMs: 4000, ...complete }]);
    const streaming = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-STREAMING' }) })).json().id;
    const stalled = (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt: 'LIVE-STALLED' }) })).json().id;
    await until(async () => {
      const a = await progressOf(streaming);
      return a !== null && Date.parse(a.lastActivityAt) - Date.parse(a.phaseSince) > 200;
    });
    expect(await progressOf(streaming)).toMatchObject({ phase: 'model', step: 1 });
    // Half a second into a call that sends nothing for four.
    await until(async () => Date.now() - Date.parse((await progressOf(stalled)).phaseSince) >= 500);
    const b = await progressOf(stalled);
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
