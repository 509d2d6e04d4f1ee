import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, startChildService, type ChildService } from './support/child-service';
import { BASE_IMAGE, containersOf, DOCKER_HOST, engineClient, engineMissing, imageSize, imageWith } from './support/container-engine';
import { startService, storedEvents, taskBody, taskEnd, TEST_API_KEY, type TestService } from './support/harness';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { until } from './support/until';

const docker = engineClient();
const missing = await engineMissing(docker);
if (missing) {
  console.warn(`[container sandbox tests] skipped: ${missing}. .ci/run starts podman's API socket and makes the base image (.ci/podman-service).`);
}
const withEngine = describe.skipIf(missing !== null);

/** Two small images of the base, told apart by one file: the default (SANDBOX_IMAGE) and a definition's own. */
const DEFAULT_IMAGE = 'localhost/subagentd-test-sandbox:alpha';
const OWN_IMAGE = 'localhost/subagentd-test-sandbox:beta';
const INSTANCE = `container-test-${process.pid}`;

/** An MCP server over stdio in bash (JSON-RPC lines): one tool, `flavour`, answering what its image says. */
const FLAVOUR_MCP = `#!/bin/bash
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\\([0-9][0-9]*\\).*/\\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      v=$(printf '%s' "$line" | sed -n 's/.*"protocolVersion":"\\([^"]*\\)".*/\\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"flavour","version":"1"}}}\\n' "$id" "$v" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flavour","description":"what this image is","inputSchema":{"type":"object","properties":{}}}]}}\\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"flavour %s, home %s"}]}}\\n' "$id" "$(cat /opt/flavour)" "$HOME" ;;
    *'"id":'*) printf '{"jsonrpc":"2.0","id":%s,"result":{}}\\n' "$id" ;;
  esac
done
`;

/**
 * An ACP agent in bash (JSON-RPC lines): its one turn writes a file where it runs, asks the client
 * for a terminal (`cat /opt/flavour`), and answers with what its image, HOME, variables and the
 * terminal said.
 */
const FLAVOUR_ACP = `#!/bin/bash
idof() { printf '%s' "$1" | sed -n 's/.*"id":\\([0-9][0-9]*\\).*/\\1/p'; }
ask() { printf '%s\\n' "$1"; IFS= read -r reply; }
while IFS= read -r line; do
  id=$(idof "$line")
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}}\\n' "$id" ;;
    *'"method":"session/new"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}\\n' "$id" ;;
    *'"method":"session/prompt"'*)
      echo "written in $(cat /opt/flavour)" > acp-flavour.txt
      ask '{"jsonrpc":"2.0","id":900,"method":"terminal/create","params":{"sessionId":"s-1","command":"cat","args":["/opt/flavour"]}}'
      term=$(printf '%s' "$reply" | sed -n 's/.*"terminalId":"\\([^"]*\\)".*/\\1/p')
      ask '{"jsonrpc":"2.0","id":901,"method":"terminal/wait_for_exit","params":{"sessionId":"s-1","terminalId":"'"$term"'"}}'
      ask '{"jsonrpc":"2.0","id":902,"method":"terminal/output","params":{"sessionId":"s-1","terminalId":"'"$term"'"}}'
      out=$(printf '%s' "$reply" | sed -n 's/.*"output":"\\([a-z]*\\).*/\\1/p')
      text="flavour $(cat /opt/flavour), home $HOME, passed \${CTR_ACP_PASSED:-unset}, hidden \${CTR_ACP_HIDDEN:-unset}, terminal $out"
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}\\n' "$text"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\\n' "$id" ;;
    *'"method":'*'"id":'*|*'"id":'*'"method":'*) printf '{"jsonrpc":"2.0","id":%s,"result":null}\\n' "$id" ;;
  esac
done
`;

let svc: TestService;
let dir: string;
/** A host a definition may reach (127.0.0.2: loopback, but not the container's own 127.0.0.1). */
let origin: Server;
let originPort: number;
beforeAll(async () => {
  if (missing) return;
  origin = createServer((_req, res) => res.end('hello from the allowed host\n'));
  await new Promise<void>((r) => origin.listen(0, '127.0.0.2', r));
  originPort = (origin.address() as AddressInfo).port;
  await imageWith(docker, DEFAULT_IMAGE, { 'opt/flavour': 'alpha\n' });
  await imageWith(docker, OWN_IMAGE, {
    'opt/flavour': 'beta\n',
    'usr/local/bin/beta-tool': '#!/bin/sh\necho beta tool ran\n',
    'usr/local/bin/flavour-mcp': FLAVOUR_MCP,
    'usr/local/bin/flavour-acp': FLAVOUR_ACP,
  });
  const sizes = await Promise.all([BASE_IMAGE, DEFAULT_IMAGE, OWN_IMAGE].map(async (t) => `${t} ${(await imageSize(docker, t)) / 1e6} MB`));
  console.info(`[container sandbox tests] images: ${sizes.join(', ')}`);
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-container-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'beta.md'),
    `---\nname: beta\ndescription: runs its commands in its own image\ntools: bash\nimage: ${OWN_IMAGE}\n---\nUse bash.\n`,
  );
  // The limits low enough to be reached, as test/sandbox.test.ts's cases reach bubblewrap's.
  const limits = { SANDBOX_MAX_PROCESSES: '40', SANDBOX_MAX_FILE_BYTES: String(1024 * 1024), SANDBOX_MAX_MEMORY_BYTES: String(256 * 1024 * 1024) };
  // Its hook reads the event on its standard input, in the definition's image.
  writeFileSync(
    path.join(dir, 'agents', 'beta-hooked.md'),
    `---\nname: beta-hooked\ndescription: hooked\ntools: bash\nimage: ${OWN_IMAGE}\nhooks:\n  PreToolUse:\n    - matcher: bash\n      command: |\n        if grep -q 'rm -rf'; then echo "refused in $(cat /opt/flavour)" >&2; exit 2; fi\n---\nUse bash.\n`,
  );
  writeFileSync(
    path.join(dir, 'agents', 'beta-mcp.md'),
    `---\nname: beta-mcp\ndescription: an MCP server in its image\nimage: ${OWN_IMAGE}\nmcpServers:\n  flavour:\n    command: flavour-mcp\n---\nUse the tool.\n`,
  );
  writeFileSync(
    path.join(dir, 'agents', 'beta-acp.md'),
    `---\nname: beta-acp\ndescription: an ACP agent in its image\nkind: acp\ncommand: flavour-acp\nimage: ${OWN_IMAGE}\nenv: [CTR_ACP_PASSED]\n---\n`,
  );
  process.env.CTR_ACP_PASSED = 'visible';
  process.env.CTR_ACP_HIDDEN = 'hidden';
  writeFileSync(
    path.join(dir, 'agents', 'net.md'),
    `---\nname: net\ndescription: reaches one host\ntools: bash\nnetwork:\n  allow: ["127.0.0.2:${originPort}"]\n---\nUse bash.\n`,
  );
  writeFileSync(
    path.join(dir, 'agents', 'missing.md'),
    '---\nname: missing\ndescription: an image nobody built\ntools: bash\nimage: localhost/subagentd-no-such-image:1\n---\nx\n',
  );
  // Private addresses allowed: the one host here is on loopback.
  const env = { SANDBOX: 'container', SANDBOX_IMAGE: DEFAULT_IMAGE, DOCKER_HOST, INSTANCE_ID: INSTANCE, EGRESS_ALLOW_PRIVATE: 'true', ...limits };
  svc = await startService({ dir, env });
  writeFileSync(path.join(dir, 'host-secret.txt'), 'HOST SECRET');
  mkdirSync(path.join(svc.config.workspacesDir, 'T-other'), { recursive: true });
  writeFileSync(path.join(svc.config.workspacesDir, 'T-other', 'private.txt'), 'OTHER PARENT DATA');
}, 120_000);
afterAll(async () => {
  await svc?.close();
  delete process.env.CTR_ACP_PASSED;
  delete process.env.CTR_ACP_HIDDEN;
  if (origin) await new Promise<void>((r) => origin.close(() => r()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** POST /tasks over HTTP, waiting for the end. */
async function post(body: Record<string, unknown>, wait = true): Promise<any> {
  const res = await fetch(`${svc.url}/tasks${wait ? '?wait=true' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.json();
}
const shell = (command: string, over: Record<string, unknown> = {}) =>
  post(taskBody({ subagent_type: 'shell', prompt: undefined, command, context: { parentTaskId: 'T-ctr', userId: 'u-1' }, ...over }));

/** A model task of `type` whose one bash call runs `command`; what the call returned. */
async function bashOnce(type: string, command: string, marker: string, timeoutMs?: number): Promise<{ task: any; result: any }> {
  let seen = '';
  svc.model.script(marker, (ctx) => {
    if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command, ...(timeoutMs && { timeoutMs }) } }] };
    seen = ctx.toolResults[0]?.content ?? '';
    return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
  });
  const task = await post(taskBody({ subagent_type: type, prompt: marker, context: { parentTaskId: 'T-ctr', userId: 'u-1' } }));
  return { task, result: JSON.parse(seen) };
}

withEngine('the container sandbox (SANDBOX=container)', () => {
  it('runs a shell task in the default image, and the file it writes is served by the files route', async () => {
    const out = await shell('cat /opt/flavour; hostname; echo "made inside" > inside.txt');
    expect(out).toMatchObject({ status: 'completed', output: { exitCode: 0, stdout: 'alpha\nsandbox\n' } });
    const file = await fetch(`${svc.url}/tasks/${out.id}/files/inside.txt`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('made inside\n');
  });

  it("runs a definition's bash in its own image, and the default's in the default", async () => {
    const own = await bashOnce('beta', 'cat /opt/flavour; beta-tool', 'CTR-OWN-IMAGE');
    expect(own.task.status).toBe('completed');
    expect(own.result).toMatchObject({ exitCode: 0, stdout: 'beta\nbeta tool ran\n' });
    const general = await bashOnce('general', 'cat /opt/flavour; command -v beta-tool || echo no beta-tool', 'CTR-DEFAULT-IMAGE');
    expect(general.result).toMatchObject({ exitCode: 0, stdout: 'alpha\nno beta-tool\n' });
  });

  it("runs a definition's command hooks and an outcome's verify command in the run's container", async () => {
    let refusal = '';
    svc.model.script('CTR-HOOK', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'bash', args: { command: 'rm -rf /tmp/x' } }] };
      refusal = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    await post(taskBody({ subagent_type: 'beta-hooked', prompt: 'CTR-HOOK', context: { parentTaskId: 'T-ctr', userId: 'u-1' } }));
    expect(refusal).toContain('refused in beta');
    svc.model.script('CTR-VERIFY', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const verified = await post(
      taskBody({
        prompt: 'CTR-VERIFY',
        context: { parentTaskId: 'T-ctr', userId: 'u-1' },
        options: { outcome: { verify: { command: 'grep -q alpha /opt/flavour' } } },
      }),
    );
    expect(verified.outcome).toMatchObject({ status: 'satisfied', criteria: [{ name: 'verify', passed: true }] });
  });

  it("runs a definition's MCP command server in the run's container, from its image", async () => {
    let seen = '';
    svc.model.script('CTR-MCP', (ctx) => {
      if (ctx.turn === 0) return { toolCalls: [{ name: 'mcp__flavour__flavour', args: {} }] };
      seen = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] };
    });
    const task = await post(taskBody({ subagent_type: 'beta-mcp', prompt: 'CTR-MCP', context: { parentTaskId: 'T-ctr', userId: 'u-1' } }));
    expect(task.status).toBe('completed');
    expect(seen).toContain('flavour beta');
    expect(seen).toContain('home /tmp');
  });

  it("runs an ACP agent in the run's container, from its image: its files, its terminals and its variables there", async () => {
    const task = await post(taskBody({ subagent_type: 'beta-acp', prompt: 'what flavour?', context: { parentTaskId: 'T-ctr-acp', userId: 'u-1' } }));
    expect(task, JSON.stringify(task.error)).toMatchObject({ status: 'completed', stopReason: 'text' });
    // The image's program and file, HOME the run's /tmp, the definition's variable only, its terminal a command of the run.
    expect(task.summary).toBe('flavour beta, home /tmp, passed visible, hidden unset, terminal beta');
    const res = await fetch(`${svc.url}/tasks/${task.id}/files/acp-flavour.txt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('written in beta\n');
    await until(async () => (await containersOf(docker, INSTANCE)).length === 0, 15_000);
  });

  it('leaves only the workspace writable: the root is read-only, /tmp private to the run', async () => {
    const out = await shell('echo ok > here.txt && cat here.txt; touch /usr/pwned 2>&1; touch /etc/pwned 2>&1; echo run > /tmp/mark && cat /tmp/mark');
    expect(out.output.stdout).toContain('ok\n');
    expect(out.output.stdout).toMatch(/\/usr\/pwned': Read-only file system/);
    expect(out.output.stdout).toMatch(/\/etc\/pwned': Read-only file system/);
    expect(out.output.stdout).toContain('run\n');
    // Another task run: another container, another /tmp.
    const next = await shell('cat /tmp/mark 2>&1 || echo absent');
    expect(next.output.stdout).toContain('absent');
  });

  it('has no network: not the service on loopback, not an outside address, no interface but lo', async () => {
    const port = new URL(svc.url).port;
    const out = await shell(
      `(echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo LOOPBACK || echo no-loopback; ` +
        `(timeout 3 bash -c 'echo > /dev/tcp/1.1.1.1/80') 2>/dev/null && echo OUTSIDE || echo no-outside; ls /sys/class/net`,
    );
    expect(out.output.stdout).toBe('no-loopback\nno-outside\nlo\n');
  });

  it("reaches the hosts its definition allows through the task's egress proxy, and nothing else", async () => {
    // No curl in the image: an HTTP request by hand to the proxy that HTTP_PROXY names.
    const get = (host: string) =>
      `exec 3<>"/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}" && printf 'GET http://${host}/ HTTP/1.0\\r\\nHost: ${host}\\r\\n\\r\\n' >&3 && timeout 5 cat <&3 | head -1; exec 3>&-`;
    const { task, result } = await bashOnce(
      'net',
      [
        'echo "proxy $HTTP_PROXY"',
        get(`127.0.0.2:${originPort}`),
        get(`127.0.0.3:${originPort}`),
        `(timeout 3 bash -c 'echo > /dev/tcp/127.0.0.2/${originPort}') 2>/dev/null && echo DIRECT || echo no-direct`,
        // The proxy's folder (the host's) and the relay's Node are there to use, not to write.
        'for f in /tmp/.subagentd-egress/fill /tmp/.subagentd-node; do (echo x > "$f") 2>/dev/null && echo WROTE || echo no-write; done',
      ].join('; '),
      'CTR-NET',
    );
    expect(task.status).toBe('completed');
    const lines = result.stdout.split('\n').map((l: string) => l.trim());
    expect(lines[0]).toMatch(/^proxy http:\/\/127\.0\.0\.1:\d+$/);
    expect(lines[1]).toMatch(/^HTTP\/1\.[01] 200/);
    expect(lines[2]).toMatch(/^HTTP\/1\.[01] 403/);
    expect(lines[3]).toBe('no-direct');
    expect(lines.slice(4, 6)).toEqual(['no-write', 'no-write']);
    const requests = (await storedEvents(svc, task.id)).filter((m) => m.type === 'network.request').map((m: any) => [m.data.host, m.data.allowed]);
    expect(requests).toEqual([
      ['127.0.0.2', true],
      ['127.0.0.3', false],
    ]);
    // A task of a definition without network still has none (the relay is the run's, not the engine's).
    const plain = await shell(
      `(timeout 3 bash -c 'echo > /dev/tcp/127.0.0.2/${originPort}') 2>/dev/null && echo DIRECT || echo no-direct; echo "[$HTTP_PROXY]"`,
    );
    expect(plain.output.stdout).toBe('no-direct\n[]\n');
  });

  it('passes no variable of the service: only PATH, HOME (the workspace), LANG and TERM; no provider key; no capability', async () => {
    const out = await shell('env | cut -d= -f1 | sort | tr "\\n" " "; echo; echo "$HOME"; grep CapEff /proc/self/status');
    const names = out.output.stdout.split('\n')[0].trim().split(' ');
    expect(names.filter((v: string) => !['PWD', 'SHLVL', '_', 'OLDPWD', 'HOSTNAME', 'container'].includes(v)).sort()).toEqual(['HOME', 'LANG', 'PATH', 'TERM']);
    expect(out.output.stdout).toContain(path.join(svc.config.workspacesDir, 'T-ctr'));
    expect(out.output.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(JSON.stringify(out)).not.toContain(TEST_API_KEY);
  });

  it('kills a command at its timeout, what it left running too, and the task goes on', async () => {
    const { task, result } = await bashOnce('general', 'sleep 4747 & sleep 4848', 'CTR-TIMEOUT', 1000);
    expect(task.status).toBe('completed');
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    // The engine here is this machine's: its processes are ours to see.
    await until(async () => !/sleep (4747|4848)\b/.test(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })), 20_000);
  });

  it('stops the command of a cancelled task, and no container is left once tasks end', async () => {
    const task = await post(
      taskBody({
        subagent_type: 'shell',
        prompt: undefined,
        command: 'echo started > started.txt; sleep 4949',
        context: { parentTaskId: 'T-cancel', userId: 'u-1' },
      }),
      false,
    );
    const started = path.join(svc.config.workspacesDir, 'T-cancel', 'started.txt');
    await until(async () => existsSync(started), 30_000);
    expect((await containersOf(docker, INSTANCE)).length).toBeGreaterThan(0);
    const res = await fetch(`${svc.url}/tasks/${task.id}/cancel`, { method: 'POST' });
    expect(res.status).toBeLessThan(300);
    const ended = await taskEnd(svc, task.id);
    expect(ended).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    await until(async () => (await containersOf(docker, INSTANCE)).length === 0, 30_000);
  });
});

withEngine('the bubblewrap attack corpus, in a container', () => {
  it("sees nothing of the host: links to the service's files lead nowhere, a hard link cannot be made, other workspaces are not there", async () => {
    const ws = path.join(svc.config.workspacesDir, 'T-ctr');
    mkdirSync(ws, { recursive: true });
    const secret = path.join(dir, 'host-secret.txt');
    rmSync(path.join(ws, 'to-secret'), { force: true });
    symlinkSync(secret, path.join(ws, 'to-secret'));
    const out = await shell(
      `cat to-secret 2>&1; cat ${secret} 2>&1; ln ${secret} stolen 2>&1 || echo FAILED; ls ${svc.config.workspacesDir}; ` +
        `cat ${path.join(svc.config.workspacesDir, 'T-other', 'private.txt')} 2>&1; head -c 16 ${svc.config.databasePath} 2>&1; echo`,
    );
    expect(out.output.stdout).not.toContain('HOST SECRET');
    expect(out.output.stdout).not.toContain('OTHER PARENT DATA');
    expect(out.output.stdout).not.toContain('SQLite format');
    expect(out.output.stdout).toContain('FAILED');
    expect(out.output.stdout.split('\n')).toContain('T-ctr');
    expect(out.output.stdout.split('\n')).not.toContain('T-other');
  });

  it("caps the run's processes and memory (its cgroup, as the command sees it) and the size of a file", async () => {
    const out = await shell(
      'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max; ' +
        'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; ' +
        'head -c 3000000 /dev/zero > big.bin 2>/dev/null; stat -c %s big.bin',
    );
    expect(out.output.stdout.trim().split('\n').map(Number)).toEqual([40, 256 * 1024 * 1024, 1024 * 1024]);
  });

  it("reads no start-up file: not the workspace's .bashrc or profile (HOME inside)", async () => {
    const ws = path.join(svc.config.workspacesDir, 'T-rc');
    mkdirSync(ws, { recursive: true });
    for (const rc of ['.bashrc', '.bash_profile', '.profile']) writeFileSync(path.join(ws, rc), `echo FROM${rc}\n`);
    const out = await shell('echo hi', { context: { parentTaskId: 'T-rc', userId: 'u-1' } });
    expect(out.output).toMatchObject({ exitCode: 0, stdout: 'hi\n', stderr: '' });
  });

  it('a FIFO a command leaves is refused by the files route at once, never read', async () => {
    const out = await shell('mkfifo pipe && echo made', { context: { parentTaskId: 'T-fifo', userId: 'u-1' } });
    expect(out.output.stdout).toBe('made\n');
    const res = await fetch(`${svc.url}/tasks/${out.id}/files/pipe`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_a_file');
  });

  it('fails a command whose image is not on the engine, saying so (nothing is pulled)', async () => {
    const { task, result } = await bashOnce('missing', 'echo hi', 'CTR-MISSING-IMAGE');
    expect(task.status).toBe('completed');
    expect(result.exitCode).toBe(127);
    expect(result.stderr).toContain('the sandbox image localhost/subagentd-no-such-image:1 is not on the engine');
  });
});

withEngine('containers a killed service left', () => {
  let model: ScriptedModel;
  let home: string;
  let child: ChildService | null = null;
  beforeAll(async () => {
    model = await startScriptedModel();
    home = mkdtempSync(path.join(tmpdir(), 'subagentd-container-kill-'));
  });
  afterAll(async () => {
    child?.child.kill('SIGKILL');
    await child?.exited;
    await model.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('are removed by the next start of the same instance', async () => {
    const instance = `${INSTANCE}-killed`;
    const env = {
      ...childEnv(home, model.url, TEST_API_KEY),
      SANDBOX: 'container',
      SANDBOX_IMAGE: DEFAULT_IMAGE,
      DOCKER_HOST,
      INSTANCE_ID: instance,
      // The task the kill interrupts ends at the next start rather than running again (in a new container).
      RECOVERY_MODE: 'interrupt',
    };
    child = await startChildService(env);
    const res = await fetch(`${child.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody({ subagent_type: 'shell', prompt: undefined, command: 'sleep 4343' })),
    });
    expect(res.status).toBe(202);
    await until(async () => (await containersOf(docker, instance)).some((c) => c.State === 'running'), 30_000);
    child.child.kill('SIGKILL');
    await child.exited;
    const left = await containersOf(docker, instance);
    expect(left).toHaveLength(1);
    child = await startChildService(env);
    await until(async () => (await containersOf(docker, instance)).length === 0, 30_000);
  });
});
