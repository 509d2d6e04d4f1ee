import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/postgres';

/**
 * The README's examples, run as a newcomer runs them: `npm run model` and `npm run dev` started by
 * the README's own command lines (on free ports, through the variables they read), then each
 * example's commands as they are written, with only the README's placeholders filled in: the
 * service's address (`S`, 8787), a task's id (`tsk_01J...`, `$ID`, `$REQUEST_ID`), and the local
 * receiver's port (9000). Every command of the routes' walk-through needs an expectation here, so
 * an example added to the README without one fails this test.
 */
const root = path.resolve(import.meta.dirname, '..');

/**
 * Commands (the shell task) run in bubblewrap, which a newcomer's machine may lack: the README then
 * says to start the service with BASH_SANDBOX=none for the walk-through, and so does this file.
 */
const bwrap = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true']).status === 0;
if (!bwrap) console.warn('[readme examples] no working bubblewrap here: the service runs with BASH_SANDBOX=none, as the README says for such a machine');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

/** The one fenced block of the README in `lang` that holds `marker`. */
function block(lang: string, marker: string): string {
  const found = [...readme.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang && m[2].includes(marker));
  expect(found, `one \`\`\`${lang} block with ${marker}`).toHaveLength(1);
  return found[0][2];
}

/** A shell block's commands: comment lines dropped, a command's lines joined while a quote is open. */
function commands(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (const line of text.split('\n')) {
    if (!current && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    current += (current ? '\n' : '') + line;
    for (const [i, c] of [...line].entries()) {
      // A comment after a command ends the line for the shell, apostrophes and all.
      if (quote === null && c === '#' && (i === 0 || /\s/.test(line[i - 1]))) break;
      if (c === "'" || c === '"') quote = quote === null ? c : quote === c ? null : quote;
    }
    if (quote === null) {
      out.push(current);
      current = '';
    }
  }
  return out;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves when the output holds `pattern` (rejects if the process ends first). */
  waitFor: (pattern: RegExp) => Promise<string>;
  exited: Promise<number | null>;
  /** Ends the command and whatever it left running (its process group). */
  stop: () => void;
}

const started: Run[] = [];

/** Runs `command` with bash in `cwd`, in a process group of its own. */
function sh(command: string, env: Record<string, string>, cwd: string): Run {
  const child = spawn('bash', ['-c', command], { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  child.stdout.on('data', (b) => ((stdout += b), notify()));
  child.stderr.on('data', (b) => ((stderr += b), notify()));
  // Closed once every process holding its output has ended (a command's background job too).
  let closed = false;
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => ((closed = true), notify(), resolve(code))));
  const run: Run = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    stop: () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // Already gone.
      }
    },
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stdout + stderr);
          if (match) return resolve(match[0]);
          if (closed) return reject(new Error(`ended without ${pattern}:\n${stdout}\n${stderr}`));
          waiters.push(check);
        };
        check();
      }),
  };
  started.push(run);
  return run;
}

/** Runs a command to its end and answers what it printed. */
async function output(command: string, env: Record<string, string>, cwd: string): Promise<string> {
  const run = sh(command, env, cwd);
  const code = await run.exited;
  expect(code, `${command}\n${run.stderr()}`).toBe(0);
  return run.stdout();
}

const json = (text: string) => JSON.parse(text) as Record<string, any>;

let dir: string;
let S: string;
let modelUrl: string;

/** Reads a task's event stream to its end (it closes after `task.finished`): the task has ended. */
const ended = (id: string) => fetch(`${S}/tasks/${id}/events`).then((r) => r.text());

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'readme-'));
  const [modelPort, port] = [await freePort(), await freePort()];
  // The two terminals of "The routes, by example".
  const [model, service] = commands(block('bash', 'npm run model'));
  expect(model).toMatch(/^npm run model\s/);
  expect(service).toMatch(/^OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:8788\/v1 OPENAI_API_KEY=scripted npm run dev\s/);
  const modelRun = sh(model, { MODEL_PORT: String(modelPort) }, root);
  modelUrl = `http://127.0.0.1:${modelPort}/v1`;
  await modelRun.waitFor(new RegExp(`listening at ${modelUrl}`));
  const serviceRun = sh(
    service.replace(':8788', `:${modelPort}`),
    {
      PORT: String(port),
      DATABASE_PATH: path.join(dir, 'subagentd.db'),
      WORKSPACES_DIR: path.join(dir, 'workspaces'),
      // The local receiver of the webhooks' example needs it, as the README says.
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // An idle event stream shows a heartbeat within a second, so reading one never waits long.
      HEARTBEAT_MS: '1000',
      ...(!bwrap && { BASH_SANDBOX: 'none' }),
    },
    root,
  );
  S = `http://127.0.0.1:${port}`;
  await serviceRun.waitFor(/Server listening|listening at/i);
  for (;;) {
    const ok = await fetch(`${S}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (serviceRun.child.exitCode !== null) throw new Error(serviceRun.stderr());
    await new Promise((r) => setTimeout(r, 100));
  }
}, 90_000);

/**
 * Ends every command the tests started: SIGTERM to each process group, then, for one still open
 * after `patience` ms, what its group still runs (on stderr, to tell which process held on) and
 * SIGKILL. Cleaning up must not hang the file: the service's own shutdown is tested elsewhere
 * (crash-recovery, approvals-interrupted).
 */
async function stopAll(runs: Run[], patience: number): Promise<void> {
  for (const run of runs) run.stop();
  const within = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(r, ms, false))]);
  await Promise.all(
    runs.map(async (run) => {
      if (await within(run.exited, patience)) return;
      const group = spawnSync('ps', ['-o', 'pid,stat,etime,args', '-g', String(run.child.pid)], { encoding: 'utf8' }).stdout;
      console.error(`still running ${patience} ms after SIGTERM: ${run.child.spawnargs.at(-1)}\n${group}\n${run.stderr().slice(-2000)}`);
      try {
        process.kill(-run.child.pid!, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
      // A process outside the group may still hold the output open: stop reading it.
      for (const stream of [run.child.stdout, run.child.stderr, run.child.stdin]) stream?.destroy();
    }),
  );
}

afterAll(async () => {
  await stopAll(started.reverse(), 20_000);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 40_000);

describe("the README's examples, offline", () => {
  it('the routes, by example: every command of the walk-through, as written', async () => {
    const cwd = mkdtempSync(path.join(dir, 'walk-'));
    const env = () => ({ S });
    let general = '';
    let shell = '';
    let followUp = '';
    const id = (command: string) => command.replaceAll('tsk_01J...', general);
    /** Each command of the block, by what it does: what it printed must be what the README promises. */
    const expectations: Array<{ match: RegExp; run?: (command: string) => Promise<void> }> = [
      {
        match: /^S=/,
        run: async (command) => {
          expect(command).toBe('S=http://127.0.0.1:8787');
        },
      },
      {
        match: /^printf .* > app\.log$/,
        run: async (command) => {
          await output(command, env(), cwd);
          expect(readFileSync(path.join(cwd, 'app.log'), 'utf8').split('\n')).toHaveLength(4);
        },
      },
      {
        match: /-XPUT --data-binary @app\.log \$S\/workspaces\/T-123\/files\/logs\/app\.log/,
        run: async (command) => {
          expect(json(await output(command, env(), cwd))).toMatchObject({ relativePath: 'logs/app.log', size: 73, fsType: 'file' });
        },
      },
      {
        match: /"subagent_type": "general", "description": "Summarise error logs"/,
        run: async (command) => {
          const created = json(await output(command, env(), cwd));
          expect(created.status).toMatch(/^(queued|running)$/);
          general = created.id as string;
          expect(general).toMatch(/^tsk_/);
        },
      },
      {
        match: /"subagent_type": "shell", "description": "Count lines"/,
        run: async (command) => {
          const done = json(await output(command, env(), cwd));
          expect(done).toMatchObject({ status: 'completed', model: null, output: { exitCode: 0, stdout: '3 logs/app.log\n' } });
          shell = done.id as string;
          // What follows reads the general task: a newcomer types it once that task is done.
          await ended(general);
        },
      },
      {
        match: /^curl -s \$S\/tasks\/tsk_01J\.\.\. /,
        run: async (command) => {
          expect(json(await output(id(command), env(), cwd))).toMatchObject({
            id: general,
            status: 'completed',
            summary: 'Summarised the errors of logs/app.log by kind in reports/errors.md.',
            artifacts: [{ relativePath: 'reports/errors.md', fsType: 'file' }],
          });
        },
      },
      {
        match: /parentTaskId=T-123&status=completed&limit=20/,
        run: async (command) => {
          const { tasks } = json(await output(command, env(), cwd));
          expect(tasks.map((t: { id: string }) => t.id)).toEqual([shell, general]);
        },
      },
      {
        match: /\/cancel/,
        run: async (command) => {
          // A task that has ended stays as it ended.
          expect(json(await output(id(command), env(), cwd))).toMatchObject({ id: general, status: 'completed' });
        },
      },
      {
        match: /"task_id": "tsk_01J\.\.\."/,
        run: async (command) => {
          const created = json(await output(id(command), env(), cwd));
          followUp = created.id as string;
          const end = await ended(followUp);
          expect(end).toContain('"status":"completed"');
          const continued = json(await fetch(`${S}/tasks/${followUp}`).then((r) => r.text()));
          expect(continued).toMatchObject({ status: 'completed', sessionId: general, previousTaskId: general });
        },
      },
      {
        match: /-XPOST \$S\/tasks\/tsk_01J\.\.\.\/messages/,
        run: async (command) => {
          // Steering is for a running task; this one has ended, and the answer says how to go on.
          expect(json(await output(id(command), env(), cwd)).error).toMatchObject({ code: 'task_finished' });
        },
      },
      {
        match: /^curl -s \$S\/tasks\/tsk_01J\.\.\.\/messages$/,
        run: async (command) => {
          const { messages } = json(await output(id(command), env(), cwd));
          expect(messages[0]).toEqual({ role: 'user', content: 'Read logs/app.log, count errors by kind, write reports/errors.md.' });
          expect(messages.at(-1).content[0]).toMatchObject({ type: 'tool-result', toolName: 'complete' });
        },
      },
      {
        match: /-XPUT \$S\/budgets\/user\/u-42/,
        run: async (command) => {
          expect(json(await output(command, env(), cwd))).toMatchObject({ scope: 'user', id: 'u-42', maxCostUsd: 5 });
        },
      },
      {
        match: /\/resume/,
        run: async (command) => {
          expect(json(await output(id(command), env(), cwd)).error).toMatchObject({ code: 'task_not_paused' });
        },
      },
      {
        match: /hooks\.your-orchestrator\.com/,
        run: async (command) => {
          // A placeholder of a public address: offline it does not resolve, and the answer says so.
          const answer = json(await output(command, env(), cwd));
          if (answer.error) expect(answer.error).toMatchObject({ code: 'invalid_webhook_url', message: expect.stringContaining('does not resolve') });
          else expect(answer).toMatchObject({ url: 'https://hooks.your-orchestrator.com/subagentd', secret: expect.any(String) });
        },
      },
      {
        match: /^curl -s \$S\/workspaces\/T-123 /,
        run: async (command) => {
          const { files } = json(await output(command, env(), cwd));
          expect(files.map((f: { path: string }) => f.path)).toEqual(expect.arrayContaining(['logs/app.log', 'reports/errors.md']));
        },
      },
      {
        match: /files\/reports\/errors\.md/,
        run: async (command) => {
          const report = await output(command, env(), cwd);
          expect(report).toContain('2 errors in logs/app.log.');
          expect(report).toContain('| ECONNRESET | 1 |');
          expect(report).toContain('| ETIMEDOUT | 1 |');
        },
      },
      {
        match: /-XDELETE \$S\/workspaces\/T-123\/files\/logs/,
        run: async (command) => {
          expect(await output(command, env(), cwd)).toBe('');
          expect((await fetch(`${S}/workspaces/T-123/files/logs/app.log`)).status).toBe(404);
        },
      },
      {
        match: /\$S\/agents /,
        run: async (command) => {
          const { agents } = json(await output(command, env(), cwd));
          expect(agents.map((a: { type: string }) => a.type)).toEqual(expect.arrayContaining(['general', 'explore', 'shell']));
        },
      },
      {
        match: /agent-card\.json/,
        run: async (command) => {
          expect(json(await output(command, env(), cwd))).toMatchObject({ name: expect.any(String), skills: expect.any(Array) });
        },
      },
      {
        match: /usage\?userId=u-42&groupBy=day/,
        run: async (command) => {
          const usage = json(await output(command, env(), cwd));
          expect(usage.totals.costMicroUsd).toBeGreaterThan(0);
          expect(usage.groups).toHaveLength(1);
        },
      },
      {
        match: /usage\/records\?parentTaskId=T-123/,
        run: async (command) => {
          const { records } = json(await output(command, env(), cwd));
          expect(records.map((r: { taskId: string }) => r.taskId)).toEqual(expect.arrayContaining([general, shell, followUp]));
        },
      },
      {
        match: /\$S\/healthz ; curl -s \$S\/metrics/,
        run: async (command) => {
          const text = await output(command, env(), cwd);
          expect(text.startsWith('{"status":"ok"}')).toBe(true);
          expect(text).toMatch(/^subagentd_tasks_total\{.*\} \d+/m);
        },
      },
      {
        match: /curl -sN \$S\/tasks\/tsk_01J\.\.\.\/events/,
        run: async (command) => {
          // An ended task's stream replays it all and closes by itself.
          const text = await output(id(command), env(), cwd);
          expect(text).toMatch(/^id: 1\nevent: task\.started\n/m);
          expect(text).toContain('event: task.finished');
        },
      },
      {
        match: /\/events\?parentTaskId=T-123" -H 'Last-Event-ID: 20'/,
        run: async (command) => {
          // The parent's stream stays open for what comes next: read its first record, then leave.
          const run = sh(command, env(), cwd);
          const first = await run.waitFor(/(^|\n)(id: \d+\n[\s\S]*?|: \{.*\})\n\n/);
          run.stop();
          const ids = [...(first + run.stdout()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
          // The three tasks above wrote more than 20 events in this parent: the replay starts at 21.
          expect(ids[0]).toBe(21);
        },
      },
      // `npx wscat` downloads wscat: a tool the reader brings, not something to run offline.
      { match: /^npx wscat -c "ws:\/\/127\.0\.0\.1:8787\/tasks\/tsk_01J\.\.\.\/stream\?after=0"$/ },
      { match: /^npx wscat -c "ws:\/\/127\.0\.0\.1:8787\/stream\?parentTaskId=T-123"$/ },
    ];
    const walk = commands(block('bash', 'S=http://127.0.0.1:8787'));
    const unmatched = walk.filter((c) => expectations.filter((e) => e.match.test(c)).length !== 1);
    expect(unmatched, 'each command of the walk-through has one expectation').toEqual([]);
    for (const command of walk) await expectations.find((e) => e.match.test(command))!.run?.(command);
  });

  it("the local webhook receiver prints a task's deliveries", async () => {
    const port = await freePort();
    const script = block('bash', "require('http').createServer");
    const receiver = sh(script.replaceAll(':9000', `:${port}`).replace('.listen(9000)', `.listen(${port})`), { S }, dir);
    const created = json(await receiver.waitFor(/\{"id":"whk_[^\n]*\}/));
    expect(created).toMatchObject({ url: `http://127.0.0.1:${port}/hooks`, secret: expect.stringMatching(/^whsec_/) });
    const task = await fetch(`${S}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subagent_type: 'shell', description: 'Hook', command: 'echo hooked', context: { parentTaskId: 'T-hooks', userId: 'u-42' } }),
    }).then(async (r) => json(await r.text()));
    const delivered = await receiver.waitFor(new RegExp(`\\{"type":"task\\.finished"[^\\n]*${task.id}[^\\n]*\\}`));
    expect(json(delivered)).toMatchObject({ type: 'task.finished', data: { taskId: task.id, status: 'completed', parentTaskId: 'T-hooks' } });
  });

  it('the README orchestrator delegates to a subagent and answers with its summary', async () => {
    const code = block('ts', "createOpenAI().chat('gpt-4.1-mini')");
    expect(code).toContain("baseUrl: 'http://127.0.0.1:8787'");
    const place = mkdtempSync(path.join(dir, 'orchestrator-'));
    // The orchestrator's own project with the client and the ai SDK installed: here this repository's
    // packages, the client from its source (test/package.test.ts installs the packed one).
    symlinkSync(path.join(root, 'node_modules'), path.join(place, 'node_modules'));
    const client = path.join(root, 'packages/client/src/index.ts');
    writeFileSync(path.join(place, 'tsconfig.json'), JSON.stringify({ compilerOptions: { paths: { '@subagentd/client': [client] } } }));
    writeFileSync(path.join(place, 'orchestrator.mts'), code.replace('http://127.0.0.1:8787', S));
    await fetch(`${S}/workspaces/T-123/files/logs/app.log`, { method: 'PUT', body: '10:00 ERROR EACCES: /var/cache\n10:01 INFO ok\n' });
    const printed = await output(`npx tsx orchestrator.mts`, { OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: 'scripted' }, place);
    expect(printed).toMatch(/^The subagent completed \(tsk_\w+\)/);
    const [, taskId] = /\((tsk_\w+)\)/.exec(printed)!;
    const task = json(await fetch(`${S}/tasks/${taskId}`).then((r) => r.text()));
    expect(task).toMatchObject({ status: 'completed', context: { parentTaskId: 'T-123', userId: 'u-42' }, artifacts: [{ relativePath: 'reports/errors.md' }] });
    expect(printed.trim()).toBe(`The subagent completed (${taskId}): ${task.summary} Files: reports/errors.md (${task.artifacts[0].size} bytes).`);
    expect(await fetch(`${S}/workspaces/T-123/files/reports/errors.md`).then((r) => r.text())).toContain('| EACCES | 1 |');
  });

  it('an openapi-fetch client uploads a string as it is, with the bodySerializer', async () => {
    const code = block('ts', "import createClient from 'openapi-fetch';");
    const [generate] = code.split('\n');
    expect(generate).toBe('// npx openapi-typescript http://127.0.0.1:8787/docs/json -o subagentd-api.ts');
    const place = mkdtempSync(path.join(dir, 'openapi-fetch-'));
    symlinkSync(path.join(root, 'node_modules'), path.join(place, 'node_modules'));
    await output(generate.slice(3).replace('http://127.0.0.1:8787', S), {}, place);
    writeFileSync(path.join(place, 'upload.mts'), code.replaceAll('http://127.0.0.1:8787', S));
    expect(await output('npx tsx upload.mts', {}, place)).toBe('36\n');
    const stored = await fetch(`${S}/workspaces/T-123/files/notes/todo.txt`).then((r) => r.text());
    expect(stored).toBe('"Check the \\ paths",\nthen the logs.\n');
  });

  it("examples/orchestrator.ts, run directly: asks the terminal before the subagent's command, then answers", async () => {
    expect(existsSync(path.join(root, 'examples/orchestrator.ts'))).toBe(true);
    const run = sh(
      `npx tsx examples/orchestrator.ts "Summarise the errors in logs/"`,
      { SUBAGENTD_URL: S, OPENAI_BASE_URL: modelUrl, OPENAI_API_KEY: 'scripted' },
      root,
    );
    await run.waitFor(/Allow bash \{"command":"wc -l reports\/errors\.md && head -3 reports\/errors\.md"\}\? \[y\/N\] /);
    run.child.stdin!.write('y\n');
    expect(await run.exited).toBe(0);
    const [, taskId] = /\((tsk_\w+)\)/.exec(run.stdout())!;
    const task = json(await fetch(`${S}/tasks/${taskId}`).then((r) => r.text()));
    expect(task).toMatchObject({ status: 'completed', description: 'Delegated by the orchestrator' });
    expect(run.stdout().trim()).toBe(`The subagent completed (${taskId}): ${task.summary} Files: reports/errors.md (${task.artifacts[0].size} bytes).`);
    // The command the terminal allowed ran, and its progress reached the orchestrator.
    const events = await fetch(`${S}/tasks/${taskId}/events`).then((r) => r.text());
    expect(events).toContain('"decision":"allow"');
    expect(run.stderr()).toContain(`${taskId} tool.call bash`);
  });
});
