import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, taskEnd, wsUrl, type TestService } from './support/harness';
import { openStream } from './support/ws-client';
import { until } from './support/until';

/**
 * Tasks of `kind: acp` definitions: an external Agent Client Protocol agent runs the task. Here it
 * is the project's scripted ACP agent (scripted-model/acp-agent.ts), a real process speaking ACP
 * over stdio through the official SDK, which does what its prompt's marker says.
 */
const repo = path.resolve(import.meta.dirname, '..');
let svc: TestService;
let dir: string;

function definition(name: string, extra = '') {
  return `---
name: ${name}
description: The scripted ACP agent (${name})
kind: acp
command: ${process.execPath}
args: ["--import", "${path.join(repo, 'node_modules/tsx/dist/loader.mjs')}", "${path.join(repo, 'scripted-model/acp-agent.ts')}"]
env: [ACP_TEST_PASSED]
${extra}
---
`;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-acp-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'scripted-acp.md'), definition('scripted-acp'));
  writeFileSync(path.join(dir, 'agents', 'scripted-acp-deny.md'), definition('scripted-acp-deny', 'permission: deny'));
  writeFileSync(path.join(dir, 'agents', 'scripted-acp-ask.md'), definition('scripted-acp-ask', 'permission: ask'));
  writeFileSync(
    path.join(dir, 'agents', 'missing-agent.md'),
    '---\nname: missing-agent\ndescription: An agent whose command does not exist\nkind: acp\ncommand: /nonexistent/acp-agent\n---\n',
  );
  process.env.ACP_TEST_PASSED = 'visible';
  process.env.ACP_TEST_HIDDEN = 'hidden';
  svc = await startService({ dir, env: { MODEL_STALL_TIMEOUT_MS: '4000' } });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (prompt: string, type = 'scripted-acp', parentTaskId = 'T-acp') => {
  const res = await svc.inject({
    method: 'POST',
    url: '/tasks',
    payload: taskBody({ subagent_type: type, prompt, context: { parentTaskId, userId: 'u-acp' } }),
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
};

/** Waits until the task's stream has shown a text delta (the agent is in its turn). */
async function saidSomething(id: string) {
  const stream = await openStream(wsUrl(svc, `/tasks/${id}/stream`));
  await until(async () => stream.messages.some((m) => m.type === 'text.delta'));
  stream.socket.close();
}

describe('ACP agents as subagents', () => {
  it('are listed by GET /agents with kind acp', async () => {
    const agents = (await svc.inject({ url: '/agents' })).json().agents;
    expect(agents.find((a: { type: string }) => a.type === 'scripted-acp')).toMatchObject({ kind: 'acp', tools: [] });
  });

  it('runs a task: plan, messages and tool calls on the stream, the file as an artifact, usage billed', async () => {
    const id = await run('ACP-WRITE please write the notes');
    const task = await taskEnd(svc, id);
    expect(task, JSON.stringify(task.error)).toMatchObject({ status: 'completed', stopReason: 'text', steps: 1 });
    expect(task.summary).toBe('Wrote notes/acp.md (line 2: written over ACP).');
    const ws = path.join(svc.config.workspacesDir, 'T-acp');
    expect(readFileSync(path.join(ws, 'notes/acp.md'), 'utf8')).toBe('# Notes\nwritten over ACP\n');
    expect(task.artifacts).toEqual([expect.objectContaining({ path: path.join(ws, 'notes/acp.md'), fsType: 'file', size: 25 })]);
    expect(task.usage).toMatchObject({ inputTokens: 120, outputTokens: 30, totalTokens: 150, cachedInputTokens: 20, reasoningTokens: 5 });
    const events = await storedEvents(svc, id);
    expect(events.map((e: { type: string }) => e.type)).toEqual([
      'task.started',
      'step.started',
      'plan',
      'text.delta',
      'tool.call',
      'tool.result',
      'text.delta',
      'step.finished',
      'task.finished',
    ]);
    expect(events[2].data.entries).toEqual([{ content: 'Write the notes', priority: 'high', status: 'in_progress' }]);
    expect(events[4].data).toMatchObject({ toolName: 'Write notes/acp.md', toolCallId: 'w1' });
    expect(events[5].data).toMatchObject({ isError: false, output: { readBack: 'written over ACP' } });
    const record = (await svc.inject({ url: `/usage/records?parentTaskId=T-acp` })).json().records.find((r: { taskId: string }) => r.taskId === id);
    expect(record).toMatchObject({ inputTokens: 120, usageReported: true, steps: 1 });
  });

  it('serves terminals inside the workspace', async () => {
    const task = await taskEnd(svc, await run('ACP-TERMINAL'));
    expect(task.summary).toBe('terminal said: from-terminal (exit 0)');
    // No usage reported: the record says the tokens are unknown.
    const record = (await svc.inject({ url: `/usage/records?parentTaskId=T-acp` })).json().records.find((r: { taskId: string }) => r.taskId === task.id);
    expect(record).toMatchObject({ inputTokens: 0, usageReported: false });
  });

  it("answers permission requests by the definition's policy", async () => {
    for (const [type, said] of [
      ['scripted-acp', 'permission: yes'],
      ['scripted-acp-deny', 'permission: no'],
    ]) {
      const task = await taskEnd(svc, await run('ACP-PERMISSION', type));
      expect(task.summary, JSON.stringify(task.error)).toBe(said);
    }
  });

  it('forwards permission requests as approvals with permission: ask; the agent waits, past its stall timeout, for the answer', async () => {
    const asked = async (id: string) => {
      await until(async () => (await svc.inject({ url: `/tasks/${id}` })).json().progress?.pending?.length === 1);
      return (await svc.inject({ url: `/tasks/${id}` })).json();
    };
    const answer = (id: string, requestId: string, body: object) => svc.inject({ method: 'POST', url: `/tasks/${id}/approvals/${requestId}`, payload: body });

    const allowed = await run('ACP-PERMISSION', 'scripted-acp-ask');
    const waiting = await asked(allowed);
    // The agent's process waits with its session: the task runs on, and says what it waits for.
    expect(waiting).toMatchObject({ status: 'running', pause: null, progress: { reason: 'approval' } });
    const [request] = waiting.progress.pending;
    expect(request).toMatchObject({ kind: 'approval', toolName: 'Delete everything', input: { path: '/' }, requestId: expect.stringMatching(/^apr_/) });
    // Longer than the agent's stall timeout (4 s here): waiting for the caller is no stall.
    await new Promise((r) => setTimeout(r, 4500));
    const given = await answer(allowed, request.requestId, { decision: 'allow' });
    expect(given.statusCode, given.body).toBe(200);
    expect(await taskEnd(svc, allowed)).toMatchObject({ status: 'completed', summary: 'permission: yes' });
    const events = (await storedEvents(svc, allowed)).filter((e) => e.type.startsWith('approval.'));
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['approval.requested', { requestId: request.requestId, toolCallId: 'p1', toolName: 'Delete everything', input: { path: '/' } }],
      ['approval.answered', { requestId: request.requestId, decision: 'allow', by: 'caller' }],
    ]);
    const late = await answer(allowed, request.requestId, { decision: 'deny' });
    expect([late.statusCode, late.json().error.code]).toEqual([409, 'approval_answered']);

    const denied = await run('ACP-PERMISSION', 'scripted-acp-ask');
    expect((await answer(denied, (await asked(denied)).progress.pending[0].requestId, { decision: 'deny' })).statusCode).toBe(200);
    expect((await taskEnd(svc, denied)).summary).toBe('permission: no');

    const res = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({
        subagent_type: 'scripted-acp-ask',
        prompt: 'ACP-PERMISSION',
        context: { parentTaskId: 'T-acp', userId: 'u-acp' },
        options: { approvalTimeoutMs: 1000 },
      }),
    });
    const unanswered = res.json().id as string;
    expect((await taskEnd(svc, unanswered, { ms: 10_000 })).summary).toBe('permission: no');
    expect((await storedEvents(svc, unanswered)).find((e) => e.type === 'approval.answered')!.data).toMatchObject({ decision: 'deny', by: 'timeout' });
  });

  it('refuses file writes outside the workspace', async () => {
    const outside = path.join(dir, 'outside-target.txt');
    const task = await taskEnd(svc, await run(`ACP-OUTSIDE OUTSIDE-PATH=${outside}`));
    expect(task.summary).toBe(`${outside}: refused; ${path.join(svc.config.workspacesDir, 'T-acp')}/../escape.txt: refused`);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(path.join(svc.config.workspacesDir, 'escape.txt'))).toBe(false);
  });

  it('passes only the allowed variables of the service to the agent', async () => {
    const names = (await taskEnd(svc, await run('ACP-ENV'))).summary.split(',');
    expect(names).toContain('ACP_TEST_PASSED');
    expect(names).not.toContain('ACP_TEST_HIDDEN');
    expect(names).not.toContain('OPENAI_API_KEY');
  });

  it('an agent cannot choose a host-side program or variable: PATH, BASH_ENV, LD_PRELOAD stay out', async () => {
    // The agent plants programs named bash and bwrap in the workspace and asks for a terminal whose
    // PATH puts them first: the service must start its launcher by absolute path with its own
    // environment, and set only harmless variables for the command.
    const marker = path.join(dir, 'host-marker.txt');
    const task = await taskEnd(svc, await run(`ACP-EVIL-PATH MARKER=${marker}`, 'scripted-acp', 'T-acp-evil'));
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    expect(existsSync(path.join(svc.config.workspacesDir, 'T-acp-evil', '.evil', 'bwrap'))).toBe(true);
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
    expect(task.summary).toBe('hi from /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  });

  it('cancel sends session/cancel: the agent stops and the task ends aborted/cancelled', async () => {
    const id = await run('ACP-HANG');
    await saidSomething(id);
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    const task = await taskEnd(svc, id);
    expect(task).toMatchObject({ status: 'aborted', error: { code: 'cancelled' }, summary: 'thinking...' });
  });

  it('an agent that ignores the cancel is killed after the grace', async () => {
    const id = await run('ACP-HANG-DEAF');
    await saidSomething(id);
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    expect((await taskEnd(svc, id)).status).toBe('aborted');
  });

  it('an agent that crashes ends the task error/agent_crashed with its stderr', async () => {
    const task = await taskEnd(svc, await run('ACP-CRASH'));
    expect(task.status).toBe('error');
    expect(task.error.code).toBe('agent_crashed');
    expect(task.error.message).toContain('code 3');
    expect(task.error.message).toContain('fatal: the scripted agent crashed on purpose');
  });

  it('an agent that speaks garbage, or goes silent, ends the task with an error', async () => {
    const task = await taskEnd(svc, await run('ACP-GARBAGE'));
    expect(task.status).toBe('error');
    expect(['agent_protocol_error', 'agent_stalled']).toContain(task.error.code);
  });

  it('an agent that keeps writing after its answer ends its task completed, and the process lives on', async () => {
    // Its lines arrive after the connection's stream was cancelled at the turn's end: they were
    // once enqueued on the closed stream, an exception thrown out of an event handler.
    const thrown: unknown[] = [];
    const seen = (err: unknown) => thrown.push(err);
    process.on('uncaughtException', seen);
    try {
      const task = await taskEnd(svc, await run('ACP-CHATTY'));
      expect(task).toMatchObject({ status: 'completed', stopReason: 'text' });
      expect(task.summary).toBe('chatty');
      // Past the agent's last burst.
      await new Promise((r) => setTimeout(r, 300));
      expect(thrown.map(String)).toEqual([]);
      expect((await svc.inject({ url: '/healthz' })).statusCode).toBe(200);
    } finally {
      process.off('uncaughtException', seen);
    }
  });

  it('an agent command that cannot be run ends the task error/agent_failed', async () => {
    const task = await taskEnd(svc, await run('anything', 'missing-agent'));
    expect(task.status).toBe('error');
    expect(task.error.code).toBe('agent_failed');
    expect(task.error.message).toContain('/nonexistent/acp-agent');
  });

  it('refuses what an external agent cannot do: task_id, outputSchema, steering', async () => {
    const bad = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({
        subagent_type: 'scripted-acp',
        prompt: 'x',
        context: { parentTaskId: 'T-acp', userId: 'u' },
        options: { outputSchema: { type: 'object' } },
      }),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details[0].field).toBe('body.options.outputSchema');
    const id = await run('ACP-HANG');
    const steer = await svc.inject({ method: 'POST', url: `/tasks/${id}/messages`, payload: { prompt: 'hey' } });
    expect(steer.statusCode).toBe(400);
    expect(steer.json().error.code).toBe('not_steerable');
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
    await taskEnd(svc, id);
  });
});
