import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { VFile } from 'vfile';
import { matter } from 'vfile-matter';
import { z } from 'zod';
import { permissionsSchema } from '../shapes/permissions.ts';
import { effortSchema, maxOutputTokensSchema, networkPolicySchema, outcomeSpecSchema, topPSchema } from '../shapes/task.ts';
import { workspaceToolNames } from '../tools/workspace-tools.ts';
import { mcpServerSpecSchema, type AgentDefinition } from './agent-definition.ts';
import { DEFAULT_COMPACT_AT_TOKENS, FORBIDDEN_TOOLS, resolveCompactionModel, resolveModelName, resolveTools, type ModelNames } from './agent-registry.ts';
import { pathGlobProblem } from './permissions.ts';
import { HOOK_EVENTS, hooksSchema } from '../hooks/hook-spec.ts';
import { skillNameSchema } from './skills.ts';
import { memoryScopeSchema } from '../shapes/memory.ts';
import { imageRefSchema } from '../config/config.ts';

/** Names a definition may mention: every workspace tool, `complete`, and the forbidden ones (removed). */
const KNOWN_TOOLS = new Set<string>([...workspaceToolNames, 'complete', ...FORBIDDEN_TOOLS]);
/** Types with a meaning of their own in the contract; a file cannot redefine them. */
const RESERVED_TYPES = new Set(['shell', 'fork']);

/** A list of tool names, as YAML list or as "Read, Grep" style comma string. */
const toolList = z
  .union([z.array(z.string().min(1)), z.string()])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean))
  .superRefine((tools, ctx) => {
    for (const t of tools) {
      // An MCP server's tool (`mcp__<server>__<tool>`) or all of a server's (`mcp__<server>`).
      if (t.startsWith('mcp__')) continue;
      if (!KNOWN_TOOLS.has(t)) ctx.addIssue({ code: 'custom', message: `unknown tool "${t}"; known tools: ${[...KNOWN_TOOLS].join(', ')}` });
    }
  });

/** The front matter of an `AGENTS_DIR/*.md` file. Unknown keys (e.g. `color`) are ignored. */
export const agentFileSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be 1-64 chars of a-z, 0-9, "_" or "-", starting with a letter or digit'),
    description: z.string().min(1, 'is required'),
    model: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(5)]).optional(),
    tools: toolList.optional(),
    disallowedTools: toolList.optional(),
    /** allow | ask | deny per tool, bash(<glob>) per simple command, or a file tool's path glob. */
    permissions: permissionsSchema
      .superRefine((rules, ctx) => {
        for (const key of Object.keys(rules)) {
          const problem = pathGlobProblem(key);
          if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
        }
      })
      .optional(),
    /** Skills preloaded (a YAML list, or names separated by commas), each a folder of SKILLS_DIR. */
    skills: z
      .union([z.array(z.string()), z.string()])
      .transform((v) => [...new Set((Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean))])
      .pipe(z.array(skillNameSchema).max(32, 'at most 32 skills'))
      .optional(),
    /** A persistent folder (`.memory/`) per user, per parent task or per definition. */
    memory: memoryScopeSchema.optional(),
    /** Leave the workspace's AGENTS.md out of the system prompt. */
    omitProjectInstructions: z.boolean().optional(),
    maxSteps: z.number().int().min(1).max(1000).optional(),
    maxDepth: z.number().int().min(0).max(5).optional(),
    /** With `maxDepth`: the `task` tool's `run_in_background` defaults to true. */
    background: z.boolean().optional(),
    temperature: z.number().min(0).max(2).optional(),
    /** `minimal` | `low` | `medium` | `high`: the model's reasoning, in its provider's own terms. */
    effort: effortSchema.optional(),
    topP: topPSchema.optional(),
    maxOutputTokens: maxOutputTokensSchema.optional(),
    compactionModel: z.string().min(1).optional(),
    compactAtTokens: z.number().int().min(1000).optional(),
    /** What its commands reach: `none` (default) or `{ allow: [host patterns] }` through the service's proxy. */
    network: networkPolicySchema.optional(),
    /** SANDBOX=container: the image its commands run in (SANDBOX_IMAGE otherwise). */
    image: imageRefSchema.optional(),
    /** `PreToolUse`, `PostToolUse`, `Stop`: each a list of `{ matcher?, command | url, timeoutMs? }`. */
    hooks: hooksSchema.optional(),
    /** How its tasks' `complete` is checked: `{ rubric?, verify?: { command, timeoutMs? }, maxIterations?, graderModel? }`. */
    outcome: outcomeSpecSchema.optional(),
    /** MCP servers whose tools the model gets (`mcp__<name>__<tool>`): `{ command, args?, env? }` or `{ url, headers? }`. */
    mcpServers: z
      .record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'a server name is 1-32 characters of A-Z, a-z, 0-9, "_" or "-"'), mcpServerSpecSchema)
      .refine((servers) => Object.keys(servers).length <= 10, 'at most 10 MCP servers')
      .optional(),
    /** `acp`: an external Agent Client Protocol agent runs the task (`command`, `args`, `env`, `permission`). */
    kind: z.enum(['model', 'acp']).default('model'),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')).default([]),
    permission: z.enum(['allow_workspace', 'deny', 'ask']).default('allow_workspace'),
  })
  .superRefine((fm, ctx) => {
    if (fm.kind === 'acp' && !fm.command) ctx.addIssue({ code: 'custom', path: ['command'], message: 'is required when kind is "acp"' });
    // An external agent's tool calls are its own: no hook of the service sees them.
    if (fm.kind === 'acp' && fm.hooks) ctx.addIssue({ code: 'custom', path: ['hooks'], message: 'is for model definitions, not kind "acp"' });
    // An external agent reads neither this service's system prompt nor its tools' folders.
    for (const key of ['skills', 'memory'] as const) {
      if (fm.kind === 'acp' && fm[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'is for model definitions, not kind "acp"' });
    }
  });

const isMcp = (t: string) => t.startsWith('mcp__');
const withoutMcp = (tools: string[]) => tools.filter((t) => !isMcp(t));

export interface AgentFileError {
  file: string;
  /** The definition's `name`, when its front matter has one. */
  name?: string;
  field: string;
  message: string;
}

/**
 * Loads every `*.md` definition of `dir` (a missing folder is no error). A broken file is
 * reported (file, field, why) and skipped; the others load.
 */
export function loadAgentFiles(dir: string, names: ModelNames): { definitions: AgentDefinition[]; errors: AgentFileError[] } {
  const definitions: AgentDefinition[] = [];
  const errors: AgentFileError[] = [];
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.md'))
      .sort();
  } catch {
    return { definitions, errors };
  }
  for (const name of files) {
    const file = path.join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      const vfile = new VFile({ path: file, value: readFileSync(file, 'utf8') });
      matter(vfile, { strip: true });
      const parsed = agentFileSchema.safeParse(vfile.data.matter ?? {});
      if (!parsed.success) {
        const named = (vfile.data.matter as { name?: unknown } | undefined)?.name;
        for (const issue of parsed.error.issues) {
          errors.push({ file, ...(typeof named === 'string' && { name: named }), field: issue.path.join('.') || '(front matter)', message: issue.message });
        }
        continue;
      }
      const fm = parsed.data;
      if (RESERVED_TYPES.has(fm.name)) {
        errors.push({ file, field: 'name', message: `"${fm.name}" is reserved` });
        continue;
      }
      if (fm.kind === 'acp') {
        if (fm.outcome) {
          errors.push({ file, field: 'outcome', message: 'an ACP agent calls no complete to check: outcome is for model agents' });
          continue;
        }
        definitions.push({
          type: fm.name,
          description: fm.description,
          kind: 'acp',
          // The agent picks its own model; a `model` here only names it in records (for prices).
          model: (Array.isArray(fm.model) ? fm.model[0] : fm.model) ?? null,
          maxSteps: fm.maxSteps ?? 1,
          tools: [],
          instructions: String(vfile.value).trim(),
          compactionModel: 'inherit',
          compactAtTokens: DEFAULT_COMPACT_AT_TOKENS,
          acp: { command: fm.command!, args: fm.args, env: fm.env, permission: fm.permission },
          // What the agent reaches: its provider's host among them (absent: the host's network).
          ...(fm.network && { network: fm.network }),
          ...(fm.image && { image: fm.image }),
        });
        continue;
      }
      definitions.push({
        type: fm.name,
        description: fm.description,
        kind: 'model',
        // A list: the first runs; the others, in turn, after a provider error outlived its retries.
        model: resolveModelName(Array.isArray(fm.model) ? fm.model[0] : fm.model, names),
        ...(Array.isArray(fm.model) && fm.model.length > 1 && { fallbackModels: fm.model.slice(1).map((m) => resolveModelName(m, names)) }),
        maxSteps: fm.maxSteps ?? 50,
        ...(fm.maxDepth && { maxDepth: fm.maxDepth }),
        ...(fm.background && { background: true }),
        tools: resolveTools(fm.tools && withoutMcp(fm.tools), fm.disallowedTools && withoutMcp(fm.disallowedTools)),
        ...(fm.mcpServers && { mcpServers: fm.mcpServers }),
        ...(fm.network && { network: fm.network }),
        ...(fm.image && { image: fm.image }),
        ...(fm.outcome && { outcome: fm.outcome }),
        ...(fm.tools && { mcpAllow: fm.tools.filter(isMcp) }),
        ...(fm.disallowedTools?.some(isMcp) && { mcpDeny: fm.disallowedTools.filter(isMcp) }),
        instructions: String(vfile.value).trim(),
        temperature: fm.temperature,
        ...(fm.effort && { effort: fm.effort }),
        ...(fm.topP !== undefined && { topP: fm.topP }),
        ...(fm.maxOutputTokens && { maxOutputTokens: fm.maxOutputTokens }),
        compactionModel: resolveCompactionModel(fm.compactionModel, names),
        compactAtTokens: fm.compactAtTokens ?? DEFAULT_COMPACT_AT_TOKENS,
        ...(fm.permissions && { permissions: fm.permissions }),
        ...(fm.omitProjectInstructions && { omitProjectInstructions: true }),
        ...(fm.hooks && HOOK_EVENTS.some((e) => fm.hooks![e]?.length) && { hooks: fm.hooks }),
        ...(fm.skills?.length && { skills: fm.skills }),
        ...(fm.memory && { memory: fm.memory }),
      });
    } catch (err) {
      errors.push({ file, field: '(front matter)', message: (err as Error).message.split('\n')[0] });
    }
  }
  return { definitions, errors };
}
