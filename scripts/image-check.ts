/**
 * `npx tsx scripts/image-check.ts <image> [podman|docker]`: runs the built image against the
 * project's scripted model server and proves it works: the healthcheck, the console (`/ui`, its
 * script and its style), a model task whose bash command runs in the sandbox inside the
 * container, and a shell task. CI runs it (.ci/image) on every push. The container shares the
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
// SUBAGENTD_PODMAN_ARGS replaces the global options (.ci/image: its own storage, overlay where it works).
const podmanArgs = process.env.SUBAGENTD_PODMAN_ARGS?.split(' ').filter(Boolean) ?? ['--storage-driver', 'vfs', '--cgroup-manager', 'cgroupfs'];
const engineArgs = engine === 'podman' ? podmanArgs : [];
const runArgs = engine === 'podman' ? ['--runtime', 'runc', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'] : [];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The console's page and the script and style it names, as a browser would load them. */
async function checkConsole(base: string): Promise<boolean> {
  const page = await fetch(`${base}/ui`);
  const html = await page.text();
  const files = [html.match(/\/ui\/assets\/app-[\w-]+\.js/)?.[0], html.match(/\/ui\/assets\/app-[\w-]+\.css/)?.[0]];
  let ok = page.status === 200 && (page.headers.get('content-type') ?? '').startsWith('text/html');
  console.log('console:', page.status, page.headers.get('content-type'), `${html.length} B`);
  for (const [file, type] of [
    [files[0], 'text/javascript'],
    [files[1], 'text/css'],
  ] as const) {
    if (!file) {
      console.log(`  no ${type} named in the page`);
      ok = false;
      continue;
    }
    const res = await fetch(`${base}${file}`);
    const size = (await res.arrayBuffer()).byteLength;
    console.log(' ', file, res.status, res.headers.get('content-type'), `${size} B`);
    ok &&= res.status === 200 && (res.headers.get('content-type') ?? '').startsWith(type) && size > 0;
  }
  return ok;
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
    const consoleOk = await checkConsole(base);
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
    const ok = consoleOk && modelTask.status === 'completed' && shellTask.status === 'completed' && /Read-only file system/.test(shellTask.output.stdout);
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
