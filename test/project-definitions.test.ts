import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';

/** Definitions as the seeds write them: project instructions (AGENTS.md), path rules, the plan agent. */
let svc: TestService;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-defs-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'terse.md'),
    '---\nname: terse\ndescription: Works without the project notes\nomitProjectInstructions: true\n---\nBe brief.\n',
  );
  svc = await startService({ dir });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspace = (parent: string) => path.join(svc.config.workspacesDir, parent);
const run = async (body: Record<string, unknown>) => taskEnd(svc, (await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody(body) })).json().id);
/** The model's requests of the task whose prompt holds `marker`. */
const requestsOf = (marker: string) =>
  svc.model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
const systemOf = (marker: string) => String(requestsOf(marker)[0].body.messages.find((m) => m.role === 'system')?.content);
const resultsSeen = (marker: string) =>
  requestsOf(marker)
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('project instructions (AGENTS.md)', () => {
  it("puts the workspace root AGENTS.md in a general task's system prompt, not in explore's or a definition that omits it", async () => {
    mkdirSync(workspace('T-agents'), { recursive: true });
    writeFileSync(path.join(workspace('T-agents'), 'AGENTS.md'), '# Conventions\nUse tabs. MARKER-AGENTS-MD\n');
    for (const type of ['general', 'explore', 'terse']) {
      svc.model.script(`AGENTS-${type}`, [{ text: 'ok' }]);
      await run({ subagent_type: type, prompt: `AGENTS-${type}`, context: { parentTaskId: 'T-agents', userId: 'u' } });
    }
    expect(systemOf('AGENTS-general')).toContain('<project-instructions file="AGENTS.md">');
    expect(systemOf('AGENTS-general')).toContain('Use tabs. MARKER-AGENTS-MD');
    expect(systemOf('AGENTS-explore')).not.toContain('MARKER-AGENTS-MD');
    expect(systemOf('AGENTS-terse')).not.toContain('MARKER-AGENTS-MD');
    expect((await svc.inject({ url: '/agents' })).json().agents.find((a: { type: string }) => a.type === 'terse')).toMatchObject({
      omitProjectInstructions: true,
    });
  });

  it("prefers the working folder's AGENTS.md, cuts a long one at 32 KiB, and reads none through a link leading out", async () => {
    const ws = workspace('T-agents-2');
    mkdirSync(path.join(ws, 'pkg'), { recursive: true });
    writeFileSync(path.join(ws, 'AGENTS.md'), 'ROOT-NOTES');
    writeFileSync(path.join(ws, 'pkg', 'AGENTS.md'), `PKG-NOTES ${'x'.repeat(40 * 1024)} TAIL-NOT-SHOWN`);
    svc.model.script('AGENTS-CWD', [{ text: 'ok' }]);
    await run({ prompt: 'AGENTS-CWD', context: { parentTaskId: 'T-agents-2', userId: 'u' }, options: { cwd: 'pkg' } });
    const system = systemOf('AGENTS-CWD');
    expect(system).toContain('<project-instructions file="pkg/AGENTS.md">');
    expect(system).not.toContain('ROOT-NOTES');
    expect(system).not.toContain('TAIL-NOT-SHOWN');
    expect(system).toContain('only its first 32 KiB are shown');

    const secret = path.join(dir, 'host-secret.txt');
    writeFileSync(secret, 'HOST-SECRET-NOTES');
    mkdirSync(workspace('T-agents-3'), { recursive: true });
    symlinkSync(secret, path.join(workspace('T-agents-3'), 'AGENTS.md'));
    svc.model.script('AGENTS-LINK', [{ text: 'ok' }]);
    expect(await run({ prompt: 'AGENTS-LINK', context: { parentTaskId: 'T-agents-3', userId: 'u' } })).toMatchObject({ status: 'completed' });
    expect(systemOf('AGENTS-LINK')).not.toContain('HOST-SECRET-NOTES');
  });
});

describe('path rules of the file tools', () => {
  it('matches the path after it is resolved: allowed under docs/, refused elsewhere and through docs/..', async () => {
    const ws = workspace('T-paths');
    mkdirSync(path.join(ws, 'docs'), { recursive: true });
    writeFileSync(path.join(ws, 'docs', 'guide.md'), 'GUIDE-TEXT');
    writeFileSync(path.join(ws, 'secret.txt'), 'SECRET-TEXT');
    svc.model.script('PATHS', [
      {
        toolCalls: [
          { name: 'read_file', args: { path: 'docs/guide.md' } },
          { name: 'read_file', args: { path: 'secret.txt' } },
          { name: 'read_file', args: { path: 'docs/../secret.txt' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'read', paths: [] } }] },
    ]);
    const options = { permissions: { read_file: 'deny', 'read_file(docs/**)': 'allow' } };
    expect(await run({ prompt: 'PATHS', context: { parentTaskId: 'T-paths', userId: 'u' }, options })).toMatchObject({ status: 'completed' });
    const [guide, secret, dotdot] = resultsSeen('PATHS');
    expect(guide).toContain('GUIDE-TEXT');
    expect(secret).toBe('denied by the permission rule "read_file"');
    expect(dotdot).toBe('denied by the permission rule "read_file"');
  });

  it('refuses a path glob that cannot match inside the workspace', async () => {
    const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ options: { permissions: { 'write_file(../*)': 'allow' } } }) });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'invalid_request', details: [{ field: 'body.options.permissions.write_file(../*)' }] });
  });
});

describe('the built-in plan agent', () => {
  it('reads the workspace and writes under plans/ only, not through ../ nor through a link out of plans/', async () => {
    const ws = workspace('T-plan');
    mkdirSync(path.join(ws, 'src'), { recursive: true });
    writeFileSync(path.join(ws, 'src', 'main.ts'), 'ORIGINAL');
    mkdirSync(path.join(ws, 'plans'), { recursive: true });
    symlinkSync('../src', path.join(ws, 'plans', 'code'));
    svc.model.script('PLAN-IT', [
      { toolCalls: [{ name: 'read_file', args: { path: 'src/main.ts' } }] },
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'plans/refactor.md', content: '# Plan\n1. Do it' } },
          { name: 'write_file', args: { path: 'src/main.ts', content: 'CHANGED' } },
          { name: 'write_file', args: { path: 'plans/../src/main.ts', content: 'CHANGED' } },
          { name: 'edit_file', args: { path: 'plans/code/main.ts', oldString: 'ORIGINAL', newString: 'CHANGED' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'planned', paths: ['plans/refactor.md'] } }] },
    ]);
    const done = await run({ subagent_type: 'plan', prompt: 'PLAN-IT', context: { parentTaskId: 'T-plan', userId: 'u' } });
    expect(done).toMatchObject({ status: 'completed', summary: 'planned' });
    expect(readFileSync(path.join(ws, 'plans', 'refactor.md'), 'utf8')).toBe('# Plan\n1. Do it');
    expect(readFileSync(path.join(ws, 'src', 'main.ts'), 'utf8')).toBe('ORIGINAL');
    const results = resultsSeen('PLAN-IT');
    expect(results[0]).toContain('ORIGINAL');
    expect(results.slice(2)).toEqual([
      'denied by the permission rule "write_file"',
      'denied by the permission rule "write_file"',
      expect.stringContaining('"plans/code/main.ts" leads through a link to "src/main.ts", where edit_file is denied by the permission rule "edit_file"'),
    ]);
    expect(requestsOf('PLAN-IT')[0].body.tools!.map((t) => t.function.name)).not.toContain('bash');
    expect(existsSync(path.join(ws, 'src', 'main.ts'))).toBe(true);
  });
});
