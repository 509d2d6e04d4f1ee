import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * Nesting: a definition with `maxDepth` gives its model a `task` tool that starts child tasks
 * through the service. One slot only here: a parent waiting for its child must not hold it.
 */
let svc: TestService;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-nesting-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Splits work among subagents\nmaxDepth: 1\n---\nDelegate.\n');
  svc = await startService({ dir, env: { MAX_CONCURRENT_TASKS: '1' } });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const toolResult = (key: string) =>
  svc.model.requests
    .filter((r) => JSON.stringify(r.body.messages).includes(key))
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content))
    .join('\n');

describe('nested tasks (maxDepth)', () => {
  it('starts a child through the task tool, one level deeper, with one slot; past the limit the tool says so', async () => {
    svc.model.script('NEST-PARENT', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Count words', prompt: 'NEST-CHILD: count the words' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: `child said: ${JSON.parse(ctx.toolResults[0].content).summary}`, paths: [] } }] },
    );
    svc.model.script('NEST-CHILD', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'task', args: { subagent_type: 'explore', description: 'Deeper', prompt: 'NEST-GRANDCHILD' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: `42 words (${ctx.toolResults[0].content})`, paths: [] } }] },
    );
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ subagent_type: 'lead', prompt: 'NEST-PARENT', context: { parentTaskId: 'T-nest', userId: 'u-nest', toolCallId: 'call_root' } }),
    });
    const parent = JSON.parse(res.body.trim());
    expect(parent).toMatchObject({ status: 'completed', depth: 0, parentTask: null });
    expect(parent.summary).toBe('child said: 42 words (Agent depth limit reached. Solve the task yourself.)');

    const { tasks } = (await svc.inject({ url: '/tasks?parentTaskId=T-nest' })).json();
    const child = tasks.find((t: { id: string }) => t.id !== parent.id);
    expect(tasks).toHaveLength(2);
    expect(child).toMatchObject({
      subagent_type: 'general',
      status: 'completed',
      depth: 1,
      parentTask: parent.id,
      context: { parentTaskId: 'T-nest', userId: 'u-nest' },
    });
    expect(child.context.toolCallId).not.toBe('call_root');
    // Its own record and usage; the parent's model read the child's compact output.
    expect(child.usage.inputTokens).toBeGreaterThan(0);
    expect(JSON.parse(toolResult('NEST-PARENT'))).toEqual({ task_id: child.id, status: 'completed', summary: child.summary, output: null, artifacts: [] });
    // The tool was offered at every depth; a definition without maxDepth has none.
    const offered = (key: string) => svc.model.requests.find((r) => JSON.stringify(r.body.messages).includes(key))!.body.tools!.map((t) => t.function.name);
    expect(offered('NEST-PARENT')).toContain('task');
    expect(offered('NEST-CHILD')).toContain('task');
    svc.model.script('NOT-NESTED', [{ text: 'alone' }]);
    await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'NOT-NESTED' }) });
    expect(offered('NOT-NESTED')).not.toContain('task');
    expect((await svc.inject({ url: '/agents' })).json().agents.find((a: { type: string }) => a.type === 'lead')).toMatchObject({ maxDepth: 1 });
  });

  it('cancels the child it waits for when the parent is cancelled', async () => {
    svc.model.script('NEST-CANCEL', [{ toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Slow', prompt: 'NEST-SLOW' } }] }]);
    svc.model.script('NEST-SLOW', [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 30' } }] }]);
    const parent = (
      await svc.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: 'lead', prompt: 'NEST-CANCEL', context: { parentTaskId: 'T-nest-c', userId: 'u' } }),
      })
    ).json();
    let childId = '';
    await until(async () => {
      const { tasks } = (await svc.inject({ url: '/tasks?parentTaskId=T-nest-c' })).json();
      childId = tasks.find((t: { parentTask: string | null; status: string }) => t.parentTask === parent.id && t.status === 'running')?.id ?? '';
      return childId !== '';
    });
    // The child runs its command.
    await until(async () => (await svc.inject({ url: `/tasks/${childId}` })).json().progress?.tool === 'bash');
    expect((await svc.inject({ method: 'POST', url: `/tasks/${parent.id}/cancel` })).statusCode).toBe(202);
    expect(await taskEnd(svc, parent.id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    expect(await taskEnd(svc, childId)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
  });
});
