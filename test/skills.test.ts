import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';

/** Skills (Agent Skills format) preloaded by a definition: prompt, folders, GET /skills, options.skills. */
let dir: string;
let model: ScriptedModel;
let svc: TestService;

const bwrapMissing = (() => {
  const r = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true'], { encoding: 'utf8', timeout: 5000 });
  return r.error || r.status !== 0 ? `bubblewrap cannot run here (${r.error?.message ?? r.stderr.trim()})` : null;
})();
if (bwrapMissing) console.warn(`[skills tests] the sandbox part is skipped: ${bwrapMissing}`);

function skill(name: string, frontMatter: string, body: string, files: Record<string, string> = {}) {
  const folder = path.join(dir, 'skills', name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'SKILL.md'), `---\n${frontMatter}\n---\n${body}\n`);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
    writeFileSync(path.join(folder, file), text);
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-skills-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'host-secret.txt'), 'HOST-SECRET');
  skill(
    'release-notes',
    'name: release-notes\ndescription: Writes release notes from the changelog. Use when asked for notes.',
    'SKILL-BODY-MARKER: group changes by kind.',
    {
      'scripts/stamp.sh': '#!/bin/sh\necho "stamped by the skill"\n',
      'reference/style.md': 'STYLE-GUIDE-TEXT',
    },
  );
  chmodSync(path.join(dir, 'skills', 'release-notes', 'scripts', 'stamp.sh'), 0o755);
  // A link inside a skill's folder that leads out of it, and a FIFO.
  symlinkSync(path.join(dir, 'host-secret.txt'), path.join(dir, 'skills', 'release-notes', 'leak.txt'));
  spawnSync('mkfifo', [path.join(dir, 'skills', 'release-notes', 'pipe')]);
  skill('big', 'name: big\ndescription: A long skill.', `BIG-START ${'b'.repeat(20 * 1024)} BIG-END`);
  skill('unused', 'name: unused\ndescription: Nobody preloads it.', 'UNUSED-BODY');
  // Skipped at start (logged): its name is not its folder's.
  skill('misnamed', 'name: other-name\ndescription: Wrong name.', 'MISNAMED');
  writeFileSync(path.join(dir, 'agents', 'writer.md'), '---\nname: writer\ndescription: Writes with skills\nskills: [release-notes, big]\n---\nYou write.\n');
  writeFileSync(path.join(dir, 'agents', 'keeper.md'), '---\nname: keeper\ndescription: Remembers\nmemory: user\n---\n');
  model = await startScriptedModel();
  svc = await startService({ dir, model });
});
afterAll(async () => {
  await svc?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspace = (parent: string) => path.join(svc.config.workspacesDir, parent);
const run = async (s: TestService, body: Record<string, unknown>) => {
  const res = await s.inject({ method: 'POST', url: '/tasks', payload: taskBody(body) });
  expect(res.statusCode, res.body).toBe(202);
  return taskEnd(s, res.json().id);
};
const requestsOf = (marker: string) => model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
const systemOf = (marker: string) => String(requestsOf(marker)[0].body.messages.find((m) => m.role === 'system')?.content);
const resultsSeen = (marker: string) =>
  requestsOf(marker)
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('skills', () => {
  it('lists the valid skills with the definitions that preload them, and the definition its skills', async () => {
    const res = await fetch(`${svc.url}/skills`);
    expect(res.status).toBe(200);
    const { skills } = (await res.json()) as { skills: Array<{ name: string; promptBytes: number }> };
    expect(skills.map((s) => s.name)).toEqual(['big', 'release-notes', 'unused']);
    expect(skills.find((s) => s.name === 'release-notes')).toMatchObject({
      description: 'Writes release notes from the changelog. Use when asked for notes.',
      agents: ['writer'],
      promptBytes: Buffer.byteLength('SKILL-BODY-MARKER: group changes by kind.'),
    });
    expect(skills.find((s) => s.name === 'big')!.promptBytes).toBe(16 * 1024);
    const { agents } = (await (await fetch(`${svc.url}/agents`)).json()) as { agents: Array<{ type: string }> };
    expect(agents.find((a) => a.type === 'writer')).toMatchObject({ skills: ['release-notes', 'big'] });
  });

  it("puts each skill's body in the first request, a long one cut at 16 KiB, and reads its files at .skills/<name>/", async () => {
    model.script('SKILL-FIRST', [
      {
        toolCalls: [
          { name: 'read_file', args: { path: '.skills/release-notes/reference/style.md' } },
          { name: 'list_files', args: { path: '.skills' } },
          { name: 'grep', args: { pattern: 'STYLE-GUIDE', path: '.skills/release-notes' } },
          { name: 'glob', args: { pattern: '.skills/release-notes/**/*.sh' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'read', paths: [] } }] },
    ]);
    const done = await run(svc, { subagent_type: 'writer', prompt: 'SKILL-FIRST', context: { parentTaskId: 'T-skills', userId: 'u' } });
    expect(done).toMatchObject({ status: 'completed' });
    const system = systemOf('SKILL-FIRST');
    expect(system).toContain('<skill name="release-notes" folder=".skills/release-notes/">');
    expect(system).toContain('SKILL-BODY-MARKER: group changes by kind.');
    expect(system).toContain('BIG-START');
    expect(system).not.toContain('BIG-END');
    expect(system).toContain('read .skills/big/SKILL.md for the rest');
    expect(system).not.toContain('UNUSED-BODY');
    const [style, listing, grep, glob] = resultsSeen('SKILL-FIRST');
    expect(style).toContain('STYLE-GUIDE-TEXT');
    expect(listing).toBe('big/\nrelease-notes/');
    expect(grep).toBe('.skills/release-notes/reference/style.md:1: STYLE-GUIDE-TEXT');
    expect(glob).toBe('.skills/release-notes/scripts/stamp.sh');
    // The task's start names its skills; nothing of the skill landed in the shared workspace.
    const started = (await storedEvents(svc, done.id)).find((e) => e.type === 'task.started')!;
    expect(started.data).toMatchObject({ skills: ['release-notes', 'big'] });
    expect(readdirSync(workspace('T-skills'))).toEqual([]);
  });

  it('refuses to write into a skill folder, and reads nothing through a link or FIFO in it', async () => {
    model.script('SKILL-WRITE', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: '.skills/release-notes/new.md', content: 'x' } },
          { name: 'edit_file', args: { path: '.skills/release-notes/SKILL.md', oldString: 'SKILL-BODY', newString: 'CHANGED' } },
          { name: 'read_file', args: { path: '.skills/release-notes/leak.txt' } },
          { name: 'read_file', args: { path: '.skills/release-notes/pipe' } },
          { name: 'read_file', args: { path: '.skills/release-notes/../unused/SKILL.md' } },
          { name: 'read_file', args: { path: '.skills/release-notes/../../../host-secret.txt' } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] },
    ]);
    const done = await run(svc, { subagent_type: 'writer', prompt: 'SKILL-WRITE', context: { parentTaskId: 'T-skills-2', userId: 'u' } });
    expect(done).toMatchObject({ status: 'completed' });
    const [write, edit, link, fifo, other, outside] = resultsSeen('SKILL-WRITE');
    expect(write).toContain('is in .skills/release-notes/, which is read-only');
    expect(edit).toContain('is in .skills/release-notes/, which is read-only');
    expect(link).toContain('leads outside the workspace through a symbolic link');
    expect(fifo).toContain('is a FIFO, not a regular file');
    expect(other).toContain('is not a skill of this task');
    expect(outside).toContain('outside the workspace');
    for (const r of [link, other, outside]) expect(r).not.toContain('HOST-SECRET');
    expect(readdirSync(path.join(dir, 'skills', 'release-notes')).sort()).toEqual(['SKILL.md', 'leak.txt', 'pipe', 'reference', 'scripts']);
  });

  it('narrows the skills with options.skills and refuses a skill the definition does not preload (400)', async () => {
    model.script('SKILL-NARROW', [{ text: 'ok' }]);
    await run(svc, { subagent_type: 'writer', prompt: 'SKILL-NARROW', context: { parentTaskId: 'T-skills-3', userId: 'u' }, options: { skills: ['big'] } });
    expect(systemOf('SKILL-NARROW')).toContain('BIG-START');
    expect(systemOf('SKILL-NARROW')).not.toContain('SKILL-BODY-MARKER');

    for (const skills of [['unused'], ['no-such-skill']]) {
      const res = await svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ subagent_type: 'writer', options: { skills } }) });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'invalid_request',
        details: [{ field: 'body.options.skills.0', message: `"${skills[0]}" is not a skill of "writer" (its skills: release-notes, big)` }],
      });
    }
  });

  it('gives a task without skills or memory no .skills nor .memory, even where the workspace has such folders', async () => {
    mkdirSync(path.join(workspace('T-skills-4'), '.memory'), { recursive: true });
    writeFileSync(path.join(workspace('T-skills-4'), '.memory', 'planted.md'), 'PLANTED');
    model.script('SKILL-NONE', [
      {
        toolCalls: [
          { name: 'read_file', args: { path: '.memory/planted.md' } },
          { name: 'write_file', args: { path: '.skills/x/y.md', content: 'x' } },
          { name: 'list_files', args: {} },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'tried', paths: [] } }] },
    ]);
    await run(svc, { prompt: 'SKILL-NONE', context: { parentTaskId: 'T-skills-4', userId: 'u' } });
    const [read, write, listing] = resultsSeen('SKILL-NONE');
    expect(read).toContain('this task has no memory');
    expect(write).toContain('is not a skill of this task (its skills: none)');
    expect(listing).toBe('(empty folder)');
  });

  it('refuses to start when a definition names an unknown skill, naming it', async () => {
    const other = mkdtempSync(path.join(tmpdir(), 'subagentd-skills-bad-'));
    mkdirSync(path.join(other, 'agents'));
    writeFileSync(path.join(other, 'agents', 'lost.md'), '---\nname: lost\ndescription: d\nskills: ghost\n---\n');
    try {
      await expect(startService({ dir: other, model })).rejects.toThrow(/subagent definition "lost": unknown skill "ghost"/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

describe.skipIf(bwrapMissing !== null)('skills in the sandbox (bubblewrap)', () => {
  let sbx: TestService;
  let sbxDir: string;
  beforeAll(async () => {
    sbxDir = mkdtempSync(path.join(tmpdir(), 'subagentd-skills-sbx-'));
    sbx = await startService({
      dir: sbxDir,
      model,
      env: { BASH_SANDBOX: 'bwrap', SKILLS_DIR: path.join(dir, 'skills'), AGENTS_DIR: path.join(dir, 'agents') },
    });
  });
  afterAll(async () => {
    await sbx?.close();
    rmSync(sbxDir, { recursive: true, force: true });
  });

  it("runs a skill's script while writing into its folder fails, and hides the other skills", async () => {
    model.script('SKILL-RUN', [
      {
        toolCalls: [
          {
            name: 'bash',
            args: {
              command:
                'sh .skills/release-notes/scripts/stamp.sh; ./.skills/release-notes/scripts/stamp.sh; ' +
                'echo x > .skills/release-notes/new.md; rm .skills/release-notes/SKILL.md; ' +
                `ls .skills; cat .skills/release-notes/leak.txt; ls ${path.join(dir, 'skills')} 2>&1; echo end`,
            },
          },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'ran', paths: [] } }] },
    ]);
    const done = await run(sbx, { subagent_type: 'writer', prompt: 'SKILL-RUN', context: { parentTaskId: 'T-skills-run', userId: 'u' } });
    expect(done).toMatchObject({ status: 'completed' });
    const out = JSON.parse(resultsSeen('SKILL-RUN')[0]);
    expect(out.stdout).toContain('stamped by the skill\nstamped by the skill\n');
    expect(out.stderr).toMatch(/new\.md: Read-only file system/);
    expect(out.stderr).toMatch(/SKILL\.md.*Read-only file system/);
    expect(out.stdout).toContain('big\nrelease-notes\n');
    expect(out.stdout).not.toContain('unused');
    expect(out.stdout).not.toContain('HOST-SECRET');
    expect(out.stdout).toContain('end');
    expect(readdirSync(path.join(dir, 'skills', 'release-notes')).sort()).toEqual(['SKILL.md', 'leak.txt', 'pipe', 'reference', 'scripts']);
  });

  it("lets a command read the memory but not write it (the file tools' writes are the atomic, bounded ones)", async () => {
    const put = await fetch(`${sbx.url}/memory/user/u-sbx/keeper/files/MEMORY.md`, { method: 'PUT', body: 'SBX-MEMORY-NOTE' });
    expect(put.status).toBe(201);
    model.script('MEM-SBX', [
      { toolCalls: [{ name: 'bash', args: { command: 'cat .memory/MEMORY.md; echo; echo x > .memory/new.md; echo x >> .memory/MEMORY.md; echo end' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'ran', paths: [] } }] },
    ]);
    await run(sbx, { subagent_type: 'keeper', prompt: 'MEM-SBX', context: { parentTaskId: 'T-mem-sbx', userId: 'u-sbx' } });
    const out = JSON.parse(resultsSeen('MEM-SBX')[0]);
    expect(out.stdout).toContain('SBX-MEMORY-NOTE');
    expect(out.stderr).toMatch(/new\.md: Read-only file system/);
    expect(out.stderr).toMatch(/MEMORY\.md: Read-only file system/);
    expect(await (await fetch(`${sbx.url}/memory/user/u-sbx/keeper/files/MEMORY.md`)).text()).toBe('SBX-MEMORY-NOTE');
  });
});
