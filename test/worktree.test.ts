import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceForTests, taskBody, taskEnd } from './support/harness';

/**
 * `options.isolation: "worktree"`: a task works on its own copy of the workspace; its changes come
 * back as `changes` with a diff, and POST /tasks/:id/apply writes them into the shared workspace,
 * refusing (and writing nothing) when a changed file moved there meanwhile.
 */
const file = serviceForTests();
/** A service whose copies expire a second after their task ended (the default keeps them a day, as a slow machine needs). */
const expiring = serviceForTests({ env: { WORKTREE_TTL_MS: '1000' } });

const post = (url: string, on = file) => on.svc.inject({ method: 'POST', url });
const start = async (prompt: string, parentTaskId: string, options: object = { isolation: 'worktree' }, on = file) => {
  const res = await on.svc.inject({ method: 'POST', url: '/tasks', payload: taskBody({ prompt, context: { parentTaskId, userId: 'u' }, options }) });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().id as string;
};
const shared = (parentTaskId: string, ...p: string[]) => path.join(file.svc.config.workspacesDir, parentTaskId, ...p);
/** Scripts a subagent that runs `command` with bash, then completes handing over `paths`. */
const scriptCommand = (key: string, command: string, paths: string[] = []) =>
  file.svc.model.script(key, [
    { toolCalls: [{ name: 'bash', args: { command } }] },
    { toolCalls: [{ name: 'complete', args: { summary: `${key} done`, paths } }] },
  ]);

describe('worktree isolation', () => {
  it('runs two tasks on the same files at once; applies the first, refuses the second with the conflicting paths and writes nothing', async () => {
    mkdirSync(shared('T-wt', 'src'), { recursive: true });
    writeFileSync(shared('T-wt', 'src/app.js'), 'const a = 1;\nconst b = 2;\nconsole.log(a + b);\n');
    writeFileSync(shared('T-wt', 'old.txt'), 'to be deleted\n');
    writeFileSync(shared('T-wt', 'keep.txt'), 'untouched\n');
    scriptCommand('WT-ONE', "sed -i 's/const b = 2/const b = 40/' src/app.js && rm old.txt && printf 'new\\n' > added.md && pwd > where.txt", ['added.md']);
    scriptCommand('WT-TWO', "sed -i 's/const a = 1/const a = 100/' src/app.js && printf 'two\\n' > two.md");
    const [one, two] = await Promise.all([start('WT-ONE', 'T-wt'), start('WT-TWO', 'T-wt')]);
    const [doneOne, doneTwo] = await Promise.all([taskEnd(file.svc, one), taskEnd(file.svc, two)]);
    expect(doneOne.status).toBe('completed');
    expect(doneTwo.status).toBe('completed');
    // The shared workspace is untouched until an apply.
    expect(readFileSync(shared('T-wt', 'src/app.js'), 'utf8')).toContain('const b = 2;');
    expect(existsSync(shared('T-wt', 'old.txt'))).toBe(true);
    expect(existsSync(shared('T-wt', 'added.md'))).toBe(false);

    expect(doneOne.changes).toEqual({
      added: ['added.md', 'where.txt'],
      modified: ['src/app.js'],
      deleted: ['old.txt'],
      patchUrl: `/tasks/${one}/changes.diff`,
      appliedAt: null,
    });
    expect(doneTwo.changes).toMatchObject({ added: ['two.md'], modified: ['src/app.js'], deleted: [] });
    // Its commands ran in its copy, not in the shared workspace.
    const copyRoot = readFileSync(path.join(file.svc.config.workspacesDir, '#worktrees', one, 'where.txt'), 'utf8').trim();
    expect(copyRoot).toBe(path.join(file.svc.config.workspacesDir, '#worktrees', one));
    // Its artifacts are served from the copy.
    expect(doneOne.artifacts).toEqual([expect.objectContaining({ relativePath: 'added.md', url: `/tasks/${one}/files/added.md`, size: 4 })]);
    expect((await file.svc.inject({ url: `/tasks/${one}/files/added.md` })).body).toBe('new\n');

    const diff = await file.svc.inject({ url: `/tasks/${one}/changes.diff` });
    expect(diff.statusCode).toBe(200);
    expect(diff.headers['content-type']).toContain('text/x-diff');
    expect(diff.body).toContain('--- a/src/app.js\n+++ b/src/app.js\n');
    expect(diff.body).toContain('-const b = 2;\n+const b = 40;\n');
    expect(diff.body).toContain('--- /dev/null\n+++ b/added.md\n@@ -0,0 +1,1 @@\n+new\n');
    expect(diff.body).toContain('--- a/old.txt\n+++ /dev/null\n');
    // A real tool takes it: `git apply --check` on a copy of the shared workspace.
    execFileSync('/usr/bin/git', ['apply', '--check', '-'], { cwd: shared('T-wt'), input: diff.body });

    const applied = await post(`/tasks/${one}/apply`);
    expect(applied.statusCode, applied.body).toBe(200);
    expect(applied.json()).toEqual({ applied: ['added.md', 'old.txt', 'src/app.js', 'where.txt'] });
    expect(readFileSync(shared('T-wt', 'src/app.js'), 'utf8')).toBe('const a = 1;\nconst b = 40;\nconsole.log(a + b);\n');
    expect(readFileSync(shared('T-wt', 'added.md'), 'utf8')).toBe('new\n');
    expect(existsSync(shared('T-wt', 'old.txt'))).toBe(false);
    expect(readFileSync(shared('T-wt', 'keep.txt'), 'utf8')).toBe('untouched\n');
    // The copy is gone; the task says when it was applied; its files now come from the shared workspace.
    expect(existsSync(path.join(file.svc.config.workspacesDir, '#worktrees', one))).toBe(false);
    expect((await file.svc.inject({ url: `/tasks/${one}` })).json().changes.appliedAt).toMatch(/^\d{4}-/);
    expect((await file.svc.inject({ url: `/tasks/${one}/files/added.md` })).body).toBe('new\n');

    const again = await post(`/tasks/${one}/apply`);
    expect([again.statusCode, again.json().error.code]).toEqual([409, 'already_applied']);
    const conflict = await post(`/tasks/${two}/apply`);
    expect([conflict.statusCode, conflict.json().error.code]).toEqual([409, 'conflict']);
    expect(conflict.json().error.details).toEqual({ paths: ['src/app.js'] });
    expect(existsSync(shared('T-wt', 'two.md'))).toBe(false);
    expect(readFileSync(shared('T-wt', 'src/app.js'), 'utf8')).toContain('const a = 1;');
  });

  it('keeps a file mode, carries a link as a link, skips a FIFO, and applies a deletion', async () => {
    mkdirSync(shared('T-wt-kinds'), { recursive: true });
    writeFileSync(shared('T-wt-kinds', 'run.sh'), '#!/bin/sh\necho one\n', { mode: 0o755 });
    symlinkSync('/etc/passwd', shared('T-wt-kinds', 'outside-link'));
    execFileSync('/usr/bin/mkfifo', [shared('T-wt-kinds', 'pipe')]);
    scriptCommand('WT-KINDS', "printf '#!/bin/sh\\necho two\\n' > run.sh && test -L outside-link && test ! -e pipe && echo checked > seen.txt");
    const id = await start('WT-KINDS', 'T-wt-kinds');
    const done = await taskEnd(file.svc, id);
    expect(done.changes).toMatchObject({ added: ['seen.txt'], modified: ['run.sh'], deleted: [] });
    expect((await post(`/tasks/${id}/apply`)).statusCode).toBe(200);
    expect(readFileSync(shared('T-wt-kinds', 'run.sh'), 'utf8')).toBe('#!/bin/sh\necho two\n');
    expect(statSync(shared('T-wt-kinds', 'run.sh')).mode & 0o777).toBe(0o755);
    expect(readFileSync(shared('T-wt-kinds', 'seen.txt'), 'utf8')).toBe('checked\n');
  });

  it('refuses what cannot be applied: a running task, a shared one, an unknown one, a copy past WORKTREE_TTL_MS', async () => {
    // Enough files that removing the copy takes a while (see the two sweeps below).
    const many = path.join(expiring.svc.config.workspacesDir, 'T-wt-refusals', 'many');
    mkdirSync(many, { recursive: true });
    for (let i = 0; i < 1500; i++) writeFileSync(path.join(many, `f${i}.txt`), `${i}\n`);
    expiring.svc.model.script('WT-SLOW', [{ delayMs: 1500, toolCalls: [{ name: 'complete', args: { summary: 'slow', paths: [] } }] }]);
    const running = await start('WT-SLOW', 'T-wt-refusals', undefined, expiring);
    const early = await post(`/tasks/${running}/apply`, expiring);
    expect([early.statusCode, early.json().error.code]).toEqual([409, 'task_not_finished']);
    await taskEnd(expiring.svc, running);

    expiring.svc.model.script('WT-SHARED', [{ toolCalls: [{ name: 'complete', args: { summary: 'shared', paths: [] } }] }]);
    const plain = await start('WT-SHARED', 'T-wt-refusals', {}, expiring);
    expect((await taskEnd(expiring.svc, plain)).changes).toBeNull();
    const notWorktree = await post(`/tasks/${plain}/apply`, expiring);
    expect([notWorktree.statusCode, notWorktree.json().error.code]).toEqual([409, 'not_a_worktree']);
    expect((await post('/tasks/tsk_01ARZ3NDEKTSV4RRFFQ69G5FAV/apply', expiring)).statusCode).toBe(404);

    // WORKTREE_TTL_MS is 1 s here: the sweep (every second then; called here too) removes the copy,
    // and the changes can no longer be applied. A sweep called while another one (this one, or the
    // ticker's) is deleting the copy it claimed answers once the copy is gone.
    await new Promise((r) => setTimeout(r, 1100));
    const copy = path.join(expiring.svc.config.workspacesDir, '#worktrees', running);
    const first = expiring.svc.app.tasks.worktrees.sweep();
    first.catch(() => undefined);
    // The removal is recorded before a file is deleted: the diff answers 410 from then on.
    while ((await expiring.svc.inject({ url: `/tasks/${running}/changes.diff` })).statusCode !== 410) await new Promise((r) => setImmediate(r));
    await expiring.svc.app.tasks.worktrees.sweep();
    expect(existsSync(copy)).toBe(false);
    await first;
    const gone = await post(`/tasks/${running}/apply`, expiring);
    expect([gone.statusCode, gone.json().error.code]).toEqual([410, 'worktree_removed']);
    expect((await expiring.svc.inject({ url: `/tasks/${running}/changes.diff` })).statusCode).toBe(410);
  });
});
