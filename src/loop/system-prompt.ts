import type { AgentDefinition } from '../definitions/agent-definition.ts';
import type { PreloadedSkill } from '../definitions/skills.ts';
import type { MemoryScope } from '../shapes/memory.ts';
import { MAX_MEMORY_INDEX_LINES } from '../workspace/memory.ts';

const TASK_INSTRUCTIONS = `You are a subagent. An orchestrator agent delegated one task to you; the user's message is that task, and it is all the context you get: there is no earlier conversation, and you cannot ask anyone questions.

Work autonomously in the workspace with your tools. Relative paths start from your working folder (the workspace root unless the environment below names another); you cannot reach anything outside the workspace. The workspace is shared with other subagents of the same parent task, so write only the files the task names (or clearly named new files) and do not delete or overwrite others' work.

Deliver results as files in the workspace, not as long text. When you are done, call \`complete\` exactly once with a short summary and the paths of the files you produced; the orchestrator reads those files itself. If the task cannot be done, call \`complete\` with a summary that says why.`;

export interface PromptEnvironment {
  now: Date;
  timezone?: string;
  tools: string[];
  /** The working folder relative to the workspace root, when it is not the root (`options.cwd`). */
  cwd?: string;
  /** The workspace's `AGENTS.md` (project instructions), unless the definition omits them. */
  project?: { path: string; text: string; cut: boolean } | null;
  /** The task's preloaded skills (definitions/skills.ts: bounded there). */
  skills?: PreloadedSkill[];
  /** The task's memory: its scope and the first lines of `.memory/MEMORY.md` (null: none yet). */
  memory?: { scope: MemoryScope; index: { text: string; cut: boolean } | null } | null;
}

const MEMORY_OF: Record<MemoryScope, string> = {
  user: "every task of this subagent type for the same user (the orchestrator's user)",
  parent: 'every task of this subagent type under the same parent task',
  definition: 'every task of this subagent type',
};

/** The skills part: each skill's instructions, or where to read them when the prompt had no room. */
function skillsPart(skills: PreloadedSkill[]): string {
  const each = skills.map((s) => {
    const body =
      s.body === null
        ? `(Its instructions did not fit here: read ${s.folder}/SKILL.md before you use it.)`
        : s.cut
          ? `${s.body}\n[SKILL.md is longer: read ${s.folder}/SKILL.md for the rest]`
          : s.body;
    return `<skill name="${s.name}" folder="${s.folder}/">\n${s.description}\n\n${body}\n</skill>`;
  });
  return (
    '<skills>\nSkills given to you: instructions for a kind of work, each with a folder of files (scripts, references, templates) ' +
    'below the workspace root that you can read and run but not change. Follow a skill when the task is its kind of work; ' +
    `name its files by their folder.\n\n${each.join('\n\n')}\n</skills>`
  );
}

/** The memory part: what it is, how to keep it, and what it holds now. */
function memoryPart(memory: NonNullable<PromptEnvironment['memory']>): string {
  const index = memory.index
    ? `${memory.index.text}${memory.index.cut ? `\n[.memory/MEMORY.md is longer: only its first ${MAX_MEMORY_INDEX_LINES} lines (32 KiB at most) are shown; keep it short]` : ''}`
    : '(empty: .memory/MEMORY.md does not exist yet)';
  return [
    `<memory folder=".memory/" scope="${memory.scope}">`,
    `A folder of your own that lasts: ${MEMORY_OF[memory.scope]} finds what you leave in it. It is not part of the shared workspace. ` +
      'Read it with the file tools; write it with write_file and edit_file (each write replaces a whole file at once; commands can only read it). ' +
      'Keep .memory/MEMORY.md as the index: short lines of what a later task should know (conventions, decisions, where things are, ' +
      'what failed), pointing at other files of .memory/ for details; its first lines are shown below at the start of every such task. ' +
      'Save what you learned that is not in the workspace already, update what changed, remove what is wrong.',
    '',
    index,
    '</memory>',
  ].join('\n');
}

/** Formatters by time zone: building one costs a fraction of a millisecond, every task needs one. */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) formatters.set(timeZone, (f = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' })));
  return f;
}

/** The system prompt: task instructions, the definition's own, the project's (`AGENTS.md`), the skills, the memory, then the environment. */
export function buildSystemPrompt(def: AgentDefinition, env: PromptEnvironment): string {
  const tz = env.timezone ?? 'UTC';
  const local = formatterFor(tz).format(env.now);
  const parts = [TASK_INSTRUCTIONS];
  if (def.instructions.trim()) parts.push(def.instructions.trim());
  if (env.project) {
    const cut = env.project.cut ? `\n[${env.project.path} is longer: only its first 32 KiB are shown; read the file for the rest]` : '';
    parts.push(
      `<project-instructions file="${env.project.path}">\nThe project's own conventions for agents working in this workspace. Follow them where they do not contradict the task.\n\n${env.project.text}${cut}\n</project-instructions>`,
    );
  }
  if (env.skills?.length) parts.push(skillsPart(env.skills));
  if (env.memory) parts.push(memoryPart(env.memory));
  parts.push(
    [
      '<environment>',
      env.cwd
        ? `working folder: ${env.cwd} (inside the workspace): the current folder of your commands; name files relative to it`
        : 'workspace: the current folder of your commands; name files relative to it',
      `current time: ${local} (${tz})`,
      `tools: ${env.tools.join(', ')}`,
      '</environment>',
    ].join('\n'),
  );
  return parts.join('\n\n');
}
