import { z } from 'zod';
import { imageRefSchema } from '../config/config.ts';
import { permissionsSchema } from '../shapes/permissions.ts';
import { hooksSchema } from '../hooks/hook-spec.ts';
import { memoryScopeSchema } from '../shapes/memory.ts';
import { effortSchema, maxOutputTokensSchema, networkPolicySchema, outcomeSpecSchema, topPSchema } from '../shapes/task.ts';

/**
 * An MCP server of a definition: a command started per task inside its sandbox (`env`: names of
 * the service's variables it gets), or a Streamable HTTP URL (`headers` values may name the
 * service's variables as `${NAME}`).
 */
export const mcpServerSpecSchema = z.union([
  z.object({
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')).optional(),
  }),
  z.object({ url: z.url({ protocol: /^https?$/ }), headers: z.record(z.string(), z.string()).optional() }),
]);
export type McpServerSpec = z.infer<typeof mcpServerSpecSchema>;

/** A resolved subagent definition: what a task of this type runs with. */
export const agentDefinitionSchema = z.object({
  type: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/),
  description: z.string().min(1),
  /** `model` runs an agent loop; `shell` runs one command with no model; `acp` runs an external ACP agent. */
  kind: z.enum(['model', 'shell', 'acp']),
  /** A model id, already resolved from `inherit` / `small`; null for shell. */
  model: z.string().nullable(),
  /** Models tried in turn after a provider error outlived its retries (the front matter's `model` list, after its first). */
  fallbackModels: z.array(z.string()).optional(),
  maxSteps: z.number().int().min(1),
  /** Nesting: with N > 0 its model gets a `task` tool starting child tasks, N levels deep at most (the root's limit holds for all). */
  maxDepth: z.number().int().min(0).max(5).optional(),
  /** Nesting: its `task` tool starts children in the background unless a call says `run_in_background: false` (seed 001 `background`). */
  background: z.boolean().optional(),
  /** Tool names the subagent gets, `complete` included for model-backed ones. */
  tools: z.array(z.string()),
  instructions: z.string(),
  /** Skills preloaded (SKILLS_DIR/<name>/SKILL.md): their bodies in the system prompt, their folders read-only at `.skills/<name>/`. */
  skills: z.array(z.string()).optional(),
  /** A persistent folder its tasks see at `.memory/`: per user, per parent task or per definition (within a tenant). */
  memory: memoryScopeSchema.optional(),
  /** Leave the workspace's `AGENTS.md` out of its system prompt (seed 001 `omitClaudeMd`; the built-in explore does). */
  omitProjectInstructions: z.boolean().optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** The model's reasoning setting, in its provider's own terms (a task's `options.effort` replaces it). */
  effort: effortSchema.optional(),
  topP: topPSchema.optional(),
  maxOutputTokens: maxOutputTokensSchema.optional(),
  /** The model that writes compaction summaries: `inherit` (the task's own model) or a model id. */
  compactionModel: z.string(),
  /** Compact once a step's input tokens reach this. */
  compactAtTokens: z.number().int().min(1),
  /** Permission rules of its tool calls (the front matter's `permissions`); every call allowed without them. */
  permissions: permissionsSchema.optional(),
  /** What its commands reach (the front matter's `network`): nothing (absent, `none`) or the hosts of `allow`. */
  network: networkPolicySchema.optional(),
  /** SANDBOX=container: the image its commands run in (SANDBOX_IMAGE otherwise). */
  image: imageRefSchema.optional(),
  /** Commands or URLs told of its tool calls before and after they run, and of its `complete` (the front matter's `hooks`). */
  hooks: hooksSchema.optional(),
  /** How every task of it has its `complete` checked (the front matter's `outcome`); a task's own adds to it. */
  outcome: outcomeSpecSchema.optional(),
  /** MCP servers whose tools its model gets, by name (`mcp__<name>__<tool>`). */
  mcpServers: z.record(z.string(), mcpServerSpecSchema).optional(),
  /** Which MCP tools: names or `mcp__<server>` prefixes of the front matter's `tools` (absent: all), less those of `disallowedTools`. */
  mcpAllow: z.array(z.string()).optional(),
  mcpDeny: z.array(z.string()).optional(),
  /** For `kind: acp`: the agent process and how its requests are answered. */
  acp: z
    .object({
      command: z.string().min(1),
      args: z.array(z.string()),
      /** Names of service environment variables passed to the agent (nothing else is). */
      env: z.array(z.string()),
      /**
       * `allow_workspace`: permission requests are granted (the agent is confined anyway); `deny`:
       * refused; `ask`: each is an approval request for the caller (the agent waits for the answer).
       */
      permission: z.enum(['allow_workspace', 'deny', 'ask']),
    })
    .optional(),
});
export type AgentDefinition = z.infer<typeof agentDefinitionSchema>;

export const agentSummarySchema = agentDefinitionSchema.pick({
  type: true,
  kind: true,
  description: true,
  model: true,
  fallbackModels: true,
  effort: true,
  topP: true,
  maxOutputTokens: true,
  maxSteps: true,
  maxDepth: true,
  background: true,
  tools: true,
  compactionModel: true,
  compactAtTokens: true,
  permissions: true,
  network: true,
  image: true,
  outcome: true,
  omitProjectInstructions: true,
  skills: true,
  memory: true,
});

/** What `GET /agents` says of a hook: what it is told of and whether it is a command or a URL (never which). */
const hookListedSchema = z.object({ matcher: z.string(), type: z.enum(['command', 'url']) });

/**
 * What `GET /agents` says of a definition: its summary, its MCP servers by name only, its hooks by
 * matcher and type (no command, URL or variable).
 */
export function summaryOf(d: AgentDefinition) {
  const hooks = d.hooks && Object.entries(d.hooks).filter(([, list]) => list && list.length > 0);
  return {
    ...agentSummarySchema.parse(d),
    ...(d.mcpServers && { mcpServers: Object.keys(d.mcpServers) }),
    ...(hooks?.length && {
      hooks: Object.fromEntries(
        hooks.map(([event, list]) => [event, list.map((h) => ({ matcher: h.matcher ?? '*', type: h.command !== undefined ? 'command' : 'url' }))]),
      ),
    }),
  };
}
export const agentListedSchema = agentSummarySchema.extend({
  mcpServers: z.array(z.string()).optional().describe('its MCP servers, by name: their tools are offered as mcp__<name>__<tool>'),
  hooks: z
    .object({ PreToolUse: z.array(hookListedSchema).optional(), PostToolUse: z.array(hookListedSchema).optional(), Stop: z.array(hookListedSchema).optional() })
    .optional()
    .describe('its hooks by event: what each is told of, and whether it runs a command or calls a URL'),
});
