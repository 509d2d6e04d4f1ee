/**
 * `npx tsx scripts/image-check.ts <image> [podman|docker]`: runs the built image against the
 * project's scripted model server and proves it works: the healthcheck, a model task whose bash
 * command runs in the sandbox inside the container, and a shell task. The container shares the
 * host's network (the scripted model listens on loopback) and gets the two options bubblewrap
 * needs inside a container: seccomp=unconfined and systempaths=unconfined (on AppArmor hosts add
 * apparmor=unconfined). With DATABASE_URL set, the container runs on that PostgreSQL database
 * (reachable from the host's network) instead of its SQLite file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { startScriptedModel } from '../scripted-model/server.ts';

const image = process.argv[2] ?? 'subagentd:test';
const engine = process.argv[3] ?? 'podman';
// podman on machines without a Docker engine: vfs storage, cgroupfs, runc, explicit rlimits.
const engineArgs = engine === 'podman' ? ['--storage-driver', 'vfs', '--cgroup-manager', 'cgroupfs'] : [];
const runArgs = engine === 'podman' ? ['--runtime', 'runc', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'] : [];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function main() {
  const model = await startScriptedModel();
  model.script('IMAGE-CHECK', [
    { toolCalls: [{ name: 'bash', args: { command: 'echo "from $(hostname): $(id -un)" > who.txt; cat who.txt; ls /data 2>&1 | head -3' } }] },
    { toolCalls: [{ name: 'complete', args: { summary: 'ran a command in the sandbox', paths: ['who.txt'] } }] },
  ]);
  const port = await freePort();
  const name = `subagentd-check-${process.pid}`;
  const child = spawn(
    engine,
    [
      ...engineArgs,
      'run',
      '--rm',
      '--name',
      name,
      ...runArgs,
      '--network',
      'host',
      '--security-opt',
      'seccomp=unconfined',
      '--security-opt',
      'systempaths=unconfined',
      '-e',
      `PORT=${port}`,
      '-e',
      'HOST=127.0.0.1',
      '-e',
      `OPENAI_BASE_URL=${model.url}`,
      '-e',
      'OPENAI_API_KEY=image-check',
      '-e',
      'BASH_SANDBOX=bwrap',
      '-e',
      'LOG_LEVEL=info',
      ...(process.env.DATABASE_URL ? ['-e', `DATABASE_URL=${process.env.DATABASE_URL}`] : []),
      image,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const base = `http://127.0.0.1:${port}`;
  try {
    // vfs storage copies the whole image before the container starts: give it time.
    const until = Date.now() + 240_000;
    while (
      !(await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (child.exitCode !== null || Date.now() > until) throw new Error(`the container did not become healthy:\n${log}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    console.log('healthz:', await (await fetch(`${base}/healthz`)).text(), process.env.DATABASE_URL ? '(PostgreSQL)' : '(SQLite)');
    const post = async (body: unknown) =>
      (
        await fetch(`${base}/tasks?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      ).json() as Promise<Record<string, any>>;
    const modelTask = await post({
      subagent_type: 'general',
      description: 'image check',
      prompt: 'IMAGE-CHECK',
      context: { parentTaskId: 'T-image', userId: 'u-1' },
    });
    console.log(
      'model task:',
      modelTask.status,
      modelTask.stopReason,
      modelTask.summary,
      modelTask.artifacts.map((a: { path: string; size: number }) => `${a.path} (${a.size} B)`),
    );
    console.log('  the command said:', JSON.stringify(model.requests.at(-1)?.body.messages.at(-1)?.content));
    const shellTask = await post({
      subagent_type: 'shell',
      description: 'image shell',
      command: 'cat who.txt; touch /usr/pwned 2>&1; echo exit=$?',
      context: { parentTaskId: 'T-image', userId: 'u-1' },
    });
    console.log('shell task:', shellTask.status, JSON.stringify(shellTask.output));
    const ok = modelTask.status === 'completed' && shellTask.status === 'completed' && /Read-only file system/.test(shellTask.output.stdout);
    console.log(ok ? 'IMAGE CHECK PASSED' : 'IMAGE CHECK FAILED');
    process.exitCode = ok ? 0 : 1;
  } finally {
    spawnSync(engine, [...engineArgs, 'stop', '-t', '5', name], { stdio: 'ignore' });
    await model.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
