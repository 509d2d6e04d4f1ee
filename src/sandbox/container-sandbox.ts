import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { prepareMountPoints } from '../workspace/task-folders.ts';
import { isInside } from '../workspace/path-guard.ts';
import { BASH, openExec, spawnExec } from './container-exec.ts';
import { engineCall, EngineTimeout } from './engine-call.ts';
import { bashArgv } from './host-programs.ts';
import { createCommandOutput, type CommandResult } from './command-output.ts';
import { EGRESS_INSIDE, programEnv, RELAY_ALONE, type CommandSpec, type RunSandbox, type Sandbox, type SandboxRun, type WrapExtra } from './sandbox.ts';

/** How the Docker Engine API is reached (DOCKER_HOST and its TLS files, read at start). */
export type EngineAddress = { socketPath: string } | { host: string; port: number; tls: { ca: Buffer; cert: Buffer; key: Buffer } | null };

export interface ContainerSandboxOptions {
  engine: EngineAddress;
  /** SANDBOX_IMAGE: a definition without `image` runs its commands in it. */
  image: string;
  /** Containers are labelled with it; a start removes those its instance left (killed, crashed). */
  instanceId: string;
  maxProcesses: number;
  maxFileBytes: number;
  maxMemoryBytes: number;
  tmpBytes: number;
  /** SANDBOX_CPUS: CPUs a run's container may use (absent: no cap). */
  cpus: number | null;
  /** SANDBOX_ENGINE_TIMEOUT_MS: the longest one engine call may take (see engine-call.ts). */
  engineTimeoutMs: number;
  logger: Logger;
}

/** The label every sandbox container carries: the instance that made it. */
export const INSTANCE_LABEL = 'io.subagentd.instance';
const TASK_LABEL = 'io.subagentd.task';

/**
 * The longest the service's end waits for the removal of its runs' containers: under the 15 s
 * within which a SIGTERM ends the process. What an engine has not removed by then, the next
 * start's sweep removes (by INSTANCE_LABEL).
 */
const CLOSE_WAIT_MS = 5_000;

/**
 * Where the service's own Node is bound read-only in a container whose commands have an egress
 * proxy: it runs the relay from 127.0.0.1:<port> to the proxy's socket (RELAY_ALONE).
 */
const NODE_INSIDE = '/tmp/.subagentd-node';

/** The longest the relay may take to listen once its exec has started. */
const RELAY_READY_MS = 15_000;

/**
 * SANDBOX=container: every command of a task run in one container of its own, made at the run's
 * first command through the Docker Engine API (Docker's or podman's) from the definition's image:
 * the workspace (or worktree) its only writable mount at the same path, the task's folders
 * read-only over it, the root read-only, a private /tmp, no network (but a relay to the task's
 * egress proxy when it has one), no capability, the service's
 * processes, memory, file and CPU caps, the clean environment bubblewrap gives. Commands are execs
 * in it; the container is removed when the run ends, and at start whatever a killed instance left.
 */
export function createContainerSandbox(opts: ContainerSandboxOptions): Sandbox {
  // The client is loaded by the first run that needs it: a process in bwrap mode never holds it.
  let client: Promise<Docker> | null = null;
  const engine = () =>
    (client ??= import('dockerode').then(
      ({ default: Client }) =>
        new Client(
          'socketPath' in opts.engine
            ? { socketPath: opts.engine.socketPath, host: undefined }
            : { host: opts.engine.host, port: opts.engine.port, protocol: opts.engine.tls ? 'https' : 'http', ...(opts.engine.tls ?? {}) },
        ),
    ));
  const live = new Set<RunSandbox>();
  /** Containers being removed: a run's end does not wait for it (about 0.2 s), the service's end does. */
  const removing = new Set<Promise<void>>();
  let swept: Promise<void> | null = null;
  const sweep = () =>
    (swept ??= (async () => {
      const docker = await engine();
      const bound = opts.engineTimeoutMs;
      await engineCall('a ping', bound, (abortSignal) =>
        // dockerode's types omit ping's options; its code passes the signal on.
        (docker as unknown as { ping(o: { abortSignal: AbortSignal }): Promise<unknown> }).ping({ abortSignal }),
      ).catch((err: unknown) => {
        if (err instanceof EngineTimeout) throw err;
        throw new Error(`SANDBOX=container but the engine at DOCKER_HOST does not answer: ${(err as Error).message}`);
      });
      const left = await engineCall('the list of the containers a stopped instance left', bound, (abortSignal) =>
        docker.listContainers({ all: true, filters: { label: [`${INSTANCE_LABEL}=${opts.instanceId}`] }, abortSignal }),
      );
      // One the engine does not remove in time is tried again by the next start: the start goes on.
      const removed = await Promise.all(
        left.map((c) =>
          removeContainer(docker.getContainer(c.Id), bound).then(
            () => 1,
            () => 0,
          ),
        ),
      );
      const count = removed.reduce<number>((a, b) => a + b, 0);
      if (count > 0) opts.logger.warn({ containers: count }, 'removed the sandbox containers a stopped instance left');
      if (count < left.length)
        opts.logger.warn({ containers: left.length - count }, 'could not remove sandbox containers a stopped instance left; the next start tries again');
    })().catch((err: unknown) => {
      // Asked again by the next run: the engine may be back by then.
      swept = null;
      throw err;
    }));
  const refuse = () => {
    throw new Error('commands run in a task run’s container (SANDBOX=container)');
  };
  return {
    kind: 'container',
    wrap: refuse,
    run: refuse,
    prepare: sweep,
    forRun(run) {
      const box = runSandbox(engine, opts, run, sweep, (removal) => {
        live.delete(box);
        removing.add(removal);
        void removal.finally(() => removing.delete(removal));
      });
      live.add(box);
      return box;
    },
    async close() {
      await Promise.all([...live].map((b) => b.release()));
      let timer: NodeJS.Timeout | undefined;
      const waited = await Promise.race([
        Promise.all(removing).then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.min(CLOSE_WAIT_MS, opts.engineTimeoutMs)))),
      ]);
      clearTimeout(timer);
      if (!waited) opts.logger.warn({ containers: removing.size }, 'sandbox containers not removed yet at the end; the next start removes them');
    },
  };
}

function runSandbox(
  engine: () => Promise<Docker>,
  opts: ContainerSandboxOptions,
  run: SandboxRun,
  sweep: () => Promise<void>,
  ended: (removal: Promise<void>) => void,
): RunSandbox {
  const root = run.workspace.root;
  /** The container, its image's PATH, and whether its relay to the task's egress proxy listens. */
  let made: Promise<{ container: Docker.Container; path: string | null; egress: boolean }> | null = null;
  let released = false;
  /** Aborted by the run's release: a relay still starting is not waited for. */
  const ending = new AbortController();
  /** Why commands can no longer run in this run: the engine stopped answering. */
  let fault: string | null = null;
  const noteFault = (err: unknown) => {
    if (err instanceof EngineTimeout) fault ??= err.message;
  };
  const bound = opts.engineTimeoutMs;
  // The run's first command makes it; its egress (the run's: every command of a run has the same) is bound in.
  const make = (egress: WrapExtra['egress']) =>
    (made ??= (async () => {
      // After the sweep (a run resumed at start must not lose its container to it).
      await sweep();
      const docker = await engine();
      const image = run.image ?? opts.image;
      const info = await engineCall('an image’s inspect', bound, () => docker.getImage(image).inspect()).catch((err: unknown) => {
        if (err instanceof EngineTimeout) throw err;
        throw new Error(`the sandbox image ${image} is not on the engine (${(err as Error).message}): pull or build it there`);
      });
      // The image's own PATH (a JDK's, a Python's), else the one bubblewrap gives.
      const imagePath = (info.Config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5) ?? null;
      const folders = run.workspace.folders ?? [];
      if (folders.length > 0) await prepareMountPoints(run.workspace);
      const container = await engineCall('a container’s creation', bound, (abortSignal) =>
        docker.createContainer({
          abortSignal,
          Image: image,
          Entrypoint: ['sleep'],
          Cmd: ['infinity'],
          Labels: { [INSTANCE_LABEL]: opts.instanceId, [TASK_LABEL]: run.taskId },
          User: `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`,
          WorkingDir: root,
          Hostname: 'sandbox',
          Env: [],
          NetworkDisabled: true,
          HostConfig: {
            NetworkMode: 'none',
            ReadonlyRootfs: true,
            Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${opts.tmpBytes},mode=1777` },
            Mounts: [
              { Type: 'bind', Source: root, Target: root, ReadOnly: false },
              ...folders.map((f) => ({ Type: 'bind' as const, Source: f.root, Target: path.join(root, f.at), ReadOnly: true })),
              // The proxy's socket, and the Node that relays to it (the engine reads both on its own host).
              ...(egress
                ? [
                    { Type: 'bind' as const, Source: egress.dir, Target: EGRESS_INSIDE, ReadOnly: true },
                    { Type: 'bind' as const, Source: process.execPath, Target: NODE_INSIDE, ReadOnly: true },
                  ]
                : []),
            ],
            CapDrop: ['ALL'],
            SecurityOpt: ['no-new-privileges'],
            Init: true,
            Memory: opts.maxMemoryBytes,
            MemorySwap: opts.maxMemoryBytes,
            PidsLimit: opts.maxProcesses,
            ...(opts.cpus && { NanoCpus: Math.round(opts.cpus * 1e9) }),
            // Explicit: an engine's defaults may be above what it may set (podman on these machines).
            Ulimits: [
              { Name: 'nofile', Soft: 1024, Hard: 1024 },
              { Name: 'nproc', Soft: opts.maxProcesses, Hard: opts.maxProcesses },
            ],
          },
        }),
      );
      // Released while it was being made: it goes at once.
      if (released) {
        await removeContainer(container, bound).catch(() => {});
        throw new Error('the task run has ended');
      }
      try {
        await engineCall('a container’s start', bound, (abortSignal) => container.start({ abortSignal }));
        if (egress) await startRelay(container, opts, image, egress.port, ending.signal);
      } catch (err) {
        // Made but not started, or without the network its task was given: not left behind.
        await removeContainer(container, bound).catch(() => {});
        throw err;
      }
      return { container, path: imagePath, egress: egress !== undefined };
    })());
  const box: RunSandbox = {
    kind: 'container',
    // Nothing of a task runs on the host: long-lived programs are execs too (startProgram uses `start`).
    wrap: () => {
      throw new Error('a container sandbox starts no host process: its programs run in the container');
    },
    // A long-lived program (an MCP command server, an ACP agent): an exec whose stdio stays open, HOME the run's /tmp.
    start(workspace, argv, extra) {
      return spawnExec(async (onStdout, onStderr) => {
        if (!isInside(workspace, root)) throw new Error(`${workspace} is not the run's workspace`);
        if (fault) throw new Error(fault);
        try {
          const c = await make(extra.egress);
          const env = commandEnv(workspace, { ...extra, home: '/tmp', writable: undefined }, c);
          return await openExec(c.container, opts, { argv, env, cwd: extra.cwd ?? workspace, stdin: true, onStdout, onStderr });
        } catch (err) {
          noteFault(err);
          throw err;
        }
      });
    },
    async run(workspace, command, extra) {
      if (!isInside(workspace, root)) throw new Error(`${workspace} is not the run's workspace`);
      const started = Date.now();
      // An engine that did not answer once is not waited on again by the run's next commands.
      if (fault) return failedToStart(started, fault);
      try {
        // A cancel or the service's end does not wait for the container: its removal follows the run's release.
        const c = await untilAborted(make(extra?.egress), command.signal);
        if (!c) return { ...failedToStart(started, 'the command was stopped before its container started'), exitCode: 137, aborted: true };
        return await execIn(c.container, opts, command, commandEnv(workspace, extra ?? {}, c), started);
      } catch (err) {
        noteFault(err);
        return failedToStart(started, (err as Error).message);
      }
    },
    fault: () => fault,
    // The container goes (its processes killed) without the run waiting for the engine to finish.
    release() {
      if (released) return Promise.resolve();
      released = true;
      ending.abort();
      ended(
        (async () => {
          const c = await made?.catch((err: unknown) => {
            noteFault(err);
            return null;
          });
          if (c) await removeContainer(c.container, bound);
          // Its creation was not answered in time: the engine may still make it, labelled with the task.
          else if (made && fault) await removeByTask(await engine(), opts, run.taskId);
        })().catch((err: unknown) => opts.logger.warn({ err, taskId: run.taskId }, 'could not remove a sandbox container; the next start removes it')),
      );
      return Promise.resolve();
    },
  };
  return box;
}

/** What `p` gives, or null as soon as `signal` aborts (`p` goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T | null> {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve(null);
  let onAbort = () => {};
  const aborted = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([p, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** Removes a container and what runs in it, bounded. */
function removeContainer(container: Docker.Container, bound: number): Promise<unknown> {
  return engineCall('a container’s removal', bound, (abortSignal) => container.remove({ force: true, abortSignal }));
}

/** Removes the containers of one task run of this instance, found by their labels. */
async function removeByTask(docker: Docker, opts: ContainerSandboxOptions, taskId: string): Promise<void> {
  const labels = [`${INSTANCE_LABEL}=${opts.instanceId}`, `${TASK_LABEL}=${taskId}`];
  const found = await engineCall('the list of a task’s containers', opts.engineTimeoutMs, (abortSignal) =>
    docker.listContainers({ all: true, filters: { label: labels }, abortSignal }),
  );
  await Promise.all(found.map((c) => removeContainer(docker.getContainer(c.Id), opts.engineTimeoutMs)));
}

/**
 * bubblewrap's environment for the command, the image's PATH when it has one; the proxy variables
 * only where the container's relay listens.
 */
function commandEnv(workspace: string, extra: WrapExtra, made: { path: string | null; egress: boolean }): string[] {
  const env = programEnv(workspace, made.egress ? extra : { ...extra, egress: undefined });
  if (made.path) env.PATH = made.path;
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

/**
 * Starts the relay from the container's 127.0.0.1:`port` to the task's egress proxy, with the
 * service's own Node (bound in read-only: an image needs no Node, but a C library the service's
 * Node runs on), and waits until it listens. It lives until the container is removed; commands
 * share the container's network namespace, so one relay serves them all.
 */
async function startRelay(container: Docker.Container, opts: ContainerSandboxOptions, image: string, port: number, ending: AbortSignal): Promise<void> {
  let out = '';
  let said = '';
  let listening = () => {};
  const ready = new Promise<true>((resolve) => (listening = () => resolve(true)));
  const note = (b: Buffer) => {
    if (said.length < 2048) said += b.toString('utf8');
  };
  const relay = await openExec(container, opts, {
    // One V8 worker thread: the relay's threads count against the container's process cap.
    argv: [NODE_INSIDE, '--v8-pool-size=1', '-e', RELAY_ALONE, `${EGRESS_INSIDE}/proxy.sock`, String(port)],
    env: ['HOME=/tmp', 'LANG=C.UTF-8'],
    cwd: '/tmp',
    stdin: false,
    onStdout: (b) => {
      note(b);
      if (out.length < 16) out += b.toString('utf8');
      if (out.startsWith('ready\n')) listening();
    },
    onStderr: note,
  });
  let timer: NodeJS.Timeout | undefined;
  const up = await Promise.race([
    ready,
    relay.ended.then(() => false),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), RELAY_READY_MS))),
    untilAborted(new Promise<false>(() => {}), ending).then(() => false),
  ]);
  clearTimeout(timer);
  if (up) return;
  relay.kill();
  if (ending.aborted) throw new Error('the task run has ended');
  throw new Error(
    `the task's network (network: { allow }) could not start in the sandbox image ${image}: the relay (${process.execPath}, the service's Node) ` +
      `did not listen (${said.trim().slice(0, 500) || 'it said nothing'}); it needs the engine on the service's host and an image with a C library that Node runs on (glibc)`,
  );
}

function failedToStart(started: number, message: string): CommandResult {
  return {
    exitCode: 127,
    stdout: '',
    stderr: `failed to start: ${message}`,
    truncated: { stdout: false, stderr: false },
    timedOut: false,
    aborted: false,
    durationMs: Date.now() - started,
  };
}

/**
 * One command as an exec in the run's container: its output captured within the budget, its
 * session killed at its timeout or its abort (a second exec), its exit code read once it ends.
 */
async function execIn(
  container: Docker.Container,
  opts: ContainerSandboxOptions,
  command: CommandSpec,
  env: string[],
  started: number,
): Promise<CommandResult> {
  const output = createCommandOutput(command.maxOutputBytes, command.onOutput);
  const withInput = command.input !== undefined;
  const exec = await openExec(container, opts, {
    argv: [BASH, ...bashArgv(command.command).slice(1)],
    env,
    cwd: command.cwd,
    stdin: withInput,
    onStdout: output.stdout,
    onStderr: output.stderr,
  });
  if (command.input !== undefined) exec.stream.end(command.input);
  let timedOut = false;
  let aborted = false;
  const timer = setTimeout(() => {
    timedOut = true;
    exec.kill();
  }, command.timeoutMs);
  const onAbort = () => {
    aborted = true;
    exec.kill();
  };
  if (command.signal?.aborted) onAbort();
  command.signal?.addEventListener('abort', onAbort, { once: true });
  const code = await exec.ended;
  clearTimeout(timer);
  command.signal?.removeEventListener('abort', onAbort);
  return output.result({ code, timedOut, aborted, started });
}
