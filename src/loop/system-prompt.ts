import type { AgentDefinition } from '../definitions/agent-definition.ts';

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
}

/** Formatters by time zone: building one costs a fraction of a millisecond, every task needs one. */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) formatters.set(timeZone, (f = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' })));
  return f;
}

/** The system prompt: task instructions, the definition's own, the project's (`AGENTS.md`), then the environment. */
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
