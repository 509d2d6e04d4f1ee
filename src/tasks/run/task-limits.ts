/** The limits a task runs under, read up its chain of parents (nesting). */
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import { limitsOf, type ToolLimits, type ToolScope } from '../../definitions/tool-set.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { RunnerDeps } from './run-context.ts';

/** Deeper than any `maxDepth` allows: a guard against a cycle in stored rows, never reached. */
const MAX_CHAIN = 64;

/**
 * The task's tool limits: its definition and request, then every ancestor's (each row read from
 * the store, so a child resumed on another instance finds the same limits). An ancestor whose
 * definition is gone bounds its children to no tool but `complete`.
 */
export async function taskLimits(deps: Pick<RunnerDeps, 'store' | 'registry'>, row: TaskRow, def: AgentDefinition, body: CreateTaskBody): Promise<ToolLimits> {
  const scopes = [scopeOf(def, body)];
  let parentId = row.parentTask;
  for (let hops = 0; parentId && hops < MAX_CHAIN; hops++) {
    const parent = await deps.store.getById(parentId);
    if (!parent) break;
    scopes.push(scopeOf(deps.registry.get(parent.subagentType), parent.request));
    parentId = parent.parentTask;
  }
  return limitsOf(scopes);
}

function scopeOf(def: AgentDefinition | undefined, body: CreateTaskBody): ToolScope {
  return {
    tools: def ? [...def.tools, ...Object.keys(def.mcpServers ?? {}).map((name) => `mcp__${name}`)] : [],
    only: body.options?.tools,
    permissions: [def?.permissions, body.options?.permissions],
    network: { def: def?.network, task: body.options?.network },
  };
}
