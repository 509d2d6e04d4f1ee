import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';
import { closeDatabase, openDatabase } from '../src/store/database';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, taskEnd, TEST_API_KEY, type TestService } from './support/harness';
import { until } from './support/until';

/** Hooks of definitions (seed 001 `hooks`): before a tool call, after it, and at `complete`. */

const HOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** A receiver of URL hooks on loopback: checks each signature, answers by what the call names. */
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  verified: boolean;
}
async function startHookReceiver() {
  const received: Received[] = [];
  const verifier = new Webhook(HOOK_SECRET);
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let verified = true;
      try {
        verifier.verify(body, req.headers as Record<string, string>);
      } catch {
        verified = false;
      }
      received.push({ headers: req.headers, body, verified });
      const text = body;
      if (text.includes('frozen/'))
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ decision: 'deny', reason: 'frozen/ is frozen by the release bot' }));
      else if (text.includes('hang.txt')) setTimeout(() => res.writeHead(204).end(), 5_000).unref();
      else if (text.includes('broken.txt')) res.writeHead(500).end('receiver down');
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The definitions under test, as the seeds write them. */
function writeAgents(dir: string, hookUrl: string) {
  mkdirSync(path.join(dir, 'agents'), { recursive: true });
  const agent = (name: string, front: string) =>
    writeFileSync(path.join(dir, 'agents', `${name}.md`), `---\nname: ${name}\ndescription: ${name} under test\n${front}---\nWork.\n`);
  // Exit 2 refuses `rm -rf` with its standard error; every other bash line passes.
  agent(
    'guarded',
    `hooks:
  PreToolUse:
    - matcher: bash
      command: |
        if grep -q 'rm -rf'; then echo "no rm -rf here: use git clean" >&2; exit 2; fi
  PostToolUse:
    - matcher: write_file|edit_file
      command: |
        echo '{"decision":"block","reason":"lines over 80 characters: run the formatter"}'
`,
  );
  // A JSON answer per what the input holds: a new input, a broken one, a question, an input a rule refuses.
  agent(
    'rewriter',
    `hooks:
  PreToolUse:
    - matcher: write_file
      command: |
        input=$(cat)
        case "$input" in
          *REDIRECT*) echo '{"decision":"allow","updatedInput":{"path":"redirected.txt","content":"rewritten by the hook"}}' ;;
          *BADINPUT*) echo '{"updatedInput":{"path":42}}' ;;
          *ASKME*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"a person checks this one"}}' ;;
          *SNEAK*) echo '{"decision":"allow","updatedInput":{"path":"locked/x.txt","content":"sneaked"}}' ;;
          *ALLOWED*) echo '{"decision":"allow"}' ;;
        esac
`,
  );
  // Refuses to end until the tests pass (here: a file says so).
  agent(
    'until-green',
    `hooks:
  Stop:
    - command: |
        input=$(cat)
        echo "$input" >> .stop-calls.jsonl
        test -f tests-pass.txt || { echo "the tests do not pass yet" >&2; exit 2; }
`,
  );
  agent('never-done', `maxSteps: 3\nhooks:\n  Stop:\n    - command: exit 2\n`);
  // A hook that hangs, one that fails: neither blocks.
  agent(
    'flaky',
    `hooks:
  PreToolUse:
    - matcher: '*'
      command: sleep 30
      timeoutMs: 300
    - matcher: list_files
      command: echo broken >&2; exit 1
`,
  );
  agent('stuck', `hooks:\n  PreToolUse:\n    - command: echo started > hook-started.txt; sleep 600\n      timeoutMs: 600000\n`);
  agent('remote', `hooks:\n  PreToolUse:\n    - matcher: write_file\n      url: ${hookUrl}\n      timeoutMs: 500\n`);
  // A hook sees the task's skills as its bash does: read-only at .skills/<name>.
  mkdirSync(path.join(dir, 'skills', 'style-guide'), { recursive: true });
  writeFileSync(path.join(dir, 'skills', 'style-guide', 'SKILL.md'), '---\nname: style-guide\ndescription: How we write\n---\nSTYLE-GUIDE-BODY\n');
  agent(
    'skilled',
    `skills: [style-guide]
hooks:
  PreToolUse:
    - matcher: list_files
      command: |
        cat .skills/style-guide/SKILL.md > hook-skill.txt
        { echo x > .skills/style-guide/new.md; } 2> hook-skill-err.txt
`,
  );
  // What a hook sees of the service: its environment.
  agent('nosy', `hooks:\n  PreToolUse:\n    - matcher: list_files\n      command: env > hook-env.txt\n`);
  // Where it can write: only ever run inside bubblewrap (the service runs as root on some machines).
  agent(
    'escaper',
    `hooks:
  PreToolUse:
    - matcher: list_files
      command: |
        echo escaped > ${path.join(dir, 'escaped-by-hook.txt')}
        { echo escaped > /usr/escaped-by-hook; } 2>> hook-escape.txt
        env > hook-env.txt
`,
  );
}

let model: ScriptedModel;
let receiver: Awaited<ReturnType<typeof startHookReceiver>>;
let svc: TestService;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  receiver = await startHookReceiver();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-'));
  writeAgents(dir, receiver.url);
  svc = await startService({ model, dir, env: { HOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: 'true', SKILLS_DIR: path.join(dir, 'skills') } });
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspace = (parent: string) => path.join(svc.config.workspacesDir, parent);
const run = async (type: string, prompt: string, parent: string, options?: object) =>
  taskEnd(
    svc,
    (
      await svc.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: type, prompt, context: { parentTaskId: parent, userId: 'u' }, ...(options && { options }) }),
      })
    ).json().id,
  );
/** What the model read back from the tools in its request after turn `turn` of the task whose prompt holds `marker`. */
const resultsAt = (marker: string, turn: number) => {
  const requests = model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
  return requests[turn].body.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
};
const hookEvents = async (id: string) => (await storedEvents(svc, id)).filter((e) => e.type === 'hook.ran').map((e) => e.data as Record<string, unknown>);
const done = { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] };

describe('PreToolUse', () => {
  it('blocks a call on exit 2: it does not run and the model reads the reason; other calls run', async () => {
    mkdirSync(path.join(workspace('T-guard'), 'build'), { recursive: true });
    model.script('GUARD', [
      {
        toolCalls: [
          { name: 'bash', args: { command: 'rm -rf build' } },
          { name: 'bash', args: { command: 'echo fine > fine.txt' } },
          { name: 'list_files', args: {} },
        ],
      },
      done,
    ]);
    const task = await run('guarded', 'GUARD', 'T-guard');
    expect(task).toMatchObject({ status: 'completed' });
    const [blocked, ran, listed] = resultsAt('GUARD', 1);
    expect(blocked).toBe('blocked by a PreToolUse hook: no rm -rf here: use git clean');
    expect(ran).toContain('"exitCode":0');
    expect(listed).toContain('build');
    expect(existsSync(path.join(workspace('T-guard'), 'build'))).toBe(true);
    expect(readFileSync(path.join(workspace('T-guard'), 'fine.txt'), 'utf8')).toBe('fine\n');

    const events = await storedEvents(svc, task.id);
    // One hook per bash call (list_files matches no hook), each between its call and its result.
    const hooks = events.filter((e) => e.type === 'hook.ran').map((e) => e.data as Record<string, unknown>);
    expect(hooks).toHaveLength(2);
    const byCall = new Map(hooks.map((h) => [h.toolCallId, h]));
    const calls = events.filter((e) => e.type === 'tool.call').map((e) => e.data as { toolCallId: string; toolName: string });
    expect(byCall.get(calls[0].toolCallId)).toMatchObject({
      step: 1,
      event: 'PreToolUse',
      matcher: 'bash',
      toolName: 'bash',
      decision: 'block',
      reason: 'no rm -rf here: use git clean',
      durationMs: expect.any(Number),
    });
    expect(byCall.get(calls[1].toolCallId)).toMatchObject({ decision: 'none' });
    const seqOf = (type: string, id: string) => events.find((e) => e.type === type && (e.data as { toolCallId?: string }).toolCallId === id)!.seq!;
    for (const c of calls.slice(0, 2)) {
      const hook = events.find((e) => e.type === 'hook.ran' && (e.data as { toolCallId: string }).toolCallId === c.toolCallId)!.seq!;
      expect(seqOf('tool.call', c.toolCallId)).toBeLessThan(hook);
      expect(hook).toBeLessThan(seqOf('tool.result', c.toolCallId));
    }
  });

  it('takes a URL hook’s signed answer: a deny refuses the call; the hook got the event as its body', async () => {
    model.script('REMOTE-DENY', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'frozen/release.txt', content: 'v2' } },
          { name: 'write_file', args: { path: 'notes.txt', content: 'fine' } },
        ],
      },
      done,
    ]);
    const task = await run('remote', 'REMOTE-DENY', 'T-remote');
    expect(task).toMatchObject({ status: 'completed' });
    const [denied, written] = resultsAt('REMOTE-DENY', 1);
    expect(denied).toBe('blocked by a PreToolUse hook: frozen/ is frozen by the release bot');
    expect(written).toContain('notes.txt');
    expect(existsSync(path.join(workspace('T-remote'), 'frozen', 'release.txt'))).toBe(false);
    expect(readFileSync(path.join(workspace('T-remote'), 'notes.txt'), 'utf8')).toBe('fine');

    const mine = receiver.received.filter((r) => JSON.parse(r.body).task_id === task.id);
    expect(mine).toHaveLength(2);
    expect(mine.every((r) => r.verified && String(r.headers['webhook-id']).startsWith('hook_'))).toBe(true);
    const frozen = JSON.parse(mine.find((r) => r.body.includes('frozen/'))!.body);
    expect(frozen).toEqual({
      hook_event_name: 'PreToolUse',
      task_id: task.id,
      parent_task_id: 'T-remote',
      tool_name: 'write_file',
      tool_use_id: expect.any(String),
      tool_input: { path: 'frozen/release.txt', content: 'v2' },
    });
    expect((await hookEvents(task.id)).map((h) => h.decision).sort()).toEqual(['deny', 'none']);
  });

  it('sends no URL hook to a loopback address unless WEBHOOK_ALLOW_PRIVATE: the hook fails, blocking nothing', async () => {
    const d = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-guard-'));
    writeAgents(d, receiver.url);
    const guarded = await startService({ model, dir: d, env: { HOOK_SECRET, SKILLS_DIR: path.join(d, 'skills') } });
    try {
      model.script('REMOTE-GUARD', [{ toolCalls: [{ name: 'write_file', args: { path: 'frozen/release.txt', content: 'v2' } }] }, done]);
      const { id } = (
        await guarded.inject({
          method: 'POST',
          url: '/tasks',
          payload: taskBody({ subagent_type: 'remote', prompt: 'REMOTE-GUARD', context: { parentTaskId: 'T-guarded', userId: 'u' } }),
        })
      ).json();
      expect(await taskEnd(guarded, id)).toMatchObject({ status: 'completed' });
      expect(readFileSync(path.join(guarded.config.workspacesDir, 'T-guarded', 'frozen', 'release.txt'), 'utf8')).toBe('v2');
      expect(receiver.received.some((r) => r.body.includes(id))).toBe(false);
      const hooks = (await storedEvents(guarded, id)).filter((e) => e.type === 'hook.ran').map((e) => e.data);
      expect(hooks).toEqual([
        expect.objectContaining({ decision: 'failed', reason: '127.0.0.1 resolves to 127.0.0.1, a private, loopback or link-local address' }),
      ]);
    } finally {
      await guarded.close();
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('runs the call with a valid updatedInput, refuses an invalid one with the reason, and still obeys a deny rule', async () => {
    mkdirSync(workspace('T-rewrite'), { recursive: true });
    model.script('REWRITE', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'REDIRECT.txt', content: 'original' } },
          { name: 'write_file', args: { path: 'BADINPUT.txt', content: 'original' } },
          { name: 'write_file', args: { path: 'SNEAK.txt', content: 'original' } },
          { name: 'write_file', args: { path: 'locked/ALLOWED.txt', content: 'allowed?' } },
        ],
      },
      done,
    ]);
    // The task's rules refuse writes under locked/: a hook's allow does not lift that, nor does its new input get past it.
    const task = await run('rewriter', 'REWRITE', 'T-rewrite', { permissions: { 'write_file(locked/**)': 'deny' } });
    expect(task).toMatchObject({ status: 'completed' });
    const [redirected, bad, sneaked, allowed] = resultsAt('REWRITE', 1);
    expect(redirected).toContain('redirected.txt');
    expect(readFileSync(path.join(workspace('T-rewrite'), 'redirected.txt'), 'utf8')).toBe('rewritten by the hook');
    expect(existsSync(path.join(workspace('T-rewrite'), 'REDIRECT.txt'))).toBe(false);
    expect(bad).toMatch(/^the PreToolUse hook's updatedInput does not fit the write_file tool \(path: .+\); the call did not run$/);
    expect(existsSync(path.join(workspace('T-rewrite'), 'BADINPUT.txt'))).toBe(false);
    expect(sneaked).toBe('denied by the permission rule "write_file(locked/**)"');
    expect(existsSync(path.join(workspace('T-rewrite'), 'locked'))).toBe(false);
    expect(allowed).toBe('denied by the permission rule "write_file(locked/**)"');
    const hooks = await hookEvents(task.id);
    expect(hooks.map((h) => h.decision).sort()).toEqual(['allow', 'allow', 'allow', 'none']);
    expect(hooks.find((h) => (h.updatedInput as { path?: string } | undefined)?.path === 'redirected.txt')).toMatchObject({ decision: 'allow' });
  });

  it('asks the caller when a hook says ask, and runs the call (with its input) once allowed', async () => {
    model.script('HOOK-ASK', [{ toolCalls: [{ name: 'write_file', args: { path: 'ASKME.txt', content: 'approved' } }] }, done]);
    const { id } = (
      await svc.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: 'rewriter', prompt: 'HOOK-ASK', context: { parentTaskId: 'T-hook-ask', userId: 'u' } }),
      })
    ).json();
    await until(async () => (await svc.inject({ url: `/tasks/${id}` })).json().status === 'paused');
    const paused = (await svc.inject({ url: `/tasks/${id}` })).json();
    expect(paused.pause).toMatchObject({ reason: 'approval', toolName: 'write_file', input: { path: 'ASKME.txt', content: 'approved' } });
    expect(existsSync(path.join(workspace('T-hook-ask'), 'ASKME.txt'))).toBe(false);
    expect((await svc.inject({ method: 'POST', url: `/tasks/${id}/approvals/${paused.pause.requestId}`, payload: { decision: 'allow' } })).statusCode).toBe(
      200,
    );
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'completed' });
    expect(readFileSync(path.join(workspace('T-hook-ask'), 'ASKME.txt'), 'utf8')).toBe('approved');
    expect(await hookEvents(id)).toEqual([expect.objectContaining({ event: 'PreToolUse', decision: 'ask', reason: 'a person checks this one' })]);
  });

  it('lets the call run when a hook hangs past its timeoutMs or fails, and says so in the events', async () => {
    model.script('FLAKY', [
      {
        toolCalls: [
          { name: 'bash', args: { command: 'echo ran > ran.txt' } },
          { name: 'list_files', args: {} },
        ],
      },
      done,
    ]);
    const task = await run('flaky', 'FLAKY', 'T-flaky');
    expect(task).toMatchObject({ status: 'completed' });
    expect(readFileSync(path.join(workspace('T-flaky'), 'ran.txt'), 'utf8')).toBe('ran\n');
    const [bash, listed] = resultsAt('FLAKY', 1);
    expect(bash).toContain('"exitCode":0');
    expect(listed).not.toMatch(/blocked|denied/);
    const hooks = await hookEvents(task.id);
    expect(hooks.filter((h) => h.decision === 'timeout')).toHaveLength(2);
    expect(hooks.filter((h) => h.decision === 'failed')).toEqual([expect.objectContaining({ matcher: 'list_files', reason: 'exit code 1: broken' })]);
  });

  it('is killed with its task: a cancelled task does not wait for its hook', async () => {
    model.script('STUCK', [{ toolCalls: [{ name: 'bash', args: { command: 'echo ran > ran.txt' } }] }, done]);
    const { id } = (
      await svc.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: 'stuck', prompt: 'STUCK', context: { parentTaskId: 'T-stuck', userId: 'u' } }),
      })
    ).json();
    await until(async () => existsSync(path.join(workspace('T-stuck'), 'hook-started.txt')));
    expect((await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` })).statusCode).toBe(202);
    expect(await taskEnd(svc, id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    expect(existsSync(path.join(workspace('T-stuck'), 'ran.txt'))).toBe(false);
    const events = await storedEvents(svc, id);
    expect(events.at(-1)?.type).toBe('task.finished');
    expect(events.filter((e) => e.type === 'hook.ran')).toEqual([]);
  });

  it('lets the call run when a URL hook hangs or answers an error status', async () => {
    model.script('REMOTE-FLAKY', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'hang.txt', content: 'a' } },
          { name: 'write_file', args: { path: 'broken.txt', content: 'b' } },
        ],
      },
      done,
    ]);
    const task = await run('remote', 'REMOTE-FLAKY', 'T-remote-flaky');
    expect(task).toMatchObject({ status: 'completed' });
    expect(readFileSync(path.join(workspace('T-remote-flaky'), 'hang.txt'), 'utf8')).toBe('a');
    expect(readFileSync(path.join(workspace('T-remote-flaky'), 'broken.txt'), 'utf8')).toBe('b');
    const hooks = await hookEvents(task.id);
    expect(hooks.map((h) => h.decision).sort()).toEqual(['failed', 'timeout']);
    expect(hooks.find((h) => h.decision === 'failed')).toMatchObject({ reason: "the hook's URL answered 500" });
  });
});

describe('PostToolUse', () => {
  it('adds a block’s reason to the result the model reads; the call’s effect stays', async () => {
    model.script('POST-HOOK', [{ toolCalls: [{ name: 'write_file', args: { path: 'wide.txt', content: 'x'.repeat(120) } }] }, done]);
    const task = await run('guarded', 'POST-HOOK', 'T-post');
    expect(task).toMatchObject({ status: 'completed' });
    const [result] = resultsAt('POST-HOOK', 1);
    expect(result).toContain('wide.txt');
    expect(result).toMatch(/\n\nPostToolUse hook: lines over 80 characters: run the formatter$/);
    expect(readFileSync(path.join(workspace('T-post'), 'wide.txt'), 'utf8')).toBe('x'.repeat(120));
    expect(await hookEvents(task.id)).toEqual([expect.objectContaining({ event: 'PostToolUse', matcher: 'write_file|edit_file', decision: 'block' })]);
  });
});

describe('Stop', () => {
  it('refuses complete until its condition holds, and the run goes on', async () => {
    model.script('UNTIL-GREEN', [done, { toolCalls: [{ name: 'write_file', args: { path: 'tests-pass.txt', content: 'green' } }] }, done]);
    const task = await run('until-green', 'UNTIL-GREEN', 'T-green');
    expect(task).toMatchObject({ status: 'completed', summary: 'done', stopReason: 'complete', steps: 3 });
    expect(resultsAt('UNTIL-GREEN', 1)).toEqual(['complete was refused by a Stop hook; the task goes on. the tests do not pass yet']);
    expect((await hookEvents(task.id)).map((h) => [h.step, h.event, h.toolName, h.decision])).toEqual([
      [1, 'Stop', 'complete', 'block'],
      [3, 'Stop', 'complete', 'none'],
    ]);
    // It was told whether it had refused before (Claude Code's stop_hook_active).
    const calls = readFileSync(path.join(workspace('T-green'), '.stop-calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(calls.map((c) => [c.hook_event_name, c.tool_name, c.stop_hook_active])).toEqual([
      ['Stop', 'complete', false],
      ['Stop', 'complete', true],
    ]);
    expect(calls[0].tool_response).toMatchObject({ summary: 'done', artifacts: [] });
  });

  it('ends at maxSteps when a Stop hook never lets go', async () => {
    model.script('NEVER-DONE', () => done);
    const task = await run('never-done', 'NEVER-DONE', 'T-never');
    expect(task).toMatchObject({ status: 'completed', stopReason: 'max_steps', steps: 3 });
    expect((await hookEvents(task.id)).map((h) => h.decision)).toEqual(['block', 'block', 'block']);
  });
});

describe('what a hook can reach', () => {
  it("gets no key of the service in its environment, not even the service process's own", async () => {
    const before = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = TEST_API_KEY;
    try {
      model.script('NOSY', [{ toolCalls: [{ name: 'list_files', args: {} }] }, done]);
      expect(await run('nosy', 'NOSY', 'T-nosy')).toMatchObject({ status: 'completed' });
    } finally {
      if (before === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = before;
    }
    const env = readFileSync(path.join(workspace('T-nosy'), 'hook-env.txt'), 'utf8');
    expect(env).toContain(`HOME=${workspace('T-nosy')}`);
    for (const name of ['OPENAI_API_KEY', 'API_KEYS', 'HOOK_SECRET', 'DATABASE_PATH']) expect(env).not.toContain(`${name}=`);
    expect(env).not.toContain(TEST_API_KEY);
    expect(env).not.toContain(HOOK_SECRET);
  });

  it('lists a definition’s hooks by matcher and type only in GET /agents', async () => {
    const agents = (await svc.inject({ url: '/agents' })).json().agents as Array<{ type: string; hooks?: unknown }>;
    expect(agents.find((a) => a.type === 'guarded')?.hooks).toEqual({
      PreToolUse: [{ matcher: 'bash', type: 'command' }],
      PostToolUse: [{ matcher: 'write_file|edit_file', type: 'command' }],
    });
    expect(agents.find((a) => a.type === 'remote')?.hooks).toEqual({ PreToolUse: [{ matcher: 'write_file', type: 'url' }] });
    expect(JSON.stringify(agents)).not.toContain(receiver.url);
    expect(agents.find((a) => a.type === 'general')).not.toHaveProperty('hooks');
  });
});

/** Why bubblewrap cannot run here, or null when it can. */
function bwrapMissing(): string | null {
  const r = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true'], { encoding: 'utf8', timeout: 5000 });
  if (r.error) return `bubblewrap is not installed (${r.error.message})`;
  return r.status === 0 ? null : `bubblewrap cannot run here (${r.stderr.trim()})`;
}
const missing = bwrapMissing();
if (missing) console.warn(`[hook sandbox test] skipped: ${missing}`);

describe.skipIf(missing !== null)('a command hook in the sandbox (bubblewrap)', () => {
  let boxed: TestService;
  beforeAll(async () => {
    const d = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-bwrap-'));
    writeAgents(d, receiver.url);
    boxed = await startService({ model, dir: d, env: { BASH_SANDBOX: 'bwrap', HOOK_SECRET, SKILLS_DIR: path.join(d, 'skills') } });
  });
  afterAll(async () => {
    const d = boxed?.dir;
    await boxed?.close();
    if (d) rmSync(d, { recursive: true, force: true });
  });

  it('cannot write outside the workspace nor read the service’s keys', async () => {
    model.script('ESCAPER', [{ toolCalls: [{ name: 'list_files', args: {} }] }, done]);
    const { id } = (
      await boxed.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: 'escaper', prompt: 'ESCAPER', context: { parentTaskId: 'T-boxed', userId: 'u' } }),
      })
    ).json();
    expect(await taskEnd(boxed, id)).toMatchObject({ status: 'completed' });
    const ws = path.join(boxed.config.workspacesDir, 'T-boxed');
    // The service's folder is not there for it (what it writes there is gone with the sandbox); the system is read-only.
    expect(existsSync(path.join(boxed.dir, 'escaped-by-hook.txt'))).toBe(false);
    expect(existsSync('/usr/escaped-by-hook')).toBe(false);
    expect(readFileSync(path.join(ws, 'hook-escape.txt'), 'utf8')).toContain('Read-only file system');
    const env = readFileSync(path.join(ws, 'hook-env.txt'), 'utf8');
    expect(env).not.toContain(TEST_API_KEY);
    expect(env).not.toContain(HOOK_SECRET);
    expect(env).not.toContain('OPENAI_API_KEY=');
  });

  it('reads a skill of the task, as its bash does, and cannot write into it', async () => {
    model.script('SKILLED', [{ toolCalls: [{ name: 'list_files', args: {} }] }, done]);
    const { id } = (
      await boxed.inject({
        method: 'POST',
        url: '/tasks',
        payload: taskBody({ subagent_type: 'skilled', prompt: 'SKILLED', context: { parentTaskId: 'T-skilled', userId: 'u' } }),
      })
    ).json();
    expect(await taskEnd(boxed, id)).toMatchObject({ status: 'completed' });
    const ws = path.join(boxed.config.workspacesDir, 'T-skilled');
    expect(readFileSync(path.join(ws, 'hook-skill.txt'), 'utf8')).toContain('STYLE-GUIDE-BODY');
    expect(readFileSync(path.join(ws, 'hook-skill-err.txt'), 'utf8')).toContain('Read-only file system');
    expect(existsSync(path.join(boxed.dir, 'skills', 'style-guide', 'new.md'))).toBe(false);
  });
});

describe('definitions with hooks that cannot run', () => {
  /** The start of a service over `agents` (file name → content): its error, or null when it started. */
  async function startError(agents: Record<string, string>, env: Record<string, string> = {}): Promise<string | null> {
    const d = mkdtempSync(path.join(tmpdir(), 'subagentd-hooks-bad-'));
    mkdirSync(path.join(d, 'agents'));
    for (const [name, text] of Object.entries(agents)) writeFileSync(path.join(d, 'agents', name), text);
    const config = loadConfig({
      DATABASE_PATH: path.join(d, 'db.sqlite'),
      WORKSPACES_DIR: path.join(d, 'ws'),
      AGENTS_DIR: path.join(d, 'agents'),
      LOG_LEVEL: 'silent',
      BASH_SANDBOX: 'none',
      ...env,
    });
    const db = await openDatabase(config.databasePath);
    try {
      const app = await createApp({ config, db, logger: pino({ level: 'silent' }) });
      await app.server.close();
      return null;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await closeDatabase(db);
      rmSync(d, { recursive: true, force: true });
    }
  }
  const def = (name: string, hooks: string) => `---\nname: ${name}\ndescription: d\nhooks:\n${hooks}---\n`;

  it('stops the start naming the definition: a hook with neither command nor url, a timeout out of bounds, too many hooks', async () => {
    expect(await startError({ 'a.md': def('no-action', '  PreToolUse:\n    - matcher: bash\n') })).toMatch(
      /subagent definition "no-action" \(.*a\.md\): hooks\.PreToolUse\.0: a hook has either `command` or `url`/,
    );
    expect(await startError({ 'b.md': def('slow-hook', '  Stop:\n    - command: "true"\n      timeoutMs: 3600000\n') })).toMatch(
      /subagent definition "slow-hook" .*hooks\.Stop\.0\.timeoutMs/,
    );
    const eleven = Array.from({ length: 11 }, () => '    - command: "true"\n').join('');
    expect(await startError({ 'c.md': def('many', `  PostToolUse:\n${eleven}`) })).toMatch(/subagent definition "many" .*hooks\.PostToolUse: at most 10 hooks/);
    expect(await startError({ 'd.md': def('odd-event', '  SessionStart:\n    - command: "true"\n') })).toMatch(/subagent definition "odd-event" .*hooks/);
  });

  it('stops the start when a URL hook could not be signed (no HOOK_SECRET), and starts with one', async () => {
    const remote = { 'r.md': def('remote-hook', '  PreToolUse:\n    - url: https://hooks.example.com/pre\n') };
    expect(await startError(remote)).toMatch(/subagent definition "remote-hook": its URL hooks are signed with HOOK_SECRET, which is not set/);
    expect(await startError(remote, { HOOK_SECRET })).toBeNull();
  });
});
