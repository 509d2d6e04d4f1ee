import type { z } from 'zod';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { ResolvedPath } from '../workspace/path-guard.ts';
import type { Workspace } from '../workspace/workspace.ts';

export interface ToolLimits {
  bashTimeoutMs: number;
  bashMaxOutputBytes: number;
}

export interface ToolContext {
  workspace: Workspace;
  signal: AbortSignal;
  limits: ToolLimits;
  /** How commands are confined. */
  sandbox: Sandbox;
  /** Told when a tool shows a sign of life (a command's output). */
  onActivity?: () => void;
  /** The task's egress proxy, when its network policy allows hosts (`network: { allow }`). */
  egress?: { dir: string; port: number };
  /**
   * With path rules (`write_file(plans/**)`): throws when the file a tool resolved (`real`, links
   * followed) is one the rules refuse where they allowed the path it named (`input`).
   */
  checkPath?: (toolName: string, input: string, real: string) => void;
}

/** A call of a tool as the loop makes it. */
export interface ToolCall {
  toolCallId: string;
  step?: number;
  /** Its index among the calls of its step that reached their tools. */
  index?: number;
}

/**
 * A workspace tool: schema, description and an `execute` that either returns what the model reads
 * or throws an Error whose message the model reads (the run goes on).
 */
export interface WorkspaceTool<I = unknown> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  /** The input's JSON Schema as the provider is sent it, when it is not made from `inputSchema` (a caller-run tool's). */
  jsonSchema?: Record<string, unknown>;
  /** Run by the caller (`options.clientTools`): a call pauses the task until the caller posts its result; `execute` is never called. */
  caller?: boolean;
  readOnly: boolean;
  /**
   * `call`: the model's call: its id, and its place (the step, its index among the step's calls),
   * what makes a call of a step run again after a resume find its first effect (the model may give
   * it another id).
   */
  execute(input: I, ctx: ToolContext, call?: ToolCall): Promise<unknown>;
}

export function defineTool<I>(tool: WorkspaceTool<I>): WorkspaceTool<I> {
  return tool;
}

/**
 * Most bytes of one workspace file a tool holds in memory (edit_file, write_file): beyond it a
 * tool answers with an error instead of running the process out of heap.
 */
export const MAX_LOADED_BYTES = 10 * 1024 * 1024;

/** How a resolved path's folders are looked up: its task folder's calls, or the workspace's. */
export function callsOf(ws: Workspace, target: ResolvedPath) {
  return (target.folder && ws.folders?.find((f) => f.at === target.folder!.at)?.calls) ?? ws.calls;
}
