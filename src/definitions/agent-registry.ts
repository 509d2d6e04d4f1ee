import { readOnlyToolNames, workspaceToolNames } from '../tools/workspace-tools.ts';
import type { AgentDefinition } from './agent-definition.ts';

/**
 * The tools of a task that may start children (`maxDepth`): `task`, and `wait`, `send_input` and
 * `close_agent`, which reach the children it started in the background.
 */
export const LEAD_TOOLS = ['task', 'wait', 'send_input', 'close_agent'] as const;

/** Tools no definition may list: a subagent starts subagents only through `maxDepth` (its lead tools) and never asks the user. */
export const FORBIDDEN_TOOLS = [...LEAD_TOOLS, 'ask_user_question', 'confirm'] as const;

export interface AgentRegistry {
  get(type: string): AgentDefinition | undefined;
  list(): AgentDefinition[];
  types(): string[];
}

export interface ModelNames {
  defaultModel: string;
  smallModel: string;
}

/** Maps a definition's `model` (`inherit` | `small` | an id) to a model id. */
export function resolveModelName(model: string | undefined, names: ModelNames): string {
  if (!model || model === 'inherit') return names.defaultModel;
  if (model === 'small') return names.smallModel;
  return model;
}

/** A compaction model: `inherit` stays (it means the task's own model, known per task); `small` resolves. */
export function resolveCompactionModel(model: string | undefined, names: ModelNames): string {
  return model === 'inherit' ? 'inherit' : resolveModelName(model ?? 'small', names);
}

/** Compact a conversation once a step's input reaches this many tokens, unless a definition says otherwise. */
export const DEFAULT_COMPACT_AT_TOKENS = 100_000;

/**
 * The layered tool filter: the allow-list (absent = every workspace tool), minus the deny-list,
 * minus the forbidden tools, plus `complete`, which every model-backed subagent has.
 */
export function resolveTools(allow: string[] | undefined, deny: string[] | undefined): string[] {
  const denied = new Set<string>([...(deny ?? []), ...FORBIDDEN_TOOLS]);
  const base = allow ?? workspaceToolNames;
  return [...new Set([...base.filter((t) => !denied.has(t) && t !== 'complete'), 'complete'])];
}

/** The built-in definitions: `general`, `explore`, `plan` and `shell`. */
export function builtinAgents(names: ModelNames): AgentDefinition[] {
  return [
    {
      type: 'general',
      description: 'General-purpose agent for multi-step work in the workspace: research files, write and edit files, run commands.',
      kind: 'model',
      model: resolveModelName('inherit', names),
      maxSteps: 50,
      tools: resolveTools(undefined, undefined),
      instructions: '',
      compactionModel: resolveCompactionModel(undefined, names),
      compactAtTokens: DEFAULT_COMPACT_AT_TOKENS,
    },
    {
      type: 'explore',
      description: 'Fast read-only agent for finding and reading files in the workspace; it cannot change anything.',
      kind: 'model',
      model: resolveModelName('small', names),
      maxSteps: 30,
      tools: resolveTools(readOnlyToolNames, undefined),
      instructions:
        'You are a read-only explorer. Search and read the workspace, then report what you found in the summary of ' +
        '`complete`. You cannot write files or run commands; pass `paths: []` unless you point at existing files.',
      compactionModel: resolveCompactionModel(undefined, names),
      compactAtTokens: DEFAULT_COMPACT_AT_TOKENS,
      omitProjectInstructions: true,
    },
    {
      type: 'plan',
      description: 'Planning agent: reads the workspace and writes a plan under plans/; it changes nothing else and runs no command.',
      kind: 'model',
      model: resolveModelName('inherit', names),
      maxSteps: 30,
      tools: resolveTools([...readOnlyToolNames, 'write_file', 'edit_file'], undefined),
      // Its writes are held to plans/ by path rules, which a task's own rules can only narrow.
      permissions: { write_file: 'deny', 'write_file(plans/**)': 'allow', edit_file: 'deny', 'edit_file(plans/**)': 'allow' },
      instructions:
        'You are a planner. Read the workspace to understand the task, then write the plan as a Markdown file under ' +
        '`plans/` (for example `plans/<topic>.md`): the goal, the steps in order with the files each touches, the risks ' +
        'and how to check the result. You cannot change any other file or run commands. Call `complete` with a short ' +
        "summary and the plan's path.",
      compactionModel: resolveCompactionModel(undefined, names),
      compactAtTokens: DEFAULT_COMPACT_AT_TOKENS,
    },
    {
      type: 'shell',
      description: 'Runs one bash command in the workspace with no model (send `command` instead of `prompt`).',
      kind: 'shell',
      model: null,
      maxSteps: 1,
      tools: ['bash'],
      instructions: '',
      compactionModel: 'inherit',
      compactAtTokens: DEFAULT_COMPACT_AT_TOKENS,
    },
  ];
}

/** A registry over a list of definitions; a later definition of a type overrides an earlier one. */
export function createAgentRegistry(definitions: AgentDefinition[]): AgentRegistry {
  const byType = new Map<string, AgentDefinition>();
  for (const d of definitions) byType.set(d.type, d);
  return {
    // `fork` is the general definition under its own name: a fork child works with its tools.
    get: (type) => {
      const general = type === 'fork' ? byType.get('general') : undefined;
      return general ? { ...general, type: 'fork', description: "A fork: the parent's own conversation, continued by a child" } : byType.get(type);
    },
    list: () => [...byType.values()],
    types: () => [...byType.keys()],
  };
}
