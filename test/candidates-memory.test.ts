import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type ScriptedTurn, type TurnContext } from '../scripted-model/server';
import { startService, taskBody, type TestService } from './support/harness';

/** Candidates and a definition's memory: each attempt writes its own copy; only the kept one's writes land. */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-cand-memory-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(path.join(dir, 'agents', 'team.md'), '---\nname: team\ndescription: Remembers per parent\nmemory: parent\n---\nKeep notes.\n');
  svc = await startService({ model, dir, env: { DEFAULT_MODEL: 'model-a' } });
});
afterAll(async () => {
  await svc.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const write = (p: string, content: string): ScriptedTurn => ({ toolCalls: [{ name: 'write_file', args: { path: p, content } }] });
const memoryDir = (parent: string) => path.join(svc.config.workspacesDir, '#memory', 'parent', parent, 'team');
const filesIn = (d: string): string[] =>
  readdirSync(d, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(d, path.join(e.parentPath, e.name)));

describe('candidates and memory', () => {
  it("a rejected attempt's memory writes leave no trace in the memory folder; the kept attempt's land, every file of them", async () => {
    const parent = 'T-cand-mem';
    mkdirSync(memoryDir(parent), { recursive: true });
    writeFileSync(path.join(memoryDir(parent), 'MEMORY.md'), '# before the task\n');
    writeFileSync(path.join(memoryDir(parent), 'old.md'), 'kept from before');
    // Each attempt rewrites the index and adds a note of its own, then answers: only model-a's answer is right.
    model.script('CANDM', (ctx: TurnContext) => {
      const me = ctx.model;
      if (ctx.turn === 0) return write('.memory/MEMORY.md', `# index by ${me}\n`);
      if (ctx.turn === 1) return write(`.memory/notes-${me}.md`, `learned by ${me}`);
      if (ctx.turn === 2) return write('answer.txt', me === 'model-a' ? 'right' : 'wrong');
      return { toolCalls: [{ name: 'complete', args: { summary: `by ${me}`, paths: ['answer.txt'] } }] };
    });
    const res = await fetch(`${svc.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        taskBody({
          subagent_type: 'team',
          prompt: 'CANDM',
          context: { parentTaskId: parent, userId: 'u' },
          options: {
            isolation: 'worktree',
            outcome: { verify: { command: 'grep -q right answer.txt' }, maxIterations: 1 },
            candidates: { n: 2, models: ['model-a', 'model-b'] },
          },
        }),
      ),
    });
    const done = (await res.json()) as any;
    expect(done).toMatchObject({ status: 'completed', summary: 'by model-a' });
    // The kept attempt's writes are all there; the other's none, not even its index.
    expect(filesIn(memoryDir(parent)).sort()).toEqual(['MEMORY.md', 'notes-model-a.md', 'old.md']);
    expect(readFileSync(path.join(memoryDir(parent), 'MEMORY.md'), 'utf8')).toBe('# index by model-a\n');
    expect(readFileSync(path.join(memoryDir(parent), 'notes-model-a.md'), 'utf8')).toBe('learned by model-a');
    expect(existsSync(path.join(memoryDir(parent), 'notes-model-b.md'))).toBe(false);
    // The next task of the scope reads the kept attempt's index.
    const listed = (await (await fetch(`${svc.url}/memory/parent/${parent}/team/files/`)).json()) as any;
    expect(listed.files.map((f: any) => f.path).sort()).toEqual(['MEMORY.md', 'notes-model-a.md', 'old.md']);
  });
});
