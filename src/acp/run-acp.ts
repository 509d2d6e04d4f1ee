import { SERVICE_VERSION } from '../version.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable, type Readable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk/unstable';
import type { AgentDefinition } from '../definitions/agent-definition.ts';
import type { TokenUsage } from '../shapes/task.ts';
import { createOutputCapture } from '../sandbox/output-capture.ts';
import { openInside, readHead, replaceContent } from '../workspace/safe-open.ts';
import { startProgram, type Sandbox } from '../sandbox/sandbox.ts';
import type { Workspace } from '../workspace/workspace.ts';
import { MAX_LOADED_BYTES } from '../tools/tool-types.ts';
import { createTerminals } from './acp-terminals.ts';

/** What the task sees of the agent's session, as it happens. */
export interface AcpObserver {
  text(text: string): void;
  toolCall(call: { toolCallId: string; toolName: string; input: unknown }): void;
  toolResult(result: { toolCallId: string; toolName: string; output: unknown; isError: boolean }): void;
  plan(entries: Array<{ content: string; priority: string; status: string }>): void;
  /** Anything from the agent: it is alive. */
  activity(): void;
  /**
   * `permission: ask`: the agent's permission request, as an approval for the caller; resolves
   * with the caller's (or the timeout's) decision. The agent waits meanwhile, and is not stalled.
   */
  askPermission?(request: { toolCallId: string; toolName: string; input: unknown }): Promise<'allow' | 'deny'>;
}

export interface AcpRunOptions {
  def: AgentDefinition & { acp: NonNullable<AgentDefinition['acp']> };
  prompt: string;
  workspace: Workspace;
  sandbox: Sandbox;
  signal: AbortSignal;
  /** No message from the agent for this long ends the task. */
  stallTimeoutMs: number;
  /** Commands the agent runs in terminals: the `bash` tool's limits. */
  commandTimeoutMs: number;
  maxOutputBytes: number;
  /** The service's environment: only the definition's `env` names are taken from it. */
  serviceEnv: Record<string, string | undefined>;
  observer: AcpObserver;
  /** Time to answer `session/cancel` before the process group is killed. */
  cancelGraceMs?: number;
  /**
   * What the agent and its terminals reach: `host`, the host's network (a definition without
   * `network`: the agent reaches its own model); `none`; or the task's egress proxy.
   */
  network: 'host' | 'none' | { dir: string; port: number };
}

export type AcpFailure = { code: 'agent_failed' | 'agent_crashed' | 'agent_protocol_error' | 'agent_stalled' | 'agent_refused'; message: string };

export interface AcpOutcome {
  stopReason: acp.StopReason | null;
  /** The agent's last message: text after its last tool call (or all its text). */
  summary: string;
  /** Workspace paths it wrote through fs/write_text_file or reported as edit locations. */
  written: string[];
  usage: TokenUsage | null;
  failure: AcpFailure | null;
}

const STDERR_BYTES = 8 * 1024;
/** How long an agent's process may take to answer `initialize` (at least the stall timeout). */
const AGENT_START_MS = 30_000;
/** The agent's text kept for the summary (the end of it), however much it streams. */
const MAX_SUMMARY_CHARS = 64 * 1024;
const keepTail = (s: string) => (s.length > MAX_SUMMARY_CHARS ? s.slice(-MAX_SUMMARY_CHARS) : s);

/**
 * Runs one task in an external Agent Client Protocol agent, through the official SDK as the
 * client: one process (in its own process group, inside the sandbox with network, a scratch HOME
 * and only the allowed variables) and one session per task, `cwd` = the workspace, the prompt as
 * the session's only prompt. The agent's file and terminal requests are served inside the
 * workspace with the tools' confinement; its permission requests are answered by the
 * definition's policy. Cancel sends `session/cancel` and kills the group after a grace.
 */
export async function runAcp(opts: AcpRunOptions): Promise<AcpOutcome> {
  const { def, workspace, observer } = opts;
  const home = mkdtempSync(path.join(tmpdir(), 'subagentd-acp-'));
  const env: Record<string, string> = {};
  for (const name of def.acp.env) {
    const value = opts.serviceEnv[name];
    if (value !== undefined) env[name] = value;
  }
  // The definition's variables reach the agent only (inside the sandbox); the launcher is started
  // by absolute path with the environment the sandbox builds.
  const net = opts.network;
  // In a container (SANDBOX=container) it is an exec in the run's container, from the image's
  // programs, HOME the container's private /tmp, and no network but the task's proxy.
  const {
    child,
    exited,
    kill: killGroup,
  } = startProgram(opts.sandbox, workspace.root, [def.acp.command, ...def.acp.args], {
    network: net === 'host',
    ...(typeof net === 'object' && { egress: net }),
    env,
    home,
    writable: [home],
    cwd: workspace.cwd,
  });
  const stderr = createOutputCapture(STDERR_BYTES);
  child.stderr.on('data', (b: Buffer) => stderr.write(b));

  const written = new Set<string>();
  const tools = new Map<string, string>();
  let text = '';
  let afterLastTool = '';
  let lastHeard = Date.now();
  /** Permission requests waiting for the caller's answer. */
  let waitingOnCaller = 0;
  const heard = () => {
    lastHeard = Date.now();
    observer.activity();
  };
  const terminals = createTerminals({
    workspace,
    sandbox: opts.sandbox,
    timeoutMs: opts.commandTimeoutMs,
    maxOutputBytes: opts.maxOutputBytes,
    onActivity: heard,
    ...(typeof opts.network === 'object' && { egress: opts.network }),
  });
  const noteLocations = (locations: acp.ToolCallLocation[] | null | undefined, kind: string | null | undefined) => {
    if (kind === 'edit' || kind === 'delete' || kind === 'move') for (const l of locations ?? []) written.add(l.path);
  };

  const app = acp
    .client({ name: 'subagentd' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      heard();
      const u = params.update;
      switch (u.sessionUpdate) {
        case 'agent_message_chunk':
          if (u.content.type === 'text') {
            text = keepTail(text + u.content.text);
            afterLastTool = keepTail(afterLastTool + u.content.text);
            observer.text(u.content.text);
          }
          break;
        case 'tool_call':
          tools.set(u.toolCallId, u.title || u.kind || 'tool');
          afterLastTool = '';
          noteLocations(u.locations, u.kind);
          observer.toolCall({ toolCallId: u.toolCallId, toolName: u.title || u.kind || 'tool', input: u.rawInput ?? null });
          break;
        case 'tool_call_update':
          noteLocations(u.locations, u.kind);
          if (u.status === 'completed' || u.status === 'failed') {
            observer.toolResult({
              toolCallId: u.toolCallId,
              toolName: tools.get(u.toolCallId) ?? u.title ?? 'tool',
              output: u.rawOutput ?? contentText(u.content) ?? null,
              isError: u.status === 'failed',
            });
          }
          break;
        case 'plan':
          observer.plan(u.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status })));
          break;
      }
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      heard();
      let decision: 'allow' | 'deny' = def.acp.permission === 'deny' ? 'deny' : 'allow';
      if (def.acp.permission === 'ask' && observer.askPermission) {
        // The caller decides; the agent's silence meanwhile is no stall.
        waitingOnCaller += 1;
        try {
          const call = params.toolCall;
          decision = await observer.askPermission({
            toolCallId: call.toolCallId,
            toolName: call.title || tools.get(call.toolCallId) || call.kind || 'tool',
            input: call.rawInput ?? null,
          });
        } finally {
          waitingOnCaller -= 1;
          heard();
        }
      }
      const wanted = decision === 'deny' ? ['reject_once', 'reject_always'] : ['allow_once', 'allow_always'];
      const option = wanted.map((k) => params.options.find((o) => o.kind === k)).find(Boolean);
      return { outcome: option ? { outcome: 'selected', optionId: option.optionId } : { outcome: 'cancelled' } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      heard();
      const target = await workspace.resolve(params.path, { mustExist: true });
      const opened = await openInside(workspace.root, target.real, params.path, 'read', workspace.calls);
      try {
        if (opened.stat.size > MAX_LOADED_BYTES)
          throw new Error(`"${params.path}" is ${opened.stat.size} bytes, over the ${MAX_LOADED_BYTES} bytes a read may load`);
        const content = (await readHead(opened, MAX_LOADED_BYTES)).toString('utf8');
        if (!params.line && !params.limit) return { content };
        const lines = content.split('\n');
        const from = Math.max((params.line ?? 1) - 1, 0);
        return { content: lines.slice(from, params.limit ? from + params.limit : undefined).join('\n') };
      } finally {
        await opened.handle.close();
      }
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      heard();
      if (Buffer.byteLength(params.content) > MAX_LOADED_BYTES) throw new Error(`content over the ${MAX_LOADED_BYTES} bytes a write may hold`);
      const target = await workspace.resolve(params.path, { mustExist: false });
      const opened = await openInside(workspace.root, target.real, params.path, 'write', workspace.calls);
      try {
        await replaceContent(opened, params.content);
      } finally {
        await opened.handle.close();
      }
      written.add(target.absolute);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, async ({ params }) => {
      heard();
      return { terminalId: await terminals.create(params) };
    })
    .onRequest(acp.methods.client.terminal.output, ({ params }) => terminals.output(params.terminalId))
    .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => terminals.waitForExit(params.terminalId))
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      terminals.kill(params.terminalId);
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, ({ params }) => {
      terminals.release(params.terminalId);
      return {};
    });

  // A line that is not JSON ends the task at once (the SDK would answer it and wait on).
  const lines = jsonLinesOnly(child.stdout, (line) => {
    fail({ code: 'agent_protocol_error', message: `the agent wrote a line that is not JSON-RPC: ${JSON.stringify(line.slice(0, 200))}` });
    connection.close();
  });
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, lines));
  const agent = connection.agent;
  let sessionId: string | null = null;
  let failure: AcpFailure | null = null;
  const fail = (f: AcpFailure) => {
    failure ??= f;
  };

  // The prompt turn races the process's end, a stall and the task's abort. Starting a program
  // (a runtime loading, a launcher fetching) is no model's silence: until it answers `initialize`
  // it has AGENT_START_MS, or the stall timeout when that is longer.
  let started = false;
  const startMs = Math.max(opts.stallTimeoutMs, AGENT_START_MS);
  const stallTimer = setInterval(
    () => {
      const silent = Date.now() - lastHeard;
      if (!started && silent > startMs) {
        fail({ code: 'agent_stalled', message: `the agent did not answer initialize within ${startMs} ms` });
        connection.close();
      } else if (started && waitingOnCaller === 0 && silent > opts.stallTimeoutMs) {
        fail({ code: 'agent_stalled', message: `the agent sent nothing for ${opts.stallTimeoutMs} ms` });
        connection.close();
      }
    },
    Math.min(1000, opts.stallTimeoutMs),
  );
  const onAbort = () => {
    if (sessionId) void agent.notify(acp.methods.agent.session.cancel, { sessionId }).catch(() => {});
    // After the grace the process group goes, whatever the agent did with the cancel.
    setTimeout(() => {
      killGroup('SIGKILL');
      connection.close();
    }, opts.cancelGraceMs ?? 2000).unref();
  };
  opts.signal.addEventListener('abort', onAbort, { once: true });
  let answered = false;
  const exitFailure = (e: Awaited<typeof exited>): AcpFailure =>
    e.error
      ? { code: 'agent_failed', message: `the agent could not be started: ${e.error.message}` }
      : // 126/127: the shell that execs the command found no such program, or could not run it.
        e.code === 126 || e.code === 127
        ? { code: 'agent_failed', message: `the agent command "${def.acp.command}" could not be run (exit ${e.code})` }
        : { code: 'agent_crashed', message: `the agent exited (${e.signal ?? `code ${e.code}`}) before it answered` };
  void exited.then((e) => {
    if (answered || opts.signal.aborted) return;
    fail(exitFailure(e));
    connection.close();
  });

  let stopReason: acp.StopReason | null = null;
  let usage: TokenUsage | null = null;
  try {
    heard();
    await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: 'subagentd', version: SERVICE_VERSION },
    });
    started = true;
    heard();
    const session = await agent.request(acp.methods.agent.session.new, { cwd: workspace.cwd, mcpServers: [] });
    sessionId = session.sessionId;
    if (opts.signal.aborted) onAbort();
    const prompt = def.instructions ? `${def.instructions}\n\n${opts.prompt}` : opts.prompt;
    const response = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: prompt }] });
    answered = true;
    stopReason = response.stopReason;
    usage = usageOf(response.usage);
    if (stopReason === 'refusal') fail({ code: 'agent_refused', message: 'the agent refused the prompt' });
  } catch (err) {
    // A request fails when the connection closes: tell a crash (the process ended) from the rest.
    const ended = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 300))]);
    if (ended && !opts.signal.aborted) fail(exitFailure(ended));
    if (!opts.signal.aborted) fail({ code: 'agent_protocol_error', message: `the agent broke the protocol: ${(err as Error).message}` });
  } finally {
    answered = true;
    clearInterval(stallTimer);
    opts.signal.removeEventListener('abort', onAbort);
    connection.close();
    await terminals.closeAll();
    killGroup('SIGTERM');
    const gone = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 1000))]);
    if (!gone) killGroup('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
  const final = failure as AcpFailure | null;
  const tail = stderr.result().text.trim();
  return {
    stopReason,
    summary: afterLastTool.trim() || text.trim(),
    written: [...written],
    usage,
    failure: final && tail ? { ...final, message: `${final.message}; its stderr: ${tail.slice(-2000)}` } : final,
  };
}

/**
 * The complete lines of `input` that parse as JSON, as the web stream the SDK reads; `onGarbage`
 * is called for any other line. Made by hand rather than with `Readable.toWeb`: Node's adapter
 * may still enqueue data it had buffered after the SDK cancelled the stream at the end of the
 * turn, which throws out of an event handler (an agent that keeps writing after its answer
 * would take the process down). Here nothing is enqueued once the stream is closed or
 * cancelled, and `input` is paused while the SDK has not read what it has.
 */
function jsonLinesOnly(input: Readable, onGarbage: (line: string) => void): ReadableStream<Uint8Array> {
  let partial = '';
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let open = true;
  let onData: (chunk: Buffer) => void = () => {};
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        onData = (chunk) => {
          if (!open) return;
          const text = partial + decoder.decode(chunk, { stream: true });
          const parts = text.split('\n');
          partial = parts.pop()!;
          if (partial.length > acp.DEFAULT_MAX_MESSAGE_BYTES) {
            onGarbage(`${partial.slice(0, 200)}… (a line of over ${acp.DEFAULT_MAX_MESSAGE_BYTES} bytes)`);
            partial = '';
          }
          let json = '';
          for (const line of parts) {
            if (!line.trim()) continue;
            try {
              JSON.parse(line);
              json += `${line}\n`;
            } catch {
              onGarbage(line);
            }
          }
          // onGarbage may have closed the connection, and with it this stream.
          if (!open || json === '') return;
          controller.enqueue(encoder.encode(json));
          if ((controller.desiredSize ?? 1) <= 0) input.pause();
        };
        const end = (err?: Error) => {
          if (!open) return;
          open = false;
          if (err) controller.error(err);
          else controller.close();
        };
        input.on('data', onData);
        input.once('end', () => end());
        input.once('error', (err) => end(err));
      },
      pull() {
        input.resume();
      },
      cancel() {
        open = false;
        input.off('data', onData);
        // What the agent still writes is read and dropped: its process is stopped next.
        input.resume();
      },
    },
    { highWaterMark: 16 },
  );
}

/** Text of a tool call's content blocks, when it has some. */
function contentText(content: acp.ToolCallContent[] | null | undefined): string | null {
  const texts = (content ?? []).flatMap((c) => (c.type === 'content' && c.content.type === 'text' ? [c.content.text] : []));
  return texts.length ? texts.join('\n') : null;
}

/** The usage an agent reported with its answer (ACP's unstable `usage`), in the service's fields. */
function usageOf(u: acp.Usage | null | undefined): TokenUsage | null {
  if (!u) return null;
  return {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    totalTokens: u.totalTokens,
    cachedInputTokens: u.cachedReadTokens ?? 0,
    reasoningTokens: u.thoughtTokens ?? 0,
  };
}
