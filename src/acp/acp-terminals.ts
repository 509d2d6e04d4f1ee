import { randomUUID } from 'node:crypto';
import { createOutputCapture } from '../sandbox/output-capture.ts';
import { requestedEnv } from '../sandbox/host-programs.ts';
import type { CommandResult } from '../sandbox/command-output.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { Workspace } from '../workspace/workspace.ts';

/** A single-quoted shell word. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

interface Terminal {
  capture: ReturnType<typeof createOutputCapture>;
  stop: AbortController;
  done: Promise<CommandResult>;
  result: CommandResult | null;
}

export interface TerminalRequest {
  command: string;
  args?: string[] | null;
  env?: Array<{ name: string; value: string }> | null;
  cwd?: string | null;
  outputByteLimit?: number | null;
}

/**
 * The terminals an ACP agent asks the service to run: each is a workspace command exactly as the
 * `bash` tool runs one (the sandbox without network, its own process group, the command timeout,
 * output kept within a budget), addressed by an id until the agent releases it. All are killed
 * when the task ends.
 */
export function createTerminals(opts: {
  workspace: Workspace;
  sandbox: Sandbox;
  timeoutMs: number;
  maxOutputBytes: number;
  onActivity: () => void;
  /** The task's egress proxy, as for \`bash\`; else no network. */
  egress?: { dir: string; port: number };
}) {
  const terminals = new Map<string, Terminal>();
  /** Terminals one task may hold at once (released ones do not count). */
  const MAX_TERMINALS = 16;

  function get(id: string): Terminal {
    const t = terminals.get(id);
    if (!t) throw new Error(`unknown terminal ${id}`);
    return t;
  }

  return {
    async create(req: TerminalRequest): Promise<string> {
      if (opts.sandbox.kind === 'unavailable') throw new Error(`commands cannot run here: ${opts.sandbox.reason}`);
      if (terminals.size >= MAX_TERMINALS) throw new Error(`at most ${MAX_TERMINALS} terminals at once: release one first`);
      const cwd = req.cwd ? (await opts.workspace.resolve(req.cwd, { mustExist: true })).real : opts.workspace.cwd;
      const command = req.args?.length ? `${req.command} ${req.args.map(quote).join(' ')}` : req.command;
      const limit = Math.min(req.outputByteLimit ?? opts.maxOutputBytes, opts.maxOutputBytes);
      const capture = createOutputCapture(limit);
      const stop = new AbortController();
      // The agent's variables are set for its command only (inside the sandbox); the sandbox drops
      // those that choose programs or load code.
      const env = requestedEnv(req.env ?? []);
      const id = `term_${randomUUID()}`;
      const terminal: Terminal = {
        capture,
        stop,
        result: null,
        done: opts.sandbox.run(
          opts.workspace.root,
          {
            command,
            cwd,
            timeoutMs: opts.timeoutMs,
            maxOutputBytes: limit,
            signal: stop.signal,
            onOutput: (chunk) => {
              capture.write(chunk);
              opts.onActivity();
            },
          },
          { env, cwd, ...(opts.egress && { egress: opts.egress }) },
        ),
      };
      void terminal.done.then((r) => (terminal.result = r));
      terminals.set(id, terminal);
      return id;
    },
    output(id: string) {
      const t = get(id);
      const out = t.capture.result();
      return {
        output: out.text,
        truncated: out.truncated,
        exitStatus: t.result ? { exitCode: t.result.exitCode, signal: null } : null,
      };
    },
    async waitForExit(id: string) {
      const r = await get(id).done;
      return { exitCode: r.exitCode, signal: null };
    },
    kill(id: string) {
      get(id).stop.abort();
    },
    release(id: string) {
      const t = terminals.get(id);
      t?.stop.abort();
      terminals.delete(id);
    },
    async closeAll() {
      for (const t of terminals.values()) t.stop.abort();
      await Promise.all([...terminals.values()].map((t) => t.done));
      terminals.clear();
    },
  };
}
