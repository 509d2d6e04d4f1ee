import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-approvals-'));
  env = childEnv(dir, model.url, TEST_API_KEY);
  // A definition whose front matter asks before every command.
  mkdirSync(path.join(dir, 'agents'), { recursive: true });
  writeFileSync(
    path.join(dir, 'agents', 'careful.md'),
    ['---', 'name: careful', 'description: asks before it runs a command', 'permissions:', '  bash: ask', '---', 'Work carefully.', ''].join('\n'),
  );
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an approval across a crash', () => {
  it("waits through kill -9 and is answered on the next process, which runs the call: a definition's permissions", async () => {
    model.script('CAREFUL', [
      { toolCalls: [{ name: 'bash', args: { command: 'echo approved > after-restart.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'ran after the restart', paths: ['after-restart.txt'] } }] },
    ]);
    const first = await startChildService(env);
    const agents = (await json(`${first.url}/agents`)).body.agents;
    expect(agents.find((a: { type: string }) => a.type === 'careful')).toMatchObject({ permissions: { bash: 'ask' } });
    const { id } = (
      await json(`${first.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ subagent_type: 'careful', prompt: 'CAREFUL', context: { parentTaskId: 'T-careful', userId: 'u-1' } })),
      })
    ).body;
    await until(async () => (await json(`${first.url}/tasks/${id}`)).body.status === 'paused');
    const { requestId } = (await json(`${first.url}/tasks/${id}`)).body.pause;
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startChildService(env);
    try {
      expect((await json(`${second.url}/tasks/${id}`)).body).toMatchObject({ status: 'paused', pause: { reason: 'approval', requestId } });
      const answer = await json(`${second.url}/tasks/${id}/approvals/${requestId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'allow' }),
      });
      expect(answer.status).toBe(200);
      await until(async () => (await json(`${second.url}/tasks/${id}`)).body.status === 'completed', 30_000);
      expect(readFileSync(path.join(dir, 'workspaces', 'T-careful', 'after-restart.txt'), 'utf8')).toBe('approved\n');
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });
});
