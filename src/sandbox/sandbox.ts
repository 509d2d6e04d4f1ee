import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createCommandLimiter, type CommandLimiter } from './command-cgroup.ts';
import { isInside } from '../workspace/path-guard.ts';
import type { Workspace } from '../workspace/workspace.ts';
import { spawnGroup, type SpawnedGroup } from './spawn-group.ts';
import { bashArgv, HOST_ENV, isRefusedName, SYSTEM_PATH, systemProgram } from './host-programs.ts';
import type { CommandResult } from './command-output.ts';
import { runCommand, type Launch, type RunCommandOptions } from './run-command.ts';

export type { Launch } from './run-command.ts';

export type SandboxMode = 'auto' | 'bwrap' | 'none';

/** One bash command to run: what runCommand takes but how it is started, which the sandbox decides. */
export type CommandSpec = Omit<RunCommandOptions, 'launch' | 'limiter'>;

/**
 * How workspace commands are run: inside bubblewrap, bare, in a container per task run
 * (container-sandbox.ts), or not at all (the sandbox asked for cannot be had).
 */
export interface Sandbox {
  kind: 'bwrap' | 'none' | 'container' | 'unavailable';
  /** Why commands cannot run, when `kind` is `unavailable`. */
  reason?: string;
  /**
   * How to start `argv` (its program by absolute path, or a name looked up inside) confined to
   * `workspace`, as a host process (MCP command servers, ACP agents); a container has none (`start`).
   */
  wrap(workspace: string, argv: string[], extra?: WrapExtra): Launch;
  /**
   * Starts a long-lived program (an MCP command server, an ACP agent) confined to `workspace`, its
   * stdio piped; absent: it is started on the host as `wrap` says (startProgram).
   */
  start?(workspace: string, argv: string[], extra: WrapExtra): SpawnedGroup;
  /** Runs one bash command confined to `workspace` (bash, shell tasks, hooks, verify, ACP terminals). */
  run(workspace: string, command: CommandSpec, extra?: WrapExtra): Promise<CommandResult>;
  /** Caps each command's processes and memory (cgroups where the kernel offers them). */
  limiter?: CommandLimiter;
  /** The sandbox of one task run (a container: the run's own, made at its first command); absent: this one. */
  forRun?(run: SandboxRun): RunSandbox;
  /** Before the first run (the service's start): the engine reached, what a killed instance left removed. */
  prepare?(): Promise<void>;
  /** At the service's end: what its runs still hold removed. */
  close?(): Promise<void>;
}

/** What a task run's sandbox is made for: the task, its image and its workspace (with its task folders). */
export interface SandboxRun {
  taskId: string;
  /** The definition's `image`; SANDBOX_IMAGE otherwise. */
  image?: string;
  workspace: Workspace;
}

/** A task run's sandbox, released when the run ends however it ends. */
export interface RunSandbox extends Sandbox {
  release(): Promise<void>;
  /** Why the run's commands could not run at all (SANDBOX=container: the engine stopped answering), or null. */
  fault?(): string | null;
}

/** What an external agent process needs beyond a command's confinement. */
export interface WrapExtra {
  /** Keep the host's network (an ACP agent reaches its own model); commands never get it. */
  network?: boolean;
  /**
   * Variables set for the program, besides PATH, HOME, LANG and TERM, which the service sets. Names
   * that choose programs or load code (PATH, LD_*, BASH_ENV, ...: host-programs.ts) are dropped.
   */
  env?: Record<string, string>;
  /** HOME for the program (the agent's scratch home); the workspace otherwise. */
  home?: string;
  /** Further host folders bound writable (the agent's scratch home). */
  writable?: string[];
  /**
   * Host folders bound read-only at places inside the workspace (a task's `.skills/<name>` and
   * `.memory`): `dest` must be a real folder there already (task-folders.ts prepares it).
   */
  readOnly?: Array<{ source: string; dest: string }>;
  /** Where the program starts (`options.cwd`, a real folder inside the workspace); the workspace otherwise. */
  cwd?: string;
  /**
   * The task's egress proxy (`network: { allow }`): its socket's folder is bound in, a forwarder
   * listens on 127.0.0.1:`port` inside the sandbox's own network namespace and relays to it, and
   * the proxy variables point there.
   */
  egress?: { dir: string; port: number };
}

/**
 * Starts a long-lived program (an MCP command server, an ACP agent) confined to `workspace`, its
 * stdio piped: in a container (SANDBOX=container) an exec in the run's container, else a host
 * process group under the sandbox's launcher.
 */
export function startProgram(sandbox: Sandbox, workspace: string, argv: string[], extra: WrapExtra & { cwd: string }): SpawnedGroup {
  if (sandbox.start) return sandbox.start(workspace, argv, extra);
  const launch = sandbox.wrap(workspace, argv, extra);
  return spawnGroup({ argv: launch.argv, cwd: extra.cwd, env: launch.env });
}

/** Where the egress proxy's folder appears inside the sandbox. */
export const EGRESS_INSIDE = '/tmp/.subagentd-egress';

/** 127.0.0.1:<port> relayed to the proxy's Unix socket: `relay(socket, port, listening)`. */
const RELAY = `const net=require('net');
const relay=(sock,port,listening)=>net.createServer(c=>{const u=net.connect(sock);c.pipe(u);u.pipe(c);c.on('error',()=>u.destroy());u.on('error',()=>c.destroy());}).listen(Number(port),'127.0.0.1',listening);`;

/**
 * The forwarder, run by the service's own Node inside the sandbox before the command (so before its
 * ulimits): 127.0.0.1:<port> relayed to the proxy's Unix socket; then the command, whose exit it
 * passes on. Arguments: socket, port, the command's argv.
 */
export const FORWARDER = `${RELAY}
const {spawn}=require('child_process'),os=require('os');
const [sock,port,...argv]=process.argv.slice(1);
relay(sock,port,()=>{const ch=spawn(argv[0],argv.slice(1),{stdio:'inherit'});
for(const g of ['SIGTERM','SIGINT','SIGHUP'])process.on(g,()=>ch.kill(g));
ch.on('exit',(code,sig)=>process.exit(code??128+(os.constants.signals[sig]??0)));});`;

/**
 * The same relay alone, for a sandbox whose commands share one network namespace (a container):
 * it says `ready` on stdout once it listens, and lives until the sandbox ends. Arguments: socket, port.
 */
export const RELAY_ALONE = `${RELAY}
const [sock,port]=process.argv.slice(1);
relay(sock,port,()=>process.stdout.write('ready\\n'));`;

/** The proxy variables curl, npm, pip and git read. */
function proxyEnv(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: 'localhost,127.0.0.1', no_proxy: 'localhost,127.0.0.1' };
}

export interface SandboxOptions {
  mode: SandboxMode;
  /** Host folders hidden from commands (the service's own files: database, config, other workspaces). */
  hide: string[];
  maxProcesses: number;
  maxFileBytes: number;
  maxMemoryBytes: number;
  /** Size of the command's private /tmp (a tmpfs, so it is RAM). */
  tmpBytes: number;
}

/** Size of the empty tmpfs that masks each hidden host folder. */
const MASK_BYTES = 1024 * 1024;

/** Host folders that commands never see, whatever the deployment. */
const ALWAYS_HIDDEN = ['/root', '/home', '/run', '/var', '/mnt', '/media', '/srv'];

function bwrapWorks(bwrap: string | null): string | null {
  if (!bwrap) return `bwrap is not installed (looked in ${SYSTEM_PATH})`;
  const probe = mkdtempSync(path.join(tmpdir(), 'subagentd-bwrap-'));
  try {
    const r = spawnSync(bwrap, bwrapArgs(probe, [], MASK_BYTES, ['true']), { timeout: 5000, encoding: 'utf8', env: HOST_ENV });
    if (r.error) return `bwrap could not be run: ${r.error.message}`;
    if (r.status !== 0) return `bwrap failed (exit ${r.status}): ${r.stderr.trim()}`;
    return null;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/**
 * bubblewrap arguments: the host root read-only, the service's folders hidden, a private /tmp of
 * `tmpBytes`,
 * the workspace the only writable place, every namespace unshared (no network, own PIDs, so
 * background children die with the sandbox), a clean environment, a new session (no terminal
 * injection), and death with the service.
 */
function bwrapArgs(workspace: string, hide: string[], tmpBytes: number, argv: string[], extra: WrapExtra = {}): string[] {
  // Only existing folders can be masked (the root is read-only), and never one holding the system.
  const masks = [...new Set([...ALWAYS_HIDDEN, ...hide])].filter((p) => !isInside(p, '/usr') && !isInside(p, '/etc') && existsSync(p));
  return [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    ...masks.flatMap((m) => ['--size', String(MASK_BYTES), '--tmpfs', m]),
    '--size',
    String(tmpBytes),
    '--tmpfs',
    '/tmp',
    // Read-only: a socket is connected to all the same, and a command cannot fill the host's folder.
    ...(extra.egress ? ['--ro-bind', extra.egress.dir, EGRESS_INSIDE] : []),
    '--bind',
    workspace,
    workspace,
    ...(extra.writable ?? []).flatMap((p) => ['--bind', p, p]),
    // After the workspace's bind, so they lie over it; read-only whatever the folder's own modes say.
    ...(extra.readOnly ?? []).flatMap((b) => ['--ro-bind', b.source, b.dest]),
    '--unshare-all',
    ...(extra.network ? ['--share-net'] : []),
    // No capability inside, whoever runs the service: as root bwrap keeps them all otherwise, and
    // CAP_SYS_ADMIN lifts the masks above (umount) and shows the host's files behind them.
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    '--chdir',
    extra.cwd ?? workspace,
    '--clearenv',
    ...Object.entries(programEnv(workspace, extra)).flatMap(([k, v]) => ['--setenv', k, v]),
    '--',
    ...(extra.egress ? [process.execPath, '-e', FORWARDER, `${EGRESS_INSIDE}/proxy.sock`, String(extra.egress.port)] : []),
    ...argv,
  ];
}

/**
 * The whole environment of a confined program: the service's PATH, HOME, LANG and TERM, then the
 * variables asked for except those that choose programs or load code.
 */
export function programEnv(workspace: string, extra: WrapExtra): Record<string, string> {
  const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: extra.home ?? workspace, LANG: 'C.UTF-8', TERM: 'dumb' };
  for (const [k, v] of Object.entries(extra.env ?? {})) if (!isRefusedName(k)) env[k] = v;
  // Set last: a command's own variables cannot point the proxy elsewhere.
  if (extra.egress) Object.assign(env, proxyEnv(extra.egress.port));
  return env;
}

/**
 * Decides once, at start, how commands run. `auto` uses bubblewrap when it works here and
 * otherwise refuses commands (with the reason); `none` runs them bare; `bwrap` is `auto` that
 * the caller treats as fatal when unavailable.
 */
export function createSandbox(opts: SandboxOptions): Sandbox {
  const limiter = createCommandLimiter({ maxProcesses: opts.maxProcesses, maxMemoryBytes: opts.maxMemoryBytes });
  const ulimits = [
    // RLIMIT_NPROC binds a non-root service user (the Docker image); root is exempt by the kernel.
    `ulimit -u ${opts.maxProcesses} 2>/dev/null`,
    // bash counts -f in 1024-byte blocks.
    `ulimit -f ${Math.floor(opts.maxFileBytes / 1024)}`,
    // Without a memory cgroup, the address space is the only cap left.
    ...(limiter.memory ? [] : [`ulimit -v ${Math.floor(opts.maxMemoryBytes / 1024)}`]),
  ];
  const limits = (argv: string[]) => bashArgv(`${ulimits.join('; ')}; exec "$@"`, 'sandbox', ...argv);
  /** A command as runCommand runs it, started the way `wrap` says. */
  const runWith =
    (wrap: Sandbox['wrap']): Sandbox['run'] =>
    (workspace, command, extra) =>
      runCommand({ ...command, launch: (argv) => wrap(workspace, argv, extra), limiter });
  if (opts.mode === 'none') {
    // Bare on the host: the program itself is a host process, so it gets the service's variables only.
    // No network namespace to confine it either: an egress policy has nothing to enforce (its
    // proxy is not offered; the command has the host's network, as every command does here).
    const wrap: Sandbox['wrap'] = (ws, argv, extra = {}) => ({ argv: limits(argv), env: programEnv(ws, { ...extra, egress: undefined }) });
    return { kind: 'none', wrap, run: runWith(wrap), limiter };
  }
  const bwrap = systemProgram('bwrap');
  const problem = bwrapWorks(bwrap);
  if (problem) {
    return unavailable(`${problem}. Install bubblewrap (apt-get install bubblewrap) or set BASH_SANDBOX=none to run commands without a sandbox`);
  }
  // Hide every host folder the service uses, except a folder that holds the system itself.
  const hide = opts.hide.map((p) => path.resolve(p)).filter((p) => p !== '/');
  // The launcher gets HOST_ENV; whatever the program is given is set inside by --setenv.
  const wrap: Sandbox['wrap'] = (workspace, argv, extra) => ({
    argv: [bwrap!, ...bwrapArgs(workspace, hide, opts.tmpBytes, limits(argv), extra)],
    env: { ...HOST_ENV },
  });
  return { kind: 'bwrap', wrap, run: runWith(wrap), limiter };
}

/** A sandbox that runs nothing, saying why. */
export function unavailable(reason: string): Sandbox {
  const refuse = () => {
    throw new Error('sandbox unavailable');
  };
  return { kind: 'unavailable', reason, wrap: refuse, run: refuse };
}
