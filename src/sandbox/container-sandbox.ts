import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { prepareMountPoints } from '../workspace/task-folders.ts';
import { isInside } from '../workspace/path-guard.ts';
import { BASH, openExec, spawnExec } from './container-exec.ts';
import { bashArgv } from './host-programs.ts';
import { createOutputCapture } from './output-capture.ts';
import { TIMEOUT_EXIT_CODE, type CommandResult } from './run-command.ts';
import { programEnv, type CommandSpec, type RunSandbox, type Sandbox, type SandboxRun, type WrapExtra } from './sandbox.ts';

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
  logger: Logger;
}

/** What a container sandbox does not run yet: an ACP agent (with bubblewrap it is a host process, with its own network). */
export const CONTAINER_ACP = 'ACP agents do not run in container sandboxes yet (SANDBOX=container): use SANDBOX=bwrap';

/** The label every sandbox container carries: the instance that made it. */
export const INSTANCE_LABEL = 'io.subagentd.instance';
const TASK_LABEL = 'io.subagentd.task';

/**
 * SANDBOX=container: every command of a task run in one container of its own, made at the run's
 * first command through the Docker Engine API (Docker's or podman's) from the definition's image:
 * the workspace (or worktree) its only writable mount at the same path, the task's folders
 * read-only over it, the root read-only, a private /tmp, no network, no capability, the service's
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
      await docker.ping().catch((err: unknown) => {
        throw new Error(`SANDBOX=container but the engine at DOCKER_HOST does not answer: ${(err as Error).message}`);
      });
      const left = await docker.listContainers({ all: true, filters: { label: [`${INSTANCE_LABEL}=${opts.instanceId}`] } });
      await Promise.all(
        left.map((c) =>
          docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {}),
        ),
      );
      if (left.length > 0) opts.logger.warn({ containers: left.length }, 'removed the sandbox containers a stopped instance left');
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
      await Promise.all(removing);
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
  let made: Promise<{ container: Docker.Container; path: string | null }> | null = null;
  let released = false;
  const make = () =>
    (made ??= (async () => {
      // After the sweep (a run resumed at start must not lose its container to it).
      await sweep();
      const docker = await engine();
      const image = run.image ?? opts.image;
      const info = await docker
        .getImage(image)
        .inspect()
        .catch((err: unknown) => {
          throw new Error(`the sandbox image ${image} is not on the engine (${(err as Error).message}): pull or build it there`);
        });
      // The image's own PATH (a JDK's, a Python's), else the one bubblewrap gives.
      const imagePath = (info.Config?.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5) ?? null;
      const folders = run.workspace.folders ?? [];
      if (folders.length > 0) await prepareMountPoints(run.workspace);
      const container = await docker.createContainer({
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
      });
      // Released while it was being made: it goes at once.
      if (released) {
        await container.remove({ force: true }).catch(() => {});
        throw new Error('the task run has ended');
      }
      try {
        await container.start();
      } catch (err) {
        // Made but not started (a refused limit, a runtime error): not left behind.
        await container.remove({ force: true }).catch(() => {});
        throw err;
      }
      return { container, path: imagePath };
    })());
  const box: RunSandbox = {
    kind: 'container',
    wrap: () => {
      throw new Error(CONTAINER_ACP);
    },
    // A long-lived program (an MCP command server): an exec whose stdio stays open, HOME the run's /tmp.
    start(workspace, argv, extra) {
      return spawnExec(async (onStdout, onStderr) => {
        if (!isInside(workspace, root)) throw new Error(`${workspace} is not the run's workspace`);
        const c = await make();
        const env = commandEnv(workspace, { ...extra, home: '/tmp', writable: undefined }, c.path);
        return openExec(c.container, opts, { argv, env, cwd: extra.cwd ?? workspace, stdin: true, onStdout, onStderr });
      });
    },
    async run(workspace, command, extra) {
      if (!isInside(workspace, root)) throw new Error(`${workspace} is not the run's workspace`);
      const started = Date.now();
      let c: Awaited<typeof made>;
      try {
        c = await make();
      } catch (err) {
        return failedToStart(started, (err as Error).message);
      }
      return execIn(c.container, opts, command, commandEnv(workspace, extra ?? {}, c.path), started);
    },
    // The container goes (its processes killed) without the run waiting for the engine to finish.
    release() {
      if (released) return Promise.resolve();
      released = true;
      ended(
        (async () => {
          const c = await made?.catch(() => null);
          await c?.container
            .remove({ force: true })
            .catch((err: unknown) => opts.logger.warn({ err, taskId: run.taskId }, 'could not remove a sandbox container'));
        })(),
      );
      return Promise.resolve();
    },
  };
  return box;
}

/** bubblewrap's environment for the command, the image's PATH when it has one. */
function commandEnv(workspace: string, extra: WrapExtra, imagePath: string | null): string[] {
  const env = programEnv(workspace, { ...extra, egress: undefined });
  if (imagePath) env.PATH = imagePath;
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
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
  const stdout = createOutputCapture(command.maxOutputBytes);
  const stderr = createOutputCapture(command.maxOutputBytes);
  const withInput = command.input !== undefined;
  const exec = await openExec(container, opts, {
    argv: [BASH, ...bashArgv(command.command).slice(1)],
    env,
    cwd: command.cwd,
    stdin: withInput,
    onStdout: (b) => {
      stdout.write(b);
      command.onOutput?.(b);
    },
    onStderr: (b) => {
      stderr.write(b);
      command.onOutput?.(b);
    },
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
  const o = stdout.result();
  const e = stderr.result();
  return {
    exitCode: timedOut ? TIMEOUT_EXIT_CODE : code,
    stdout: o.text,
    stderr: e.text,
    truncated: { stdout: o.truncated, stderr: e.truncated },
    timedOut,
    aborted,
    durationMs: Date.now() - started,
  };
}
