/** MCP servers of a definition (`mcpServers`): started for a task, their tools offered to its model as `mcp__<server>__<tool>`. */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { z } from 'zod';
import type { McpServerSpec } from '../definitions/agent-definition.ts';
import { compileOutputSchema } from '../tools/complete.ts';
import { createOutputCapture } from '../sandbox/output-capture.ts';
import { startProgram, type Sandbox } from '../sandbox/sandbox.ts';
import type { WorkspaceTool } from '../tools/tool-types.ts';
import { SERVICE_VERSION } from '../version.ts';
import { hostAllowed } from '../network/egress-proxy.ts';
import { resolveTarget, WebhookTargetError } from '../network/safe-target.ts';
import type { Workspace } from '../workspace/workspace.ts';

/** How long a server may take to start and answer `initialize` and `tools/list`. */
const START_MS = 30_000;
/** At most this many tools of one server are offered. */
const MAX_TOOLS_PER_SERVER = 100;
const STDERR_BYTES = 8 * 1024;
/** After a close, the process group gets this long before SIGKILL. */
const KILL_GRACE_MS = 2000;

/** A server that could not start, list its tools, or be reached: the task ends `mcp_server_failed`. */
export class McpServerFailed extends Error {
  readonly code = 'mcp_server_failed';
}

/** The tool name the model sees: `mcp__<server>__<tool>`, in the characters providers take (64 at most). */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

export interface McpRunOptions {
  workspace: Workspace;
  sandbox: Sandbox;
  serviceEnv: Record<string, string | undefined>;
  /** A call's time limit (BASH_TIMEOUT_MS) and the most of its output the model reads (BASH_MAX_OUTPUT_BYTES). */
  timeoutMs: number;
  maxOutputBytes: number;
  /** The task's egress proxy (`network: { allow }`), which command servers reach hosts through; else they have no network. */
  egress?: { dir: string; port: number };
  /**
   * A definition with `network`: its URL servers' hosts must be on `allow`, their addresses pass
   * the egress guard (no private, loopback or link-local address unless `allowPrivate`), and the
   * service connects to the address it checked. Without it (no `network`), URL servers are reached as named.
   */
  urlPolicy?: { allow: string[]; allowPrivate: boolean };
}

export interface McpSession {
  tools: WorkspaceTool[];
  /** Ends every server: clients closed, command servers' process groups killed. */
  close(): Promise<void>;
}

/**
 * Starts the definition's MCP servers for a task (a command server inside the task's sandbox: the
 * workspace as its folder, no network, only its listed variables; a URL server over Streamable
 * HTTP with headers from the service's variables), lists their tools and makes each a tool of the
 * task. Throws `McpServerFailed` (with the server's stderr tail) when one cannot start.
 */
export async function openMcpServers(servers: Record<string, McpServerSpec>, opts: McpRunOptions): Promise<McpSession> {
  const opened: Array<{ client: Client; stop: () => Promise<void> }> = [];
  const close = async () => {
    await Promise.allSettled(opened.map((o) => o.stop()));
  };
  try {
    const tools: WorkspaceTool[] = [];
    for (const [name, spec] of Object.entries(servers)) {
      const server = await connect(name, spec, opts);
      opened.push(server);
      for (const tool of server.tools) tools.push(asTaskTool(name, tool, server.client, server.stderrTail, opts));
    }
    return { tools, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function connect(name: string, spec: McpServerSpec, opts: McpRunOptions) {
  const client = new Client({ name: 'subagentd', version: SERVICE_VERSION });
  const pinned = 'url' in spec && opts.urlPolicy ? await pinnedFetch(name, new URL(spec.url), opts.urlPolicy) : null;
  const process_ = 'command' in spec ? startCommand(spec, opts) : null;
  const transport: Transport =
    'url' in spec
      ? new StreamableHTTPClientTransport(new URL(spec.url), {
          requestInit: { headers: headersOf(spec.headers, opts.serviceEnv) },
          ...(pinned && { fetch: pinned.fetch }),
        })
      : process_!.transport;
  const stderrTail = () => (process_ ? process_.stderr() : '');
  const stop = async () => {
    await client.close().catch(() => {});
    await process_?.stop();
    await pinned?.close();
  };
  try {
    const started = AbortSignal.timeout(START_MS);
    await client.connect(transport, { signal: started, timeout: START_MS });
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { signal: started, timeout: START_MS });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && tools.length < MAX_TOOLS_PER_SERVER);
    return { client, stop, stderrTail, tools: tools.slice(0, MAX_TOOLS_PER_SERVER) };
  } catch (err) {
    await stop();
    const tail = stderrTail().trim();
    throw new McpServerFailed(`MCP server "${name}" did not start: ${(err as Error).message}${tail ? `; its stderr ends with: ${tail}` : ''}`, {
      cause: err,
    });
  }
}

/**
 * A URL server under its definition's network policy: its host on the list, its address checked
 * once (the webhook guard), and a fetch that connects to that address only (a second lookup could
 * answer another: DNS rebinding).
 */
async function pinnedFetch(name: string, url: URL, policy: NonNullable<McpRunOptions['urlPolicy']>) {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  if (!hostAllowed(policy.allow, url.hostname, port))
    throw new McpServerFailed(
      `MCP server "${name}": ${url.hostname}:${port} is not on the definition's network allow-list (${policy.allow.join(', ') || 'empty'})`,
    );
  let target: { address: string; family: number };
  try {
    target = await resolveTarget(url, policy.allowPrivate);
  } catch (err) {
    const why = err instanceof WebhookTargetError ? `${err.message} (EGRESS_ALLOW_PRIVATE is off)` : `${url.hostname} could not be resolved`;
    throw new McpServerFailed(`MCP server "${name}": ${why}`);
  }
  const dispatcher = new Agent({ connect: { lookup: (_h, _o, callback) => callback(null, [{ address: target.address, family: target.family }]) } });
  return {
    fetch: ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch,
    close: () => dispatcher.close(),
  };
}

/** `${NAME}` in a URL server's header values, from the service's own variables (never from the model or the caller). */
function headersOf(headers: Record<string, string> | undefined, env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, n: string) => env[n] ?? '')]));
}

/**
 * A command server inside the task's sandbox, started by absolute path with the environment the
 * sandbox builds (its listed variables only), in its own process group; JSON-RPC over its stdio.
 */
function startCommand(spec: Extract<McpServerSpec, { command: string }>, opts: McpRunOptions) {
  const home = mkdtempSync(path.join(tmpdir(), 'subagentd-mcp-'));
  const env: Record<string, string> = {};
  for (const n of spec.env ?? []) {
    const value = opts.serviceEnv[n];
    if (value !== undefined) env[n] = value;
  }
  const argv = [spec.command, ...(spec.args ?? [])];
  const extra = { network: false, ...(opts.egress && { egress: opts.egress }), env, home, writable: [home], cwd: opts.workspace.cwd };
  const { child, exited, kill: killGroup } = startProgram(opts.sandbox, opts.workspace.root, argv, extra);
  const stderr = createOutputCapture(STDERR_BYTES);
  child.stderr.on('data', (b: Buffer) => stderr.write(b));
  const transport = stdioTransport(child);
  return {
    transport,
    stderr: () => stderr.result().text.slice(-STDERR_BYTES),
    async stop() {
      killGroup('SIGTERM');
      const grace = setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
      await exited;
      clearTimeout(grace);
      killGroup('SIGKILL'); // what it left behind in its group
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The MCP stdio transport over a process we started (the SDK's own would start it, with the host's PATH and no process group). */
function stdioTransport(child: ChildProcessWithoutNullStreams): Transport {
  const buffer = new ReadBuffer();
  const transport: Transport = {
    async start() {
      child.stdout.on('data', (chunk: Buffer) => {
        buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = buffer.readMessage();
          } catch (err) {
            transport.onerror?.(err as Error);
            continue;
          }
          if (message === null) break;
          transport.onmessage?.(message);
        }
      });
      child.once('exit', () => transport.onclose?.());
      child.once('error', (err) => transport.onerror?.(err));
    },
    send: (message) =>
      new Promise<void>((resolve, reject) => {
        if (!child.stdin.writable) return reject(new Error('the MCP server has exited'));
        child.stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
      }),
    async close() {
      child.stdin.end();
    },
  };
  return transport;
}

/**
 * One tool of a server as a tool of the task: its JSON Schema sent to the provider as given and
 * checked against the model's input (bounded, as caller-run tools' are; a schema that does not
 * compile is left to the server), its call limited by BASH_TIMEOUT_MS and the task's abort (the
 * server is told with `notifications/cancelled`), its output capped at BASH_MAX_OUTPUT_BYTES.
 */
function asTaskTool(server: string, tool: Tool, client: Client, stderrTail: () => string, opts: McpRunOptions): WorkspaceTool {
  const compiled = compileOutputSchema(tool.inputSchema);
  const inputSchema =
    'error' in compiled
      ? z.unknown()
      : z.unknown().superRefine((value, ctx) => {
          if (!compiled.validate(value)) ctx.addIssue({ code: 'custom', message: compiled.errorsText() });
        });
  const name = mcpToolName(server, tool.name);
  return {
    name,
    description: (tool.description ?? tool.title ?? tool.name).slice(0, 4000),
    inputSchema,
    jsonSchema: tool.inputSchema,
    readOnly: tool.annotations?.readOnlyHint === true,
    async execute(input, ctx) {
      let result: CallToolResult;
      try {
        result = (await client.callTool({ name: tool.name, arguments: (input ?? {}) as Record<string, unknown> }, undefined, {
          signal: ctx.signal,
          timeout: opts.timeoutMs,
          onprogress: () => ctx.onActivity?.(),
        })) as CallToolResult;
      } catch (err) {
        const tail = stderrTail().trim();
        throw new Error(`${name} failed: ${(err as Error).message}${tail ? `; the server's stderr ends with: ${tail.slice(-2000)}` : ''}`, {
          cause: err,
        });
      }
      const text = (result.content ?? [])
        .map((c) => (c.type === 'text' ? c.text : `[${c.type} content]`))
        .join('\n')
        .slice(0, opts.maxOutputBytes);
      if (result.isError) throw new Error(text || `${name} answered an error`);
      // Structured content as it is, unless it is larger than a command's output may be.
      const structured = result.structuredContent;
      if (structured !== undefined && JSON.stringify(structured).length <= opts.maxOutputBytes) return structured;
      return text;
    },
  };
}
