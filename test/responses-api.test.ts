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
});
