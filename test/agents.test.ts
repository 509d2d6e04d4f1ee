import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';

let svc: TestService;
let logs: string[] = [];
const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-agents-'));

function agentFile(name: string, text: string) {
  writeFileSync(path.join(dir, 'agents', name), text);
}

beforeAll(async () => {
  mkdirSync(path.join(dir, 'agents'), { recursive: true });
  agentFile(
    'reviewer.md',
    `---
name: reviewer
description: Reviews code in the workspace and writes review.md
model: small
tools: read_file, grep, glob, write_file, task, confirm
maxSteps: 7
temperature: 0.2
color: purple
---
You are a careful code reviewer. Write your findings to review.md.
`,
  );
  agentFile(
    'writer.md',
    `---
name: writer
description: Writes documents
model: my-writer-model
disallowedTools: [bash, ask_user_question]
---
Write clearly.
`,
  );
  agentFile('general.md', `---\nname: general\ndescription: An operator's own general agent\nmodel: inherit\nmaxSteps: 12\n---\nHouse rules apply.\n`);
  agentFile('bad-tool.md', `---\nname: badtool\ndescription: x\ntools: [read_file, teleport]\n---\nbody\n`);
  agentFile('bad-steps.md', `---\nname: badsteps\ndescription: x\nmaxSteps: many\n---\n`);
  agentFile('no-description.md', `---\nname: nodesc\n---\nbody\n`);
  agentFile('bad-yaml.md', `---\nname: [unclosed\n---\nbody\n`);
  agentFile('shell.md', `---\nname: shell\ndescription: try to replace the shell subtask\n---\n`);
  agentFile('notes.txt', 'not a definition');
  const lines: string[] = [];
  logs = lines;
  svc = await startService({
    dir,
    env: { SMALL_MODEL: 'tiny-model' },
    logger: pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }),
  });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('AGENTS_DIR definitions', () => {
  it('loads valid files, filters tools in layers and resolves models', async () => {
    const { agents } = (await svc.inject({ url: '/agents' })).json();
    const byType = Object.fromEntries(agents.map((a: { type: string }) => [a.type, a]));
    expect(Object.keys(byType).sort()).toEqual(['explore', 'general', 'plan', 'reviewer', 'shell', 'writer']);
    expect(byType.reviewer).toEqual({
      type: 'reviewer',
      kind: 'model',
      description: 'Reviews code in the workspace and writes review.md',
      model: 'tiny-model',
      maxSteps: 7,
      tools: ['read_file', 'grep', 'glob', 'write_file', 'complete'],
      // No compactionModel in its front matter: `small`, which is SMALL_MODEL.
      compactionModel: 'tiny-model',
      compactAtTokens: 100000,
    });
    expect(byType.writer.model).toBe('my-writer-model');
    expect(byType.writer.tools.sort()).toEqual(['complete', 'edit_file', 'glob', 'grep', 'list_files', 'read_file', 'write_file']);
    // A file overrides the built-in of the same type.
    expect(byType.general).toMatchObject({ description: "An operator's own general agent", maxSteps: 12, model: 'gpt-4.1-mini' });
    expect(byType.shell.model).toBeNull();
  });

  it('reports each broken file at start with the file, the field and why, and skips it', () => {
    const errors = logs.map((l) => JSON.parse(l)).filter((l) => l.level === 50 && String(l.msg).startsWith('skipped subagent definition'));
    const byFile = Object.fromEntries(errors.map((e) => [path.basename(e.file), e]));
    expect(Object.keys(byFile).sort()).toEqual(['bad-steps.md', 'bad-tool.md', 'bad-yaml.md', 'no-description.md', 'shell.md']);
    expect(byFile['bad-tool.md']).toMatchObject({ field: 'tools' });
    expect(byFile['bad-tool.md'].message).toContain('unknown tool "teleport"');
    expect(byFile['bad-steps.md']).toMatchObject({ field: 'maxSteps' });
    expect(byFile['no-description.md']).toMatchObject({ field: 'description' });
    expect(byFile['shell.md'].message).toContain('reserved');
  });

  it('runs a custom definition with its instructions, tools, model and temperature', async () => {
    svc.model.script('REVIEW-RUN', [{ toolCalls: [{ name: 'complete', args: { summary: 'reviewed', paths: [] } }] }]);
    const out = (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ subagent_type: 'reviewer', prompt: 'REVIEW-RUN' }) })).json();
    expect(out).toMatchObject({ status: 'completed', model: 'tiny-model', subagent_type: 'reviewer' });
    const req = svc.model.requests.find((r) => JSON.stringify(r.body).includes('REVIEW-RUN'))!;
    expect(req.body.model).toBe('tiny-model');
    expect(req.body.temperature).toBe(0.2);
    expect(String(req.body.messages[0].content)).toContain('You are a careful code reviewer.');
    expect(req.body.tools!.map((t) => t.function.name).sort()).toEqual(['complete', 'glob', 'grep', 'read_file', 'write_file']);
  });

  it('names the resolved model in task.started', async () => {
    svc.model.script('STARTED-MODEL', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const out = (await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ subagent_type: 'writer', prompt: 'STARTED-MODEL' }) })).json();
    const started = (await storedEvents(svc, out.id)).find((e) => e.type === 'task.started')!;
    expect(started.data.model).toBe('my-writer-model');
  });

  it('lets options.maxSteps lower a custom limit but never raise it', async () => {
    const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ subagent_type: 'reviewer', options: { maxSteps: 8 } }) });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([{ field: 'body.options.maxSteps', message: 'may only lower the limit of "reviewer" (7)' }]);
  });

  it('lists the loaded types in unknown_subagent_type', async () => {
    const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ subagent_type: 'badtool' }) });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toContain('reviewer');
    expect(res.json().error.message).not.toContain('badtool,');
  });
});
