/** A model task's own folders beside the workspace: its skills and its memory. */
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import { preloadSkills, skillFolder, type PreloadedSkill } from '../../definitions/skills.ts';
import { memoryKeyOf, memoryUrl, type TaskMemory } from '../../shapes/memory.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { openMemory } from '../../workspace/memory.ts';
import { taskFolder, withTaskFolders } from '../../workspace/task-folders.ts';
import type { TaskFolder, Workspace } from '../../workspace/workspace.ts';
import { copyOfFolder, memoryCopyOf, worktreeDir } from '../../workspace/worktree.ts';
import { candidateOf } from './candidate-key.ts';
import type { RunnerDeps } from './run-context.ts';

/** The skills a task has: its definition's, narrowed by `options.skills` (admission refused any other). */
export const skillsOfTask = (def: Pick<AgentDefinition, 'skills'>, body: CreateTaskBody) =>
  (def.skills ?? []).filter((name) => !body.options?.skills || body.options.skills.includes(name));

/** The memory a task of `def` works with, if its definition has one (a fork's is general's). */
export function memoryOfTask(row: Pick<TaskRow, 'subagentType' | 'userId' | 'parentTaskId'>, def: Pick<AgentDefinition, 'memory' | 'type'>): TaskMemory | null {
  if (!def.memory) return null;
  const ref = { scope: def.memory, key: memoryKeyOf(def.memory, row), type: row.subagentType === 'fork' ? 'general' : def.type };
  return { ...ref, url: memoryUrl(ref) };
}

export interface TaskFolders {
  workspace: Workspace;
  skills: PreloadedSkill[];
  memory: TaskMemory | null;
}

/**
 * The workspace as a model task sees it: its skills' folders (read-only) at `.skills/<name>/`, its
 * memory folder (created on first use) at `.memory/`, and the names `.skills` and `.memory`
 * reserved for them even when it has neither (task-folders.ts of workspace/).
 */
export async function openTaskFolders(
  deps: Pick<RunnerDeps, 'skills' | 'workspacesDirOf' | 'memoryMaxBytes' | 'now'>,
  row: TaskRow,
  def: AgentDefinition,
  body: CreateTaskBody,
  workspace: Workspace,
): Promise<TaskFolders> {
  const skills = skillsOfTask(def, body).flatMap((name) => deps.skills.get(name) ?? []);
  const folders: TaskFolder[] = [];
  for (const s of skills) folders.push(await taskFolder(skillFolder(s.name), s.dir, { writable: false }));
  const memory = memoryOfTask(row, def);
  if (memory) {
    const tenantDir = deps.workspacesDirOf(row.tenant);
    const shared = await openMemory(tenantDir, memory);
    // An attempt of a task with candidates works on its own copy of the memory, taken when it
    // starts: only the kept attempt's writes reach the memory (run-candidates.ts), all at once.
    const root = candidateOf(row) ? await copyOfFolder(shared, memoryCopyOf(worktreeDir(tenantDir, row.id)), deps.now()) : shared;
    folders.push(await taskFolder('.memory', root, { writable: true, maxBytes: deps.memoryMaxBytes }));
  }
  return { workspace: withTaskFolders(workspace, folders), skills: preloadSkills(skills), memory };
}
