/**
 * Which tools a task gets and how each call is decided: its definition's tools, narrowed by its
 * own `options.tools` and permission rules and by every ancestor's (nesting: a child never gets
 * more than its parent).
 */
import { AppError } from '../errors/app-error.ts';
import type { ClientTool, NetworkPolicy } from '../shapes/task.ts';
import { clientTool } from '../tools/client-tool.ts';
import { createCompleteTool } from '../tools/complete.ts';
import type { WorkspaceTool } from '../tools/tool-types.ts';
import { workspaceTools } from '../tools/workspace-tools.ts';
import type { AgentDefinition } from './agent-definition.ts';
import { LEAD_TOOLS } from './agent-registry.ts';
import type { Permissions } from '../shapes/permissions.ts';
import { allowedHosts, narrowHosts, type AllowedHosts } from '../network/policy.ts';
import path from 'node:path';
import { decideCall, deniedWhole, needsSubjects, PATH_RULE_TOOLS, type CallDecision } from './permissions.ts';
import type { ShellParser } from './shell-commands.ts';

/** What one task of a tree says of its own tools: its definition's and its request's. */
export interface ToolScope {
  /** The definition's tools (`task` when it may start children). */
  tools: string[];
  /** `options.tools`: only these (absent: all of the definition's). */
  only?: string[];
  permissions: Array<Permissions | undefined>;
  network: { def: NetworkPolicy | undefined; task: NetworkPolicy | undefined };
}

/** The limits a task runs under: its own scope, then each ancestor's, nearest first. */
export interface ToolLimits {
  /** Every permission source of the chain; the strictest answer applies. */
  permissions: Array<Permissions | undefined>;
  /** Lists of tool names a tool must be on, each of them (the task's `options.tools`, each ancestor's tools). */
  lists: string[][];
  /** The hosts its commands may reach: its own policy narrowed by each ancestor's. */
  network: AllowedHosts | null;
  /** Some task of the chain narrowed its tools (`options.tools`). */
  narrowed: boolean;
}

/** The limits of a task whose scopes are `[own, parent, grandparent, ...]`. */
export function limitsOf(scopes: ToolScope[]): ToolLimits {
  const permissions = scopes.flatMap((s) => s.permissions);
  // An ancestor's definition bounds its children as its `options.tools` does (and it had the lead tools).
  const lists = scopes.flatMap((s, i) => [...(s.only ? [s.only] : []), ...(i > 0 ? [[...s.tools, ...LEAD_TOOLS]] : [])]);
  let network: AllowedHosts | null = allowedHosts(scopes[0].network.def, scopes[0].network.task);
  for (const s of scopes.slice(1)) network = narrowHosts(network, allowedHosts(s.network.def, s.network.task));
  return { permissions, lists, network, narrowed: scopes.some((s) => s.only !== undefined) };
}

/** Is a tool of the task's definition (or a caller's, an MCP server's) given to its model? */
export function offered(limits: ToolLimits, name: string): boolean {
  if (name === 'complete') return true;
  return !deniedWhole(limits.permissions, name) && limits.lists.every((list) => listed(list, name));
}

/**
 * The lead tools of a task that may start children, built by the run path: `task` (`canWait`:
 * `wait` is offered too, so it may start children in the background), and the three that reach
 * background children.
 */
export interface LeadToolMakers {
  task(canWait: boolean): WorkspaceTool;
  wait(): WorkspaceTool;
  send_input(): WorkspaceTool;
  close_agent(): WorkspaceTool;
}

/**
 * The tools a task's model is given: its definition's (each offered by `limits`; `complete` with
 * the task's output schema), the lead tools when it may start children (`lead`, built by the
 * run path with the kinds `childTypes` allows: `task`, and with it each of `wait`, `send_input`
 * and `close_agent` its limits offer), and the caller's own tools but not one its rules deny
 * whole. A call of any of them is decided when the model makes it (`callDecider`). MCP servers'
 * tools join when their servers are up (`mcpToolsOffered`).
 */
export function toolsOf(
  limits: ToolLimits,
  def: Pick<AgentDefinition, 'tools'>,
  opts: { outputSchema?: Record<string, unknown>; clientTools?: ClientTool[]; lead?: LeadToolMakers },
): WorkspaceTool[] {
  const tools = def.tools
    .filter((name) => offered(limits, name))
    .map((name) => (name === 'complete' ? createCompleteTool(opts.outputSchema) : workspaceTools[name]))
    .filter((t) => t !== undefined);
  if (opts.lead && offered(limits, 'task')) {
    const reach = (['wait', 'send_input', 'close_agent'] as const).filter((name) => offered(limits, name));
    tools.push(opts.lead.task(reach.includes('wait')), ...reach.map((name) => opts.lead![name]()));
  }
  for (const spec of opts.clientTools ?? []) if (!deniedWhole(limits.permissions, spec.name)) tools.push(clientTool(spec));
  return tools;
}

/**
 * The MCP tools a task is given: named (or their server, `mcp__<server>`) by the definition's
 * `tools` when it lists any, not by its `disallowedTools`, and offered by the task's limits.
 */
export function mcpToolsOffered<T extends { name: string }>(limits: ToolLimits, def: Pick<AgentDefinition, 'mcpAllow' | 'mcpDeny'>, tools: T[]): T[] {
  return tools.filter((t) => (!def.mcpAllow || listed(def.mcpAllow, t.name)) && !listed(def.mcpDeny ?? [], t.name) && offered(limits, t.name));
}

/** The definition's tools a task keeps when `options.tools` narrows them (`complete` aside: it always stays). */
export const offeredTools = (defTools: readonly string[], only: readonly string[] | undefined) =>
  defTools.filter((name) => name !== 'complete' && (!only || only.includes(name)));

/** An approved call's replaced input (`updatedInput`, an approval's `input`) must fit its tool's schema: else a 400. */
export function checkInput(toolName: string, input: Record<string, unknown>): void {
  const tool = toolName === 'complete' ? createCompleteTool(undefined) : workspaceTools[toolName];
  const parsed = tool?.inputSchema.safeParse(input);
  if (parsed && !parsed.success) {
    const details = parsed.error.issues.map((i) => ({ field: ['body', 'input', ...i.path.map(String)].join('.'), message: i.message }));
    throw new AppError(
      400,
      'invalid_request',
      `invalid request: the input does not fit the ${toolName} tool (${details.map((d) => d.field).join(', ')})`,
      details,
    );
  }
}

/** A name on a list: itself, or an MCP tool of a server listed (`mcp__github` lists `mcp__github__x`). */
export const listed = (list: string[], name: string) => list.some((e) => name === e || name.startsWith(`${e}__`));

/**
 * Which definitions a task's `task` tool may start. A shell child runs a command: only where bash
 * is offered. An ACP agent acts through its own tools, which no rule of the service sees: only
 * for a task whose whole chain has no permission rule and no tool list, with bash, write_file and
 * edit_file offered (its network is still its ancestors', narrowed: run-external.ts).
 */
export function childTypeOffered(limits: ToolLimits, def: Pick<AgentDefinition, 'kind'>): boolean {
  if (def.kind === 'shell') return offered(limits, 'bash');
  if (def.kind !== 'acp') return true;
  const unruled = limits.permissions.every((rules) => rules === undefined || Object.keys(rules).length === 0);
  return unruled && !limits.narrowed && ['bash', 'write_file', 'edit_file'].every((name) => offered(limits, name));
}

/** bash's whole command, as the permission rules match it. */
export const commandOf = (input: unknown) =>
  typeof input === 'object' && input !== null && typeof (input as { command?: unknown }).command === 'string' ? (input as { command: string }).command : '';

/** Where a task's file tools resolve paths: the workspace's real root and working folder, and its task folders. */
export interface PathBase {
  root: string;
  cwd: string;
  /** `.memory` and `.skills/<name>`: where each is seen (`at`) and its real path. */
  folders?: Array<{ at: string; root: string }>;
}

/** Where a real path is seen, relative to the workspace root: inside a task folder (`.memory/`, `.skills/<name>/`), by its place. */
function shownOf(base: PathBase, real: string): string {
  const folder = base.folders?.find((f) => real === f.root || real.startsWith(`${f.root}${path.sep}`));
  return folder ? path.join(folder.at, path.relative(folder.root, real)) : path.relative(base.root, real) || '.';
}

/**
 * The workspace-relative path a file tool's input names, resolved as text (`docs/../secret` is
 * `secret`; links are the tool's to check, `pathChecker`); null for an input that is not a path.
 */
function namedPath(base: PathBase, input: unknown): string | null {
  const p = typeof input === 'object' && input !== null ? (input as { path?: unknown }).path : undefined;
  if (typeof p !== 'string' || p.includes('\0')) return null;
  return path.relative(base.root, path.resolve(base.cwd, p)) || '.';
}

/**
 * How the task's calls are decided: by the permission rules of the whole chain. A bash line is
 * decided per simple command when a rule needs it (`shell`: the parser, loaded when
 * `needsSubjects` says so); a file tool with path rules by the path it names. A `task` call that
 * starts a shell child is also a bash call of its command: the rules a parent's own bash obeys
 * hold for the commands it has a child run.
 */
export function callDecider(limits: ToolLimits, opts: { shell: ShellParser | null; shellTypes: ReadonlySet<string>; base: PathBase }) {
  const { shell, shellTypes, base } = opts;
  const bash = async (line: string): Promise<CallDecision> => decideCall(limits.permissions, 'bash', shell ? await shell.commands(line) : undefined);
  return async ({ toolName, input }: { toolName: string; input: unknown }): Promise<CallDecision> => {
    if (toolName === 'bash') return bash(commandOf(input));
    if (PATH_RULE_TOOLS.has(toolName)) {
      const named = namedPath(base, input);
      return decideCall(limits.permissions, toolName, named === null ? null : [named]);
    }
    const own = decideCall(limits.permissions, toolName);
    const child = input as { subagent_type?: unknown; prompt?: unknown } | null;
    if (toolName !== 'task' || !child || !shellTypes.has(String(child.subagent_type))) return own;
    const run = offered(limits, 'bash') ? await bash(typeof child.prompt === 'string' ? child.prompt : '') : { decision: 'deny' as const, rule: 'bash' };
    return STRICTER[run.decision] > STRICTER[own.decision] ? run : own;
  };
}

const STRICTER = { allow: 0, ask: 1, deny: 2 } as const;

/**
 * The check a file tool makes once its path is resolved (`real`: links followed): the rules must
 * say of the file it will really open what they said of the path it named, or less. A link from
 * `plans/x` to `src/main.ts` is refused when the rules allow `plans/**` only. Null when no source
 * has a path rule.
 */
export function pathChecker(limits: ToolLimits, base: PathBase): ((toolName: string, input: string, real: string) => void) | null {
  if (![...PATH_RULE_TOOLS].some((tool) => needsSubjects(limits.permissions, tool))) return null;
  return (toolName, input, real) => {
    const named = namedPath(base, { path: input });
    const target = shownOf(base, real);
    if (named === target) return;
    const asNamed = decideCall(limits.permissions, toolName, named === null ? null : [named]);
    const asReal = decideCall(limits.permissions, toolName, [target]);
    if (STRICTER[asReal.decision] > STRICTER[asNamed.decision] || asReal.decision === 'deny') {
      throw new Error(
        `"${input}" leads through a link to "${target}", where ${toolName} is ${asReal.decision === 'deny' ? 'denied' : 'not allowed without asking'} by the permission rule "${asReal.rule}"`,
      );
    }
  };
}

export { needsSubjects };
