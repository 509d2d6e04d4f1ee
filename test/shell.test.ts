import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, TEST_API_KEY, type TestService } from './support/harness';
import { until } from './support/until';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { BASH_MAX_OUTPUT_BYTES: '2000', BASH_TIMEOUT_MS: '1000' } });
});
afterAll(() => svc.close());

const shell = async (command: string, over: Record<string, unknown> = {}) =>
  (
    await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ subagent_type: 'shell', prompt: undefined, command, context: { parentTaskId: 'T-sh', userId: 'u-sh' }, ...over }),
    })
  ).json();

describe('shell subtask (no model)', () => {
  it('runs one command in the workspace and returns its exit code and output, with zero tokens', async () => {
    const before = svc.model.requests.length;
    const out = await shell('echo hi; echo oops >&2; pwd; exit 3');
    expect(out).toMatchObject({
      status: 'completed',
      subagent_type: 'shell',
      model: null,
      steps: 0,
      stopReason: null,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      output: { exitCode: 3, stderr: 'oops\n', truncated: { stdout: false, stderr: false } },
    });
    expect(out.output.stdout).toMatch(/^hi\n.*\/workspaces\/T-sh\n$/);
    expect(svc.model.requests.length).toBe(before);
    const records = (await svc.inject({ url: `/usage/records?parentTaskId=T-sh` })).json().records;
    expect(records.find((r: any) => r.taskId === out.id)).toMatchObject({ subagent_type: 'shell', totalTokens: 0, status: 'completed' });
  });

  it('gives the command no provider key and no service variable', async () => {
    const out = await shell('env');
    expect(out.output.stdout).not.toContain(TEST_API_KEY);
    expect(out.output.stdout).not.toContain('OPENAI');
    expect(out.output.stdout).not.toContain('DATABASE_PATH');
    expect(out.output.stdout).toContain('HOME=');
  });

  it('caps long output, keeping head and tail and saying how much was cut', async () => {
    const out = await shell('seq 1 100000');
    expect(out.output.truncated).toEqual({ stdout: true, stderr: false });
    expect(out.output.stdout.startsWith('1\n2\n3\n')).toBe(true);
    expect(out.output.stdout.endsWith('99999\n100000\n')).toBe(true);
    expect(out.output.stdout).toMatch(/\[\.\.\. \d+ bytes cut of 588895 \.\.\.\]/);
  });

  it('is aborted with code timeout and its whole process group killed', async () => {
    const out = await shell('(sleep 30; echo late > late.txt) & sleep 30', { options: { timeoutMs: 300 } });
    expect(out).toMatchObject({ status: 'aborted', error: { code: 'timeout' } });
    // The exact command line: another process on the host may well be running `sleep 300`. Gone
    // within moments, not after its 30 s (a loaded machine takes a while to tear it down).
    await until(async () => !/^sleep 30$/m.test(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })), 5000);
  });
});

describe('bash tool', () => {
  it('kills a command at its timeout and tells the model (exit code 124)', async () => {
    let seen = '';
    svc.model.script('BASH-TIMEOUT', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'sleep 20 & sleep 20', timeoutMs: 300 } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'BASH-TIMEOUT' }) });
    expect(res.json().status).toBe('completed');
    const result = JSON.parse(seen);
    expect(result.exitCode).toBe(124);
    expect(result.timedOut).toBe(true);
    expect(result.stderr).toContain('timed out after 300 ms');
  });

  it('caps its timeout at BASH_TIMEOUT_MS', async () => {
    let seen = '';
    svc.model.script('BASH-CAP', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'sleep 10', timeoutMs: 60_000 } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'BASH-CAP' }) });
    expect(JSON.parse(seen)).toMatchObject({ exitCode: 124, timedOut: true });
    expect(JSON.parse(seen).stderr).toContain('after 1000 ms');
  });
});
