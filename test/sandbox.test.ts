import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCommandLimiter } from '../src/sandbox/command-cgroup';
import { runCommand } from '../src/sandbox/run-command';
import { createSandbox, unavailable } from '../src/sandbox/sandbox';
import { startChildService } from './support/child-service';
import { startService, taskBody, TEST_API_KEY, type TestService } from './support/harness';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { until } from './support/until';

/** Why bubblewrap cannot run here, or null when it can. */
function bwrapMissing(): string | null {
  const r = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true'], { encoding: 'utf8', timeout: 5000 });
  if (r.error) return `bubblewrap is not installed (${r.error.message})`;
  if (r.status !== 0) return `bubblewrap cannot run here (${r.stderr.trim()})`;
  return null;
}
const missing = bwrapMissing();
if (missing) {
  console.warn(`[sandbox tests] skipped: ${missing}. Install bubblewrap (apt-get install bubblewrap) to run them; .ci/run does.`);
}
/** Tests that need bubblewrap itself. */
const withBwrap = describe.skipIf(missing !== null);

/** Every command here runs through bubblewrap (BASH_SANDBOX=bwrap fails the start when it is missing). */
let svc: TestService;
beforeAll(async () => {
  if (missing) return;
  svc = await startService({ env: { BASH_SANDBOX: 'bwrap' } });
  mkdirSync(path.join(svc.config.workspacesDir, 'T-other'), { recursive: true });
  writeFileSync(path.join(svc.config.workspacesDir, 'T-other', 'private.txt'), 'OTHER PARENT DATA');
  writeFileSync(path.join(svc.dir, 'host-secret.txt'), 'HOST SECRET');
});
afterAll(() => svc?.close());

const shell = async (command: string, over: Record<string, unknown> = {}) => {
  const res = await svc.inject({
    method: 'POST',
    url: '/tasks?wait=true',
    payload: taskBody({ subagent_type: 'shell', prompt: undefined, command, context: { parentTaskId: 'T-sbx', userId: 'u-1' }, ...over }),
  });
  return res.json();
};

const hostProcesses = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });

withBwrap('the bash sandbox (bubblewrap)', () => {
  it('leaves only the workspace writable: the root is read-only', async () => {
    const out = await shell('echo ok > here.txt && cat here.txt; touch /usr/pwned 2>&1; touch /etc/pwned 2>&1; echo done');
    expect(out.output.stdout).toContain('ok\n');
    expect(out.output.stdout).toMatch(/\/usr\/pwned': Read-only file system/);
    expect(out.output.stdout).toMatch(/\/etc\/pwned': Read-only file system/);
  });

  it("hides the service's own files and the other workspaces", async () => {
    const out = await shell(
      `cat ${path.join(svc.dir, 'host-secret.txt')} 2>&1; cat ${svc.config.databasePath} 2>&1 | head -c 20; echo; ` +
        `ls ${svc.config.workspacesDir}; cat ${path.join(svc.config.workspacesDir, 'T-other', 'private.txt')} 2>&1; ls /root | wc -l`,
    );
    expect(out.output.stdout).not.toContain('HOST SECRET');
    expect(out.output.stdout).not.toContain('SQLite format');
    expect(out.output.stdout).not.toContain('OTHER PARENT DATA');
    expect(out.output.stdout).toMatch(/^.*No such file or directory/m);
    expect(out.output.stdout.split('\n')).toContain('T-sbx');
    expect(out.output.stdout.split('\n')).not.toContain('T-other');
  });

  it('keeps no capability, even when the service runs as root: the masks cannot be unmounted to reach what they hide', async () => {
    const db = svc.config.databasePath;
    const dirs = [path.dirname(db), svc.config.workspacesDir, '/tmp'];
    const out = await shell(
      `grep CapEff /proc/self/status; for i in 1 2 3; do for d in ${dirs.join(' ')}; do umount -l "$d" 2>/dev/null; done; done; head -c 16 ${db} 2>&1; echo`,
    );
    expect(out.output.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(out.output.stdout).not.toContain('SQLite format');
  });

  it('has no network, not even the service on loopback', async () => {
    const port = new URL(svc.url).port;
    const out = await shell(`(echo > /dev/tcp/127.0.0.1/${port}) 2>&1 && echo CONNECTED || echo REFUSED`);
    expect(out.output.stdout).toContain('REFUSED');
    expect(out.output.stdout).not.toContain('CONNECTED');
  });

  it('passes no variable of the service: only PATH, HOME (the workspace), LANG and TERM', async () => {
    const out = await shell('env | cut -d= -f1 | sort | tr "\\n" " "; echo; echo "$HOME"');
    const names = out.output.stdout.split('\n')[0].trim().split(' ');
    expect(names.filter((v: string) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(v)).sort()).toEqual(['HOME', 'LANG', 'PATH', 'TERM']);
    expect(out.output.stdout).toContain(path.join(svc.config.workspacesDir, 'T-sbx'));
    expect(JSON.stringify(out)).not.toContain(TEST_API_KEY);
  });

  it('gives each command a private /tmp', async () => {
    await shell('echo leaked > /tmp/sbx-marker');
    const out = await shell('cat /tmp/sbx-marker 2>&1 || echo absent');
    expect(out.output.stdout).toContain('absent');
  });

  it("reads no start-up file: not the workspace's .bashrc or profile (HOME inside), not the service user's", async () => {
    const ws = path.join(svc.config.workspacesDir, 'T-sbx');
    mkdirSync(ws, { recursive: true });
    for (const rc of ['.bashrc', '.bash_profile', '.profile']) writeFileSync(path.join(ws, rc), `echo FROM${rc}\n`);
    try {
      const out = await shell('echo hi');
      // Whatever the service user's ~/.bashrc prints (pyenv lines on a developer's machine) is not here either.
      expect(out.output).toMatchObject({ exitCode: 0, stdout: 'hi\n', stderr: '' });
    } finally {
      for (const rc of ['.bashrc', '.bash_profile', '.profile']) rmSync(path.join(ws, rc), { force: true });
    }
  });

  it('kills background and setsid children with the command at its timeout', async () => {
    const out = await shell('setsid sleep 4242 & (sleep 4343 &) ; nohup sleep 4444 >/dev/null 2>&1 & sleep 4646', { options: { timeoutMs: 500 } });
    expect(out).toMatchObject({ status: 'aborted', error: { code: 'timeout' } });
    // Killed, not left to run their hour and more: gone well before (a busy machine, three test
    // workers and a PostgreSQL server, takes seconds to tear a killed sandbox down). Numbers no
    // other process of the machine is likely to sleep for (`sleep 60` could be anyone's).
    await until(async () => !/sleep (4242|4343|4444|4646)\b/.test(hostProcesses()), 20_000);
  });

  it('kills children that outlive a command that exited', async () => {
    const out = await shell('setsid sleep 4545 & echo started');
    expect(out.output.stdout).toBe('started\n');
    await until(async () => !hostProcesses().includes('sleep 4545'), 20_000);
  });

  it('stops a hard link to a file outside (the path guard alone cannot see hard links)', async () => {
    const out = await shell(`ln ${path.join(svc.dir, 'host-secret.txt')} stolen 2>&1 || echo FAILED; cat stolen 2>&1`);
    expect(out.output.stdout).toContain('FAILED');
    expect(out.output.stdout).not.toContain('HOST SECRET');
  });

  it('runs the bash tool of a model-backed subagent in the same sandbox', async () => {
    let seen = '';
    svc.model.script('SANDBOX-TOOL', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: `cat ${path.join(svc.dir, 'host-secret.txt')}; hostname` } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'SANDBOX-TOOL' }) });
    const result = JSON.parse(seen);
    expect(result.stdout).toBe('sandbox\n');
    expect(result.stderr).toContain('No such file or directory');
  });
});

withBwrap('the host side of the sandbox', () => {
  it("starts bwrap and the cgroup gate by absolute path with the service's variables; the asked ones go inside", async () => {
    // Programs named bwrap and bash planted in a workspace, first on the PATH a request asks for,
    // with BASH_ENV and LD_PRELOAD: before the fix, the host resolved its launcher on that PATH.
    const ws = mkdtempSync(path.join(tmpdir(), 'subagentd-host-side-'));
    const marker = path.join(tmpdir(), `subagentd-host-marker-${process.pid}`);
    try {
      mkdirSync(path.join(ws, '.evil'));
      for (const name of ['bwrap', 'bash']) {
        writeFileSync(path.join(ws, '.evil', name), `#!/bin/sh\necho "$0" >> ${marker}\nexec /bin/${name === 'bash' ? 'bash' : 'false'} "$@"\n`, {
          mode: 0o755,
        });
      }
      writeFileSync(path.join(ws, '.evil', 'rc'), `echo bash_env >> ${marker}\n`);
      const sandbox = createSandbox({ mode: 'bwrap', hide: [], maxProcesses: 256, maxFileBytes: 1 << 20, maxMemoryBytes: 1 << 30, tmpBytes: 1 << 20 });
      const env = { PATH: `${ws}/.evil:/usr/bin:/bin`, BASH_ENV: `${ws}/.evil/rc`, LD_PRELOAD: `${ws}/.evil/x.so`, GREETING: 'hi' };
      const launch = sandbox.wrap(ws, ['/bin/true'], { env });
      expect(launch.argv[0]).toMatch(/^\/.*\/bwrap$/);
      expect(launch.env).toEqual({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' });
      const r = await runCommand({
        command: 'echo "$GREETING $PATH $BASH_ENV$LD_PRELOAD"',
        cwd: ws,
        timeoutMs: 10_000,
        maxOutputBytes: 10_000,
        launch: (argv) => sandbox.wrap(ws, argv, { env }),
        limiter: sandbox.limiter,
      });
      expect(r.stdout).toBe('hi /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \n');
      expect(r.exitCode).toBe(0);
      expect(spawnSync('cat', [marker], { encoding: 'utf8' }).stdout).toBe('');
    } finally {
      rmSync(ws, { recursive: true, force: true });
      rmSync(marker, { force: true });
    }
  });
});

describe('without a usable sandbox', () => {
  let bare: TestService;
  beforeAll(async () => {
    bare = await startService({
      sandbox: unavailable('bwrap not found'),
    });
  });
  afterAll(() => bare.close());

  it('refuses shell tasks with sandbox_unavailable and bash calls with a readable tool error', async () => {
    const out = (
      await bare.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ subagent_type: 'shell', prompt: undefined, command: 'echo hi' }) })
    ).json();
    expect(out).toMatchObject({ status: 'error', error: { code: 'sandbox_unavailable', message: 'bwrap not found' } });
    let seen = '';
    bare.model.script('NO-SANDBOX', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'echo hi' } }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    await bare.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'NO-SANDBOX' }) });
    expect(seen).toContain('bash is unavailable on this service: bwrap not found');
  });
});

withBwrap('what only the sandbox stops (a real service process with its key in the environment)', () => {
  let model: ScriptedModel;
  let dir: string;
  beforeAll(async () => {
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-sbx-'));
  });
  afterAll(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const probe = `for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f" 2>/dev/null; done | grep -c '^OPENAI_API_KEY=' || true; kill -0 "$PPID" 2>&1 && echo "can signal parent $PPID"`;

  async function runProbe(sandbox: 'bwrap' | 'none') {
    const svc = await startChildService({
      DATABASE_PATH: path.join(dir, `${sandbox}.db`),
      WORKSPACES_DIR: path.join(dir, 'ws'),
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: TEST_API_KEY,
      BASH_SANDBOX: sandbox,
    });
    try {
      const res = await fetch(`${svc.url}/tasks?wait=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(taskBody({ subagent_type: 'shell', prompt: undefined, command: probe })),
      });
      return ((await res.json()) as { output: { stdout: string } }).output.stdout;
    } finally {
      svc.child.kill('SIGKILL');
      await svc.exited;
    }
  }

  it("keeps the service's process, and the key in its environment, out of reach", async () => {
    const out = await runProbe('bwrap');
    expect(out.split('\n')[0]).toBe('0');
    expect(out).not.toContain(TEST_API_KEY);
  });

  it('(BASH_SANDBOX=none cannot: a command reads the key from /proc of its parent, the service)', async () => {
    const out = await runProbe('none');
    expect(Number(out.split('\n')[0])).toBeGreaterThan(0);
    expect(out).toContain('can signal parent');
  });
});

withBwrap('process cap', () => {
  let capped: TestService;
  beforeAll(async () => {
    capped = await startService({ env: { BASH_SANDBOX: 'bwrap', SANDBOX_MAX_PROCESSES: '40' } });
  });
  afterAll(() => capped.close());

  it('caps the processes of one command (pids cgroup), so a fork bomb stays contained', async ({ skip }) => {
    const limiter = createCommandLimiter({ maxProcesses: 40, maxMemoryBytes: 256 * 1024 * 1024 });
    if (!limiter.pids) skip(`no writable pids cgroup here: ${limiter.reason}`);
    // A bounded bomb (100 children that each sleep 3 s): even without the cap it would end by itself.
    const command = [
      'python3 -c "',
      'import os, time',
      'n = 0',
      'for i in range(100):',
      '    try:',
      '        if os.fork() == 0:',
      '            time.sleep(3); os._exit(0)',
      '        n += 1',
      '    except OSError as e:',
      "        print('fork refused:', e.strerror); break",
      "print('forked', n)",
      '"',
    ].join('\n');
    const out = (
      await capped.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ subagent_type: 'shell', prompt: undefined, command, options: { timeoutMs: 10_000 } }),
      })
    ).json();
    expect(out.status).toBe('completed');
    expect(out.output.stdout).toContain('fork refused: Resource temporarily unavailable');
    const forked = Number(/forked (\d+)/.exec(out.output.stdout)?.[1]);
    expect(forked).toBeGreaterThan(20);
    expect(forked).toBeLessThan(40);
  });
});

withBwrap('resource limits of one command', () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startService({
      env: {
        BASH_SANDBOX: 'bwrap',
        SANDBOX_MAX_MEMORY_BYTES: String(128 * 1024 * 1024),
        SANDBOX_TMP_BYTES: String(4 * 1024 * 1024),
        SANDBOX_MAX_FILE_BYTES: String(1024 * 1024),
      },
    });
  });
  afterAll(() => limited.close());
  const run = async (command: string) =>
    (
      await limited.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ subagent_type: 'shell', prompt: undefined, command, context: { parentTaskId: 'T-lim', userId: 'u-1' } }),
      })
    ).json();

  it('stops a command that takes more memory than SANDBOX_MAX_MEMORY_BYTES', async () => {
    // 512 MiB written for real (not just reserved), four times the limit.
    const out = await run(`python3 -c "b = b'x' * (512 * 1024 * 1024); print('allocated', len(b))"; echo "exit $?"`);
    expect(out.status).toBe('completed');
    expect(out.output.stdout).not.toContain('allocated');
    expect(out.output.stdout).toMatch(/exit (1|137)/);
  });

  it("gives the command a /tmp of SANDBOX_TMP_BYTES, not the host's RAM", async () => {
    const out = await run('head -c 64M /dev/zero > /tmp/big 2>/dev/null; echo "exit $?"; stat -c %s /tmp/big');
    expect(out.output.stdout).toMatch(/exit [1-9]/);
    expect(Number(out.output.stdout.trim().split('\n').pop())).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  it('caps one file at exactly SANDBOX_MAX_FILE_BYTES', async () => {
    const out = await run('head -c 1048576 /dev/zero > fits; echo "fits $?"; (head -c 1572864 /dev/zero > over) 2>/dev/null; echo "over $?"; stat -c %s over');
    expect(out.output.stdout).toContain('fits 0');
    expect(out.output.stdout).toMatch(/over [1-9]/);
    expect(Number(out.output.stdout.trim().split('\n').pop())).toBe(1024 * 1024);
  });
});
