import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { OPENAI_API: 'responses' } });
});
afterAll(() => svc.close());

describe('OPENAI_API=responses', () => {
  it('runs a multi-step task over the Responses API with tool calls, usage and artifacts', async () => {
    let bashSaw = '';
    svc.model.script('RESPONSES-RUN', (ctx) => {
      switch (ctx.turn) {
        case 0:
          return {
            text: 'Writing the notes.',
            toolCalls: [{ name: 'write_file', args: { path: 'notes.md', content: 'via responses\n' } }],
            usage: { input: 90, output: 9, cached: 30 },
          };
        case 1:
          return { toolCalls: [{ name: 'bash', args: { command: 'cat notes.md' } }], usage: { input: 120, output: 12, reasoning: 4 } };
        default:
          bashSaw = ctx.toolResults[0]?.content ?? '';
          return { toolCalls: [{ name: 'complete', args: { summary: 'notes written', paths: ['notes.md'] } }], usage: { input: 150, output: 15 } };
      }
    });
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ prompt: 'RESPONSES-RUN', context: { parentTaskId: 'T-resp', userId: 'u-1' } }),
    });
    const out = res.json();
    expect(out).toMatchObject({
      status: 'completed',
      stopReason: 'complete',
      summary: 'notes written',
      steps: 3,
      usage: { inputTokens: 360, outputTokens: 36, totalTokens: 396, cachedInputTokens: 30, reasoningTokens: 4 },
    });
    expect(out.artifacts.map((a: { path: string }) => a.path)).toEqual([path.join(svc.config.workspacesDir, 'T-resp', 'notes.md')]);
    expect(readFileSync(path.join(svc.config.workspacesDir, 'T-resp', 'notes.md'), 'utf8')).toBe('via responses\n');
    expect(bashSaw).toContain('via responses');
    const calls = svc.model.requests.filter((r) => JSON.stringify(r.body).includes('RESPONSES-RUN'));
    expect(calls.map((r) => r.api)).toEqual(['responses', 'responses', 'responses']);
  });

  it('bills an answer that fails before any output for what its response.failed reported', async () => {
    svc.model.script('RESPONSES-FAILED', [
      { fault: 'failed', errorMessage: 'The model failed to generate a response.', usage: { input: 800, output: 0, cached: 200 } },
    ]);
    const out = (
      await svc.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ prompt: 'RESPONSES-FAILED', context: { parentTaskId: 'T-resp-failed', userId: 'u-1' } }),
      })
    ).json();
    expect(out).toMatchObject({ status: 'error', error: { code: 'provider_error', message: expect.stringContaining('failed to generate') }, steps: 0 });
    expect(svc.model.requests.filter((r) => JSON.stringify(r.body).includes('RESPONSES-FAILED'))).toHaveLength(1);
    // The provider's bill for the failed call, once: in the task and in its usage record.
    expect(out.usage).toMatchObject({ inputTokens: 800, outputTokens: 0, cachedInputTokens: 200 });
    const records = (await svc.inject({ url: '/usage/records?parentTaskId=T-resp-failed' })).json().records;
    expect(records).toMatchObject([{ taskId: out.id, status: 'error', inputTokens: 800 }]);
  });
});
