import type { ScriptedTurn, TurnContext } from './server.ts';

/**
 * Whether a conversation is one of subagentd's subagents: the service always opens it with its own
 * system prompt, which lists the task's tools and always offers `complete`. Any other caller (an
 * ai-SDK orchestrator with the `task` tool, as in the README) is a parent model.
 */
export function isSubagent(ctx: TurnContext): boolean {
  return /^tools: .*\bcomplete\b/m.test(textOf(ctx.messages.find((m) => m.role === 'system' || m.role === 'developer')?.content));
}

/** The first user message: the task's prompt, or the orchestrator's request. */
export function userPrompt(ctx: TurnContext): string {
  return textOf(ctx.messages.find((m) => m.role === 'user')?.content);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? '').join('');
  return '';
}

/** The part of the `task` tool's result the parent reads (what `@subagentd/client` shows a model). */
interface TaskResult {
  task_id?: string;
  status?: string;
  summary?: string;
  artifacts?: Array<{ relativePath: string; size?: number }>;
}

function parse(content: string): TaskResult | null {
  try {
    const value: unknown = JSON.parse(content);
    return value && typeof value === 'object' ? value : null;
  } catch {
    return null;
  }
}

/**
 * An orchestrator's model: it hands the user's request, as it is, to one `general` subagent through
 * the `task` tool, then answers with the subagent's summary and the files it wrote, so the
 * README's ai-SDK orchestrator runs offline against `npm run model` and ends with real text.
 */
export function orchestratorTurn(ctx: TurnContext): ScriptedTurn {
  const request = userPrompt(ctx);
  if (ctx.turn === 0) {
    return {
      text: 'I will hand this to a subagent.',
      toolCalls: [{ name: 'task', args: { subagent_type: 'general', description: 'Delegated by the orchestrator', prompt: request } }],
      usage: { input: 410, output: 46 },
    };
  }
  const result = ctx.toolResults[0] ? parse(ctx.toolResults[0].content) : null;
  if (!result?.summary) {
    // A tool error (the task was refused, or no `task` tool was offered): say what came back.
    const said = ctx.toolResults[0]?.content ?? 'nothing';
    return { text: `The subagent did not deliver: ${said}`, usage: { input: 520, output: 20 } };
  }
  const files = (result.artifacts ?? []).map((a) => `${a.relativePath}${a.size === undefined ? '' : ` (${a.size} bytes)`}`);
  return {
    text: `The subagent ${result.status ?? 'ended'} (${result.task_id ?? 'no id'}): ${result.summary}${files.length > 0 ? ` Files: ${files.join(', ')}.` : ''}`,
    usage: { input: 640, output: 38 },
  };
}
