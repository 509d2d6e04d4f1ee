import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * A child never gets more than its parent: permission rules (bash per simple command), the tool
 * list, the working folder and the budget hold down the tree the `task` tool starts.
 */
let svc: TestService;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-limits-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Splits work among subagents\nmaxDepth: 2\n---\nDelegate.\n');
  const repo = path.resolve(import.meta.dirname, '..');
  const acpArgs = JSON.stringify(['--import', path.join(repo, 'node_modules/tsx/dist/loader.mjs'), path.join(repo, 'scripted-model/acp-agent.ts')]);
  writeFileSync(
    path.join(dir, 'agents', 'coder.md'),
    `---\nname: coder\ndescription: An external ACP agent\nkind: acp\ncommand: ${process.execPath}\nargs: ${acpArgs}\n---\n`,
  );
  svc = await startService({ dir });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspace = (parent: string) => path.join(svc.config.workspacesDir, parent);
const submit = async (body: Record<string, unknown>) => (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody(body) })).json();
const task = async (id: string) => (await svc.inject({ url: `/tasks/${id}` })).json();
const children = async (parentTaskId: string, parent: string) =>
  (await svc.inject({ url: `/tasks?parentTaskId=${parentTaskId}` })).json().tasks.filter((t: { parentTask: string | null }) => t.parentTask === parent);
/** The model's requests of the task whose prompt holds `marker` (not its parent's, whose calls name it). */
const requestsOf = (marker: string) =>
  svc.model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
/** The tool names the model was offered in its first request for `marker`. */
const offered = (marker: string) => requestsOf(marker)[0].body.tools!.map((t) => t.function.name);
/** Every tool result the model read for `marker` (its last request holds the whole conversation). */
const resultsSeen = (marker: string) =>
  requestsOf(marker)
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('bash(<glob>) rules per simple command', () => {
  it("asks for a line that hides a command after an allowed prefix, and runs the allowed command alone unasked (the README's rules)", async () => {
    const rules = { bash: 'ask', 'bash(git status*)': 'allow' };
    svc.model.script('PR-ALLOWED', [
      { toolCalls: [{ name: 'bash', args: { command: 'git status 2>/dev/null; true' } }] },
      { toolCalls: [{ name: 'bash', args: { command: 'git status' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'looked', paths: [] } }] },
    ]);
    // `true` is not allowed: the first line is asked. Allowing it lets the rest run unasked.
    const first = await submit({ prompt: 'PR-ALLOWED', context: { parentTaskId: 'T-pr-a', userId: 'u' }, options: { permissions: rules } });
    await until(async () => (await task(first.id)).status === 'paused');
    const asked = await task(first.id);
    expect(asked.pause).toMatchObject({ reason: 'approval', input: { command: 'git status 2>/dev/null; true' }, pending: [expect.anything()] });
    await svc.inject({ method: 'POST', url: `/tasks/${first.id}/approvals/${asked.pause.requestId}`, payload: { decision: 'allow' } });
    expect(await taskEnd(svc, first.id)).toMatchObject({ status: 'completed', summary: 'looked' });

    for (const [i, line] of [
      'git status; touch X',
      'git status && touch X',
      'git status || touch X',
      'git status\ntouch X',
      'git status | touch X',
      'git status $(touch X)',
    ].entries()) {
      svc.model.script(`PR-HIDDEN-${i}`, [{ toolCalls: [{ name: 'bash', args: { command: line } }] }]);
      const t = await submit({ prompt: `PR-HIDDEN-${i}`, context: { parentTaskId: `T-pr-h${i}`, userId: 'u' }, options: { permissions: rules } });
      await until(async () => (await task(t.id)).status === 'paused');
      expect((await task(t.id)).pause, line).toMatchObject({ reason: 'approval', toolName: 'bash', input: { command: line } });
      expect(existsSync(path.join(workspace(`T-pr-h${i}`), 'X')), line).toBe(false);
      await svc.inject({ method: 'POST', url: `/tasks/${t.id}/cancel` });
    }
  });

  it('denies rm however it is spelled, and runs the other commands', async () => {
    const spellings = [
      "r''m victim.txt",
      '/bin/rm victim.txt',
      'command rm victim.txt',
      "bash -c 'rm victim.txt'",
      'X=1 rm victim.txt',
      'rm\tvictim.txt',
      'find . -name victim.txt -delete',
      'true && rm victim.txt',
      'ls | xargs rm',
    ];
    svc.model.script('PR-RM', [
      ...spellings.map((command) => ({ toolCalls: [{ name: 'bash', args: { command } }] })),
      { toolCalls: [{ name: 'bash', args: { command: 'echo kept > kept.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] },
    ]);
    mkdirSync(workspace('T-pr-rm'), { recursive: true });
    writeFileSync(path.join(workspace('T-pr-rm'), 'victim.txt'), 'keep me');
    const t = await submit({ prompt: 'PR-RM', context: { parentTaskId: 'T-pr-rm', userId: 'u' }, options: { permissions: { 'bash(rm *)': 'deny' } } });
    expect(await taskEnd(svc, t.id)).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workspace('T-pr-rm'), 'victim.txt'))).toBe(true);
    expect(existsSync(path.join(workspace('T-pr-rm'), 'kept.txt'))).toBe(true);
    expect(resultsSeen('PR-RM').filter((r) => r.includes('denied by the permission rule "bash(rm *)"'))).toHaveLength(spellings.length);
  });
});

describe("children within their parent's limits", () => {
  it('offers no task tool to a task whose options.tools leave it out, and no shell child where bash is denied', async () => {
    svc.model.script('NL-ONLY', [{ text: 'nothing to do' }]);
    await taskEnd(
      svc,
      (await submit({ subagent_type: 'lead', prompt: 'NL-ONLY', context: { parentTaskId: 'T-nl-only', userId: 'u' }, options: { tools: ['read_file'] } })).id,
    );
    expect(offered('NL-ONLY')).toEqual(['read_file', 'complete']);

    mkdirSync(workspace('T-nl-deny'), { recursive: true });
    writeFileSync(path.join(workspace('T-nl-deny'), 'victim.txt'), 'keep me');
    svc.model.script('NL-SHELL', [
      { toolCalls: [{ name: 'task', args: { subagent_type: 'shell', description: 'Remove it', prompt: 'rm victim.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] },
    ]);
    const lead = await submit({
      subagent_type: 'lead',
      prompt: 'NL-SHELL',
      context: { parentTaskId: 'T-nl-deny', userId: 'u' },
      options: { permissions: { bash: 'deny' } },
    });
    expect(await taskEnd(svc, lead.id)).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workspace('T-nl-deny'), 'victim.txt'))).toBe(true);
    expect(await children('T-nl-deny', lead.id)).toEqual([]);
    expect(resultsSeen('NL-SHELL')[0]).toMatch(/^Invalid input for tool task/);
  });

  it('offers an ACP agent as a child only to a task whose chain has no rule or tool list: its own tools obey none', async () => {
    svc.model.script('NL-ACP-FREE', [{ text: 'ok' }]);
    svc.model.script('NL-ACP-RULED', [{ text: 'ok' }]);
    await taskEnd(svc, (await submit({ subagent_type: 'lead', prompt: 'NL-ACP-FREE', context: { parentTaskId: 'T-nl-acp', userId: 'u' } })).id);
    const rules = { permissions: { write_file: 'deny' } };
    await taskEnd(
      svc,
      (await submit({ subagent_type: 'lead', prompt: 'NL-ACP-RULED', context: { parentTaskId: 'T-nl-acp', userId: 'u' }, options: rules })).id,
    );
    const types = (marker: string) => {
      const tool = requestsOf(marker)[0].body.tools!.find((t) => t.function.name === 'task') as unknown as {
        function: { parameters: { properties: { subagent_type: { enum: string[] } } } };
      };
      return tool.function.parameters.properties.subagent_type.enum;
    };
    expect(types('NL-ACP-FREE')).toContain('coder');
    expect(types('NL-ACP-RULED')).not.toContain('coder');
    expect(types('NL-ACP-RULED')).toContain('general');
  });

  it("decides a shell child's command by its parent's bash rules: denied, asked, or run unasked", async () => {
    mkdirSync(workspace('T-nl-sh'), { recursive: true });
    writeFileSync(path.join(workspace('T-nl-sh'), 'victim.txt'), 'keep me');
    svc.model.script('NL-SH-RULES', [
      { toolCalls: [{ name: 'task', args: { subagent_type: 'shell', description: 'Remove it', prompt: 'cd . && rm victim.txt' } }] },
      { toolCalls: [{ name: 'task', args: { subagent_type: 'shell', description: 'Say hi', prompt: 'echo hi > hi.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] },
    ]);
    const rules = { 'bash(rm *)': 'deny', 'bash(echo *)': 'allow', 'bash(> hi.txt)': 'allow', bash: 'ask' };
    const lead = await submit({
      subagent_type: 'lead',
      prompt: 'NL-SH-RULES',
      context: { parentTaskId: 'T-nl-sh', userId: 'u' },
      options: { permissions: rules },
    });
    expect(await taskEnd(svc, lead.id)).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workspace('T-nl-sh'), 'victim.txt'))).toBe(true);
    expect(existsSync(path.join(workspace('T-nl-sh'), 'hi.txt'))).toBe(true);
    expect(resultsSeen('NL-SH-RULES').some((r) => r.includes('denied by the permission rule "bash(rm *)"'))).toBe(true);
    expect(await children('T-nl-sh', lead.id)).toHaveLength(1);
  });

  it("holds a model child to its parent's permission rules, tools and folder", async () => {
    mkdirSync(path.join(workspace('T-nl-model'), 'sub'), { recursive: true });
    writeFileSync(path.join(workspace('T-nl-model'), 'victim.txt'), 'keep me');
    svc.model.script('NL-PARENT', [
      { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Clean up', prompt: 'NL-CHILD: clean up' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'delegated', paths: [] } }] },
    ]);
    svc.model.script('NL-CHILD', [
      { toolCalls: [{ name: 'bash', args: { command: 'rm ../victim.txt; rm victim.txt' } }] },
      { toolCalls: [{ name: 'bash', args: { command: 'pwd > where.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'cleaned', paths: [] } }] },
    ]);
    const options = { permissions: { 'bash(rm *)': 'deny' }, tools: ['bash', 'read_file', 'task'], cwd: 'sub' };
    const lead = await submit({ subagent_type: 'lead', prompt: 'NL-PARENT', context: { parentTaskId: 'T-nl-model', userId: 'u' }, options });
    expect(await taskEnd(svc, lead.id)).toMatchObject({ status: 'completed' });
    expect(existsSync(path.join(workspace('T-nl-model'), 'victim.txt'))).toBe(true);
    expect(resultsSeen('NL-CHILD').some((r) => r.includes('denied by the permission rule "bash(rm *)"'))).toBe(true);
    // Its parent's tools (its own definition has more), and its parent's folder.
    expect(offered('NL-CHILD').sort()).toEqual(['bash', 'complete', 'read_file', 'task']);
    expect(existsSync(path.join(workspace('T-nl-model'), 'sub', 'where.txt'))).toBe(true);
  });

  it("counts a child's spend toward its parent's budget: the child pauses at it, then the parent", async () => {
    svc.model.script('NL-BUDGET', [
      { toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Spend', prompt: 'NL-SPENDER' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'over', paths: [] } }] },
    ]);
    svc.model.script('NL-SPENDER', (ctx) =>
      ctx.turn < 5 ? { toolCalls: [{ name: 'list_files', args: {} }] } : { toolCalls: [{ name: 'complete', args: { summary: 'spent', paths: [] } }] },
    );
    // Each model call is 120 tokens: the parent's first call leaves 10 of 130.
    const lead = await submit({
      subagent_type: 'lead',
      prompt: 'NL-BUDGET',
      context: { parentTaskId: 'T-nl-budget', userId: 'u' },
      options: { budget: { maxTokens: 130 } },
    });
    await until(async () => (await task(lead.id)).status === 'paused');
    const [child] = await children('T-nl-budget', lead.id);
    expect(child).toMatchObject({ status: 'paused', pause: { reason: 'budget', budget: 'task', task: lead.id, measure: 'tokens', limit: 130, spent: 240 } });
    expect(child.usage.totalTokens).toBe(120);
    expect((await task(lead.id)).pause).toMatchObject({ reason: 'budget', budget: 'task', measure: 'tokens', limit: 130, spent: 240 });
    // Resuming the child is refused while its parent's budget stands.
    expect((await svc.inject({ method: 'POST', url: `/tasks/${child.id}/resume` })).json().error.code).toBe('budget_exceeded');
  });
});
