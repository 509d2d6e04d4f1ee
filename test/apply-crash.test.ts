import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { childEnv, fetchJson as json, startChildService, type ChildService } from './support/child-service';
import { taskBody, TEST_API_KEY } from './support/harness';
import { until } from './support/until';

/**
 * POST /tasks/:id/apply under kill -9: a worktree task changes 21 files of 1 MB (10 modified, 10
 * added in a new folder, 1 deleted); the service process is killed with SIGKILL at spread moments
 * of the apply, then started again. The shared workspace is then either exactly as it was or
 * exactly the applied state (no file between, no temporary file left), the task's `appliedAt` says
 * which, and applying again answers as the contract says.
 */
const SIZE = 1_000_000;
const MODIFIED = Array.from({ length: 10 }, (_, i) => `src/f${i + 1}.txt`).sort();
const ADDED = Array.from({ length: 10 }, (_, i) => `src/new/f${i + 11}.txt`).sort();
/** `yes "<text>" | head -c SIZE`, as the task's command writes it. */
const filled = (text: string) => `${text}\n`.repeat(Math.ceil(SIZE / (text.length + 1))).slice(0, SIZE);
const BEFORE: Record<string, string> = { ...Object.fromEntries(MODIFIED.map((p) => [p, filled(`before ${p}`)])), 'old.txt': 'to be deleted\n' };
const AFTER: Record<string, string> = Object.fromEntries([...MODIFIED, ...ADDED].map((p) => [p, filled(`after ${p}`)]));
const COMMAND = [...MODIFIED, ...ADDED].map((p) => `yes "after ${p}" | head -c ${SIZE} > ${p}`).join(' && ');

let model: ScriptedModel;
let dir: string;
let env: Record<string, string>;
let svc: ChildService;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-apply-crash-'));
  env = childEnv(dir, model.url, TEST_API_KEY);
  svc = await startChildService(env);
});
afterAll(async () => {
  svc?.child.kill('SIGKILL');
  await svc?.exited;
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every entry below `root` (folders end with `/`), sorted. */
function entries(root: string, prefix = ''): string[] {
  return readdirSync(path.join(root, prefix), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? [`${prefix}${e.name}/`, ...entries(root, `${prefix}${e.name}/`)] : [`${prefix}${e.name}`]))
    .sort();
}
const treeOf = (files: Record<string, string>) =>
  [
    ...new Set(
      Object.keys(files).flatMap((p) => [
        p,
        ...p
          .split('/')
          .slice(0, -1)
          .map((_, i, parts) => `${parts.slice(0, i + 1).join('/')}/`),
      ]),
    ),
  ].sort();

/** `untouched`, `applied`, or what is between (every entry and file that is neither). */
function stateOf(workspace: string): string {
  const found = entries(workspace);
  const matches = (files: Record<string, string>) =>
    JSON.stringify(found) === JSON.stringify(treeOf(files)) &&
    Object.entries(files).every(([p, text]) => readFileSync(path.join(workspace, p), 'utf8') === text);
  if (matches(BEFORE)) return 'untouched';
  if (matches(AFTER)) return 'applied';
  const mixed = Object.keys({ ...BEFORE, ...AFTER }).map((p) => {
    if (!existsSync(path.join(workspace, p))) return `${p}: absent`;
    const text = readFileSync(path.join(workspace, p), 'utf8');
    return `${p}: ${text === BEFORE[p] ? 'before' : text === AFTER[p] ? 'after' : 'other'}`;
  });
  return `between: ${JSON.stringify({ entries: found, files: mixed })}`;
}

/** A finished worktree task on a fresh workspace `T-ac-<round>` whose changes are ready to apply. */
async function readyTask(round: number): Promise<{ id: string; workspace: string }> {
  const parentTaskId = `T-ac-${round}`;
  const workspace = path.join(env.WORKSPACES_DIR, parentTaskId);
  mkdirSync(path.join(workspace, 'src'), { recursive: true });
  for (const [p, text] of Object.entries(BEFORE)) writeFileSync(path.join(workspace, p), text);
  model.script(`APPLY-CRASH-${round}`, [
    { toolCalls: [{ name: 'bash', args: { command: `mkdir -p src/new && ${COMMAND} && rm old.txt` } }] },
    { toolCalls: [{ name: 'complete', args: { summary: 'changed 21 files', paths: [] } }] },
  ]);
  const body = taskBody({ prompt: `APPLY-CRASH-${round}`, context: { parentTaskId, userId: 'u' }, options: { isolation: 'worktree' } });
  const posted = await json(`${svc.url}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(posted.status, JSON.stringify(posted.body)).toBe(202);
  const id = posted.body.id as string;
  await until(async () => (await json(`${svc.url}/tasks/${id}`)).body.status === 'completed', 30_000);
  const task = (await json(`${svc.url}/tasks/${id}`)).body;
  expect(task.changes).toMatchObject({ added: ADDED, modified: MODIFIED, deleted: ['old.txt'], appliedAt: null });
  expect(stateOf(workspace)).toBe('untouched');
  return { id, workspace };
}

const apply = (id: string) => json(`${svc.url}/tasks/${id}/apply`, { method: 'POST' });

describe('an apply killed with SIGKILL', () => {
  /** How long an apply takes here: the kills are spread over it. */
  let applyMs = 0;

  it('applies all 21 files when nothing kills it (and says how long that takes)', async () => {
    const { id, workspace } = await readyTask(0);
    const startedAt = performance.now();
    const applied = await apply(id);
    applyMs = performance.now() - startedAt;
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body.applied).toEqual([...ADDED, 'old.txt', ...MODIFIED].sort());
    expect(stateOf(workspace)).toBe('applied');
    expect(existsSync(path.join(env.WORKSPACES_DIR, '#worktrees', `${id}.apply`))).toBe(false);
    console.log(`an apply of 21 files of 1 MB: ${Math.round(applyMs)} ms`);
  });

  /**
   * Where each round kills the process: at a moment of the apply seen from outside, on disk (no
   * hook in the service), or at a random moment. Each waits at most 5 s for its moment.
   */
  const worktrees = () => path.join(env.WORKSPACES_DIR, '#worktrees');
  const inNew = (workspace: string) => (existsSync(path.join(workspace, 'src/new')) ? readdirSync(path.join(workspace, 'src/new')) : []);
  const kills: Array<{ moment: string; reached: (id: string, workspace: string) => boolean }> = [
    { moment: 'while the journal is staged', reached: (id) => existsSync(path.join(worktrees(), `${id}.staging`)) },
    { moment: 'once the journal is committed', reached: (id) => existsSync(path.join(worktrees(), `${id}.apply`)) },
    { moment: 'with a temporary file in the shared workspace', reached: (_, ws) => inNew(ws).some((n) => n.startsWith('.')) },
    { moment: 'after 1 file', reached: (_, ws) => inNew(ws).filter((n) => !n.startsWith('.')).length >= 1 },
    { moment: 'after 4 files', reached: (_, ws) => inNew(ws).filter((n) => !n.startsWith('.')).length >= 4 },
    { moment: 'after 9 files', reached: (_, ws) => inNew(ws).filter((n) => !n.startsWith('.')).length >= 9 },
    { moment: 'at a random moment', reached: () => false },
    { moment: 'at another random moment', reached: () => false },
  ];
  const seen: Record<string, number> = {};
  it.each(kills.map((kill, i) => ({ ...kill, round: i + 1 })))(
    'leaves the workspace untouched or fully applied when killed $moment, never between',
    async ({ moment, reached, round }) => {
      const { id, workspace } = await readyTask(round);
      const answer = apply(id).catch(() => null);
      const deadline = performance.now() + (moment.includes('random') ? applyMs * Math.random() * 1.2 : 5000);
      while (performance.now() < deadline && !reached(id, workspace)) await new Promise((r) => setTimeout(r, 1));
      svc.child.kill('SIGKILL');
      await svc.exited;
      const answered = await answer;
      const atKill = stateOf(workspace).split(':')[0];
      const committed = existsSync(path.join(env.WORKSPACES_DIR, '#worktrees', `${id}.apply`, 'journal.json'));

      svc = await startChildService(env);
      if (committed) {
        // The start alone finishes an apply whose journal was committed: no request needed.
        await until(async () => (await json(`${svc.url}/tasks/${id}`)).body.changes.appliedAt !== null);
      }
      // A read of its changes waits for any apply the start is finishing.
      const diff = await fetch(`${svc.url}/tasks/${id}/changes.diff`);
      const state = stateOf(workspace);
      const task = (await json(`${svc.url}/tasks/${id}`)).body;
      if (diff.status === 410) {
        expect(state).toBe('applied');
        expect(task.changes.appliedAt).not.toBeNull();
        const again = await apply(id);
        expect([again.status, again.body.error?.code]).toEqual([409, 'already_applied']);
      } else {
        expect(diff.status).toBe(200);
        expect(state).toBe('untouched');
        expect(task.changes.appliedAt).toBeNull();
        expect(answered?.status).not.toBe(200);
        const again = await apply(id);
        expect(again.status, JSON.stringify(again.body)).toBe(200);
        expect(stateOf(workspace)).toBe('applied');
      }
      // Nothing of the apply is left beside the copies either (the start removes what a kill after the record left).
      await until(async () => readdirSync(path.join(env.WORKSPACES_DIR, '#worktrees')).every((n) => !n.startsWith(id)));
      const outcome = `${atKill} at the kill, ${committed ? 'finished at start' : diff.status === 410 ? 'applied before the kill' : 'untouched'}`;
      seen[outcome] = (seen[outcome] ?? 0) + 1;
      console.log(`killed ${moment}: ${outcome}; outcomes so far ${JSON.stringify(seen)}`);
    },
  );
});
