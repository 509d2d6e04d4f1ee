import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { startHangingEngine, upTo, type HangingEngine } from './support/hanging-engine';
import { until } from './support/until';

/**
 * SANDBOX=container against an engine that accepts calls and never answers some of them (a
 * loopback socket standing in for a wedged or paused Docker engine): a task, the service's start
 * and its end go on. No engine is needed: these run everywhere.
 */
const IMAGE = 'localhost/faults:1';
let engine: HangingEngine | null = null;
let svc: TestService | null = null;
afterEach(async () => {
  await svc?.close();
  await engine?.close();
  svc = engine = null;
});

const env = (host: string, timeoutMs: number) => ({
  SANDBOX: 'container',
  SANDBOX_IMAGE: IMAGE,
  DOCKER_HOST: host,
  INSTANCE_ID: `engine-faults-${process.pid}`,
  SANDBOX_ENGINE_TIMEOUT_MS: String(timeoutMs),
});

async function post(body: Record<string, unknown>, wait = true): Promise<any> {
  const res = await fetch(`${svc!.url}/tasks${wait ? '?wait=true' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.json();
}
const shellTask = (command: string) => taskBody({ subagent_type: 'shell', prompt: undefined, command, context: { parentTaskId: 'T-faults', userId: 'u-1' } });

describe('an engine that does not answer (SANDBOX=container)', () => {
  it("ends a shell task `error` / `sandbox_unavailable` when the container's creation is not answered", async () => {
    engine = await startHangingEngine(upTo('POST /containers/create'));
    svc = await startService({ env: env(engine.host, 500) });
    const task = await post(shellTask('echo hi'));
    expect(task).toMatchObject({ status: 'error', error: { code: 'sandbox_unavailable' } });
    expect(task.error.message).toContain('did not answer a container’s creation within 500 ms');
    // What the engine may still make is looked for by the task's label.
    await until(async () => engine!.seen.filter((c) => c === 'GET /containers/json').length >= 2);
  });

  it("ends a model task `error` / `sandbox_unavailable` when its bash call's exec is not answered; the model read why", async () => {
    engine = await startHangingEngine(
      upTo('POST /containers/c-1/exec', {
        'POST /containers/create': { Id: 'c-1', Warnings: [] },
        'POST /containers/c-1/start': {},
        'DELETE /containers/c-1': {},
      }),
    );
    svc = await startService({ env: env(engine.host, 500) });
    let seen = '';
    svc.model.script('FAULT-EXEC', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo hi' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    const task = await post(taskBody({ prompt: 'FAULT-EXEC', context: { parentTaskId: 'T-faults', userId: 'u-1' } }));
    expect(JSON.parse(seen)).toMatchObject({ exitCode: 127 });
    expect(JSON.parse(seen).stderr).toContain('did not answer an exec’s creation within 500 ms');
    expect(task).toMatchObject({ status: 'error', error: { code: 'sandbox_unavailable' } });
    // The container it made is removed when the run ends.
    await until(async () => engine!.seen.includes('DELETE /containers/c-1'));
  });

  it('closes the service while a container is being made, without waiting for the engine', async () => {
    engine = await startHangingEngine(upTo('POST /containers/create'));
    // A bound longer than the test's own timeout: only not waiting for the engine lets the close end.
    svc = await startService({ env: env(engine.host, 600_000) });
    await post(shellTask('sleep 1'), false);
    await until(async () => engine!.seen.includes('POST /containers/create'));
    const closing = svc;
    svc = null;
    await expect(closing.close()).resolves.toBeUndefined();
  });

  it('starts although the engine does not answer the removal of what a killed instance left', async () => {
    engine = await startHangingEngine(upTo('DELETE /containers/left-1', { 'GET /containers/json': [{ Id: 'left-1' }] }));
    svc = await startService({ env: env(engine.host, 500) });
    expect(engine.seen).toContain('DELETE /containers/left-1');
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
  });

  it('refuses to start, saying why, when the engine answers nothing', async () => {
    engine = await startHangingEngine(() => undefined);
    const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-faults-'));
    try {
      await expect(startService({ dir, env: env(engine.host, 500) })).rejects.toThrow('did not answer a ping within 500 ms');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
