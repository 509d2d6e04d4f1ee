import { EventEmitter } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type Docker from 'dockerode';
import { engineCall } from './engine-call.ts';
import type { SpawnedGroup } from './spawn-group.ts';

/** bash inside the image: commands are bash commands, so an image needs it (at /bin/bash, as Debian's, Ubuntu's, Alpine's with bash). */
export const BASH = '/bin/bash';

/**
 * Kills every process of session $1 (a command's: the exec's first process leads one) but
 * itself, by /proc (no procps in the image needed): what a command leaves running dies with it,
 * as bubblewrap's PID namespace makes it on the host. A process that made a session of its own
 * (setsid) is left to the container's end, within its limits.
 */
const KILL_SESSION = `sid=$1; [ "$sid" = "$$" ] || kill -KILL "$sid" 2>/dev/null; for s in /proc/[0-9]*/stat; do read -r st < "$s" 2>/dev/null || continue; set -- \${st##*) }; p=\${s#/proc/}; p=\${p%/stat}; [ "$4" = "$sid" ] && [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null; done`;

/** The limits a program's first process sets, as bubblewrap's launcher does, and the bound of each engine call. */
export interface ExecLimits {
  maxProcesses: number;
  maxFileBytes: number;
  engineTimeoutMs: number;
}

/**
 * The program's first process: says its pid (its session's id) on stderr's first line, sets the
 * same ulimits as bubblewrap's (-u binds a non-root user, -f bounds a file; memory and processes
 * are the container's cgroup), runs the program, then ends what it left behind.
 */
function wrapper(limits: ExecLimits): string {
  return [
    `printf '%s\\n' "$$" >&2`,
    `ulimit -u ${limits.maxProcesses} 2>/dev/null`,
    `ulimit -f ${Math.floor(limits.maxFileBytes / 1024)}`,
    `"$@"`,
    `c=$?`,
    `k() { ${KILL_SESSION}; }`,
    `k "$$"`,
    `exit $c`,
  ].join('\n');
}

export interface OpenedExec {
  /** The hijacked connection: what is written goes to the program's standard input. */
  stream: NodeJS.ReadWriteStream & { destroy(): void };
  /** Kills the program's session (at once, or as soon as it says which it is). */
  kill(): void;
  /** The exit code once the streams have ended (137 when the engine cannot tell). */
  ended: Promise<number>;
}

/**
 * Starts `argv` as an exec in `container` under the wrapper: its stdout and stderr (less the
 * wrapper's line) to the callbacks, its stdin attached when asked.
 */
export async function openExec(
  container: Docker.Container,
  limits: ExecLimits,
  run: { argv: string[]; env: string[]; cwd: string; stdin: boolean; onStdout: (b: Buffer) => void; onStderr: (b: Buffer) => void },
): Promise<OpenedExec> {
  const bound = limits.engineTimeoutMs;
  const exec = await engineCall('an exec’s creation', bound, (abortSignal) =>
    container.exec({
      Cmd: [BASH, '--noprofile', '--norc', '-c', wrapper(limits), 'sandbox', ...run.argv],
      Env: run.env,
      WorkingDir: run.cwd,
      AttachStdin: run.stdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      abortSignal,
    }),
  );
  // Bounded until the engine upgrades the connection; the stream then lives as long as the program.
  const stream = (await engineCall('an exec’s start', bound, (abortSignal) =>
    exec.start({ hijack: true, stdin: run.stdin, abortSignal }),
  )) as OpenedExec['stream'];
  let session: string | null = null;
  let head = '';
  let killing = false;
  const kill = () => {
    killing = true;
    if (session === null) return; // killed as soon as it says which it is
    const cmd = [BASH, '--noprofile', '--norc', '-c', KILL_SESSION, 'kill', session];
    void engineCall('a kill’s exec', bound, (abortSignal) => container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, abortSignal }))
      .then((k) => engineCall('a kill’s exec', bound, (abortSignal) => k.start({ hijack: true, stdin: false, abortSignal })))
      .then((s) => {
        s.on('error', () => {});
        s.resume();
        setTimeout(() => s.destroy(), 5000).unref();
      })
      .catch(() => {});
    // A process that left the session may hold the streams open: stop waiting for them.
    setTimeout(() => stream.destroy(), 500).unref();
  };
  const sink = (onChunk: (b: Buffer) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        onChunk(chunk);
        cb();
      },
    });
  const err = sink((b) => {
    if (session === null) {
      // The wrapper's first line: the session to kill.
      head += b.toString('latin1');
      const nl = head.indexOf('\n');
      if (nl < 0) return;
      session = head.slice(0, nl);
      b = Buffer.from(head.slice(nl + 1), 'latin1');
      if (killing) kill();
      if (b.length === 0) return;
    }
    run.onStderr(b);
  });
  // Docker's multiplexed stream (an 8-byte header per frame) split into stdout and stderr by the client's own reader.
  (container.modem as { demuxStream(s: NodeJS.ReadableStream, o: Writable, e: Writable): void }).demuxStream(stream, sink(run.onStdout), err);
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  }).then(() => exitCode(exec, bound));
  return { stream, kill, ended };
}

/**
 * The exec's exit code once the engine has it (podman answers `Running` a moment after the stream
 * ends); 137 when the engine cannot tell, or does not answer within `bound`.
 */
async function exitCode(exec: Docker.Exec, bound: number): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const info = await engineCall('an exec’s inspect', bound, (abortSignal) => exec.inspect({ abortSignal })).catch(() => null);
    if (!info) return 137;
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await new Promise((r) => setTimeout(r, 20));
  }
  return 137;
}

/**
 * A long-lived program (an MCP command server) as an exec, shaped as spawnGroup's answer: its
 * stdio as streams, `exit` once it ends, `kill` ending its session. `opened` is the container
 * being made and the exec started; until then what is written to stdin waits.
 */
export function spawnExec(opened: (onStdout: (b: Buffer) => void, onStderr: (b: Buffer) => void) => Promise<OpenedExec>): SpawnedGroup {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const child = Object.assign(new EventEmitter(), { stdin, stdout, stderr }) as unknown as ChildProcessWithoutNullStreams;
  let running: OpenedExec | null = null;
  let killed = false;
  const exited = opened(
    (b) => stdout.write(b),
    (b) => stderr.write(b),
  ).then(
    async (e) => {
      running = e;
      if (killed) e.kill();
      stdin.pipe(e.stream);
      const code = await e.ended;
      stdout.end();
      stderr.end();
      child.emit('exit', code, null);
      return { code, signal: null };
    },
    (error: Error) => {
      stdout.end();
      stderr.end();
      if (child.listenerCount('error') > 0) child.emit('error', error);
      return { code: null, signal: null, error };
    },
  );
  return {
    child,
    exited,
    kill: () => {
      killed = true;
      running?.kill();
    },
  };
}
