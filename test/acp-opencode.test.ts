import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opencodeBin, opencodeEnv, opencodeMissing } from './support/opencode';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';

/**
 * A real ACP agent: `opencode acp` (npm `opencode-ai`), run by the definition in
 * examples/agents/opencode.md against the scripted model. OPENCODE_BIN names its binary; .ci/run
 * installs it (outside the folders the sandbox hides) and runs this in bubblewrap.
 */
const repo = path.resolve(import.meta.dirname, '..');
const bin = opencodeBin;
const missing = opencodeMissing;
if (missing) {
  console.warn(
    `[opencode test] skipped: ${missing}. npm install opencode-ai and set OPENCODE_BIN=<prefix>/node_modules/.bin/opencode to run it; .ci/run does.`,
  );
}
const bwrap = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true']).status === 0;

let svc: TestService;
let netModel: ScriptedModel | undefined;
let dir: string;
const saved = { ...process.env };

describe.skipIf(missing !== null)(`opencode acp as a subagent (sandbox: ${bwrap ? 'bwrap' : 'none'})`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-opencode-'));
    mkdirSync(path.join(dir, 'agents'));
    // The example definition, with the binary this machine has.
    const example = readFileSync(path.join(repo, 'examples/agents/opencode.md'), 'utf8');
    writeFileSync(path.join(dir, 'agents', 'opencode.md'), example.replace(/^command: opencode$/m, `command: ${bin}`));
    // The same with a network policy, its model on 127.0.0.2 (not the sandbox's own loopback) listed.
    netModel = await startScriptedModel({ host: '127.0.0.2' });
    writeFileSync(
      path.join(dir, 'agents', 'opencode-net.md'),
      example
        .replace(/^command: opencode$/m, `command: ${bin}`)
        .replace(/^name: opencode$/m, `name: opencode-net\nnetwork:\n  allow: ["127.0.0.2:${new URL(netModel.url).port}"]`),
    );
    svc = await startService({ dir, env: { BASH_SANDBOX: bwrap ? 'bwrap' : 'none', MODEL_STALL_TIMEOUT_MS: '60000', EGRESS_ALLOW_PRIVATE: 'true' } });
    Object.assign(process.env, opencodeEnv(svc.model.url));
  }, 60_000);
  afterAll(async () => {
    process.env = saved;
    await svc?.close();
    await netModel?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a file in the workspace and completes through the API, its events on our stream', async () => {
    svc.model.script('OC-REPORT', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'write', args: { filePath: 'report.md', content: '# Report\nwritten by opencode\n' } }], usage: { input: 900, output: 40 } }
        : { text: 'I wrote report.md with the report.', usage: { input: 1000, output: 12 } },
    );
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ subagent_type: 'opencode', prompt: 'OC-REPORT: write report.md', context: { parentTaskId: 'T-oc', userId: 'u-oc' } }),
    });
    expect(res.statusCode).toBe(202);
    const task = await taskEnd(svc, res.json().id, { ms: 90_000 });
    expect(task, JSON.stringify(task.error)).toMatchObject({ status: 'completed', summary: 'I wrote report.md with the report.', steps: 1 });
    const file = path.join(svc.config.workspacesDir, 'T-oc', 'report.md');
    expect(readFileSync(file, 'utf8')).toBe('# Report\nwritten by opencode\n');
    expect(task.artifacts).toEqual([expect.objectContaining({ path: file, fsType: 'file' })]);
    // Nothing of opencode's own state lands in the workspace (its HOME is a scratch folder).
    expect(
      spawnSync('ls', ['-A', path.join(svc.config.workspacesDir, 'T-oc')], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n'),
    ).toEqual(['report.md']);
    const events = await storedEvents(svc, task.id);
    const types = events.map((e: { type: string }) => e.type);
    expect(types[0]).toBe('task.started');
    expect(types.at(-1)).toBe('task.finished');
    expect(events.find((e: any) => e.type === 'tool.call')?.data.toolName).toBe('write');
    expect(events.find((e: any) => e.type === 'tool.result')?.data.isError).toBe(false);
    expect(types).toContain('text.delta');
    // opencode reports the usage of its last model call with its answer.
    expect(task.usage.inputTokens).toBeGreaterThan(0);
  }, 120_000);

  it.skipIf(!bwrap)(
    "with a network policy, opencode reaches its model only through the task's proxy, each call an event",
    async () => {
      const before = process.env.OPENCODE_CONFIG_CONTENT;
      const model = netModel!;
      Object.assign(process.env, opencodeEnv(model.url));
      try {
        model.script('OC-NET', [{ text: 'Reached my model through the proxy.', usage: { input: 500, output: 8 } }]);
        const res = await svc.inject({
          method: 'POST',
          url: '/tasks',
          payload: taskBody({ subagent_type: 'opencode-net', prompt: 'OC-NET: say hello', context: { parentTaskId: 'T-oc-net', userId: 'u-oc' } }),
        });
        expect(res.statusCode, res.body).toBe(202);
        const task = await taskEnd(svc, res.json().id, { ms: 90_000 });
        expect(task, JSON.stringify(task.error)).toMatchObject({ status: 'completed', summary: 'Reached my model through the proxy.' });
        const requests = (await storedEvents(svc, task.id)).filter((e: { type: string }) => e.type === 'network.request').map((e: any) => e.data);
        expect(requests.length, JSON.stringify((await storedEvents(svc, task.id)).map((e: any) => e.type))).toBeGreaterThan(0);
        // Its model's host is reached; anything else it tries (opencode asks npm for packages) is refused.
        expect(
          requests.filter((r: { host: string }) => r.host === '127.0.0.2').every((r: { allowed: boolean; bytesIn: number }) => r.allowed && r.bytesIn > 0),
        ).toBe(true);
        expect(requests.some((r: { host: string }) => r.host === '127.0.0.2')).toBe(true);
        expect(requests.filter((r: { host: string }) => r.host !== '127.0.0.2').every((r: { allowed: boolean }) => !r.allowed)).toBe(true);
        expect(model.served.length).toBeGreaterThan(0);
      } finally {
        process.env.OPENCODE_CONFIG_CONTENT = before;
        await model.close();
      }
    },
    120_000,
  );
});
