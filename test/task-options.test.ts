import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceForTests, startService, taskBody, taskEnd } from './support/harness';

/** The task tool's options from the seeds: `options.tools` and `options.cwd`. */
const file = serviceForTests();

const post = (payload: object) => file.svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
const run = async (prompt: string, parentTaskId: string, options: object, over: object = {}) => {
  const res = await post(taskBody({ prompt, context: { parentTaskId, userId: 'u' }, options, ...over }));
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};
/** The first request the model got for the script `key`. */
const firstRequest = (key: string) => file.svc.model.requests.find((r) => JSON.stringify(r.body.messages).includes(key))!;
const toolResults = (key: string) =>
  file.svc.model.requests
    .filter((r) => JSON.stringify(r.body.messages).includes(key))
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));

describe('options.tools', () => {
  it('offers only the named tools of the definition (and complete); names it lacks are ignored', async () => {
    file.svc.model.script('OPT-TOOLS', [{ toolCalls: [{ name: 'complete', args: { summary: 'narrowed', paths: [] } }] }]);
    const done = await run('OPT-TOOLS', 'T-tools', { tools: ['read_file', 'grep', 'no_such_tool'] });
    expect(done).toMatchObject({ status: 'completed', summary: 'narrowed' });
    const offered = firstRequest('OPT-TOOLS').body.tools!.map((t) => t.function.name);
    expect(offered.sort()).toEqual(['complete', 'grep', 'read_file']);
    expect(String(firstRequest('OPT-TOOLS').body.messages[0].content)).toContain('tools: read_file, grep, complete');
  });

  it('refuses a list that leaves nothing but complete (400 no_tools), and tools for a shell task', async () => {
    const none = await post(taskBody({ options: { tools: ['complete', 'no_such_tool'] } }));
    expect([none.statusCode, none.json().error.code]).toEqual([400, 'no_tools']);
    expect(none.json().error.details.available).toContain('bash');
    const shell = await post(taskBody({ subagent_type: 'shell', prompt: undefined, command: 'true', options: { tools: ['bash'] } }));
    expect([shell.statusCode, shell.json().error.details[0].field]).toEqual([400, 'body.options.tools']);
  });
});

describe('options.cwd', () => {
  it('resolves relative paths and starts commands in the folder, creating it; artifacts stay relative to the root', async () => {
    file.svc.model.script('OPT-CWD', [
      {
        toolCalls: [
          { name: 'write_file', args: { path: 'a.txt', content: 'in the folder' } },
          { name: 'bash', args: { command: 'pwd; echo from-bash > b.txt' } },
        ],
      },
      { toolCalls: [{ name: 'glob', args: { pattern: '*.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'worked in sub/dir', paths: ['a.txt', 'b.txt', '../../top.txt'] } }] },
    ]);
    const done = await run('OPT-CWD', 'T-cwd', { cwd: 'sub/dir' });
    const ws = path.join(file.svc.config.workspacesDir, 'T-cwd');
    expect(readFileSync(path.join(ws, 'sub/dir/a.txt'), 'utf8')).toBe('in the folder');
    expect(readFileSync(path.join(ws, 'sub/dir/b.txt'), 'utf8')).toBe('from-bash\n');
    expect(done.artifacts.map((a: { relativePath: string }) => a.relativePath)).toEqual(['sub/dir/a.txt', 'sub/dir/b.txt']);
    expect(done.skipped).toEqual([{ path: '../../top.txt', relativePath: 'top.txt', reason: 'not_found' }]);
    const [, pwd] = toolResults('OPT-CWD').slice(0, 2);
    expect(JSON.parse(pwd).stdout.trim()).toMatch(/\/T-cwd\/sub\/dir$/);
    // glob answers relative to the working folder, as the model names paths.
    expect(toolResults('OPT-CWD').at(-1)).toBe('a.txt\nb.txt');
    expect(String(firstRequest('OPT-CWD').body.messages[0].content)).toContain('working folder: sub/dir');
  });

  it('takes an absolute path inside the workspace; refuses one outside (400) and a folder that became a link out (invalid_cwd)', async () => {
    const ws = path.join(file.svc.config.workspacesDir, 'T-cwd-abs');
    mkdirSync(ws, { recursive: true });
    file.svc.model.script('OPT-CWD-ABS', [
      { toolCalls: [{ name: 'bash', args: { command: 'echo ok > here.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'abs', paths: ['here.txt'] } }] },
    ]);
    const done = await run('OPT-CWD-ABS', 'T-cwd-abs', { cwd: path.join(ws, 'abs') });
    expect(done.artifacts[0].relativePath).toBe('abs/here.txt');

    for (const cwd of ['../elsewhere', '/etc', 'a\\b']) {
      const res = await post(taskBody({ context: { parentTaskId: 'T-cwd-abs', userId: 'u' }, options: { cwd } }));
      expect([res.statusCode, res.json().error.details[0].field]).toEqual([400, 'body.options.cwd']);
    }

    symlinkSync(tmpdir(), path.join(ws, 'out'));
    file.svc.model.script('OPT-CWD-LINK', [{ toolCalls: [{ name: 'bash', args: { command: 'echo escaped > x.txt' } }] }]);
    const refused = await run('OPT-CWD-LINK', 'T-cwd-abs', { cwd: 'out/deeper' });
    expect(refused).toMatchObject({ status: 'error', error: { code: 'invalid_cwd' } });
    expect(refused.error.message).not.toContain(tmpdir());
    expect(existsSync(path.join(tmpdir(), 'deeper'))).toBe(false);
  });

  it('starts a shell task in the folder too', async () => {
    const res = await post(
      taskBody({ subagent_type: 'shell', prompt: undefined, command: 'pwd', context: { parentTaskId: 'T-cwd-sh', userId: 'u' }, options: { cwd: 'x' } }),
    );
    const done = JSON.parse(res.body.trim());
    expect(done.output.stdout.trim()).toMatch(/\/T-cwd-sh\/x$/);
    const taskId = done.id as string;
    expect((await taskEnd(file.svc, taskId)).status).toBe('completed');
  });
});

describe('prompt caching', () => {
  it("sends the session's id as prompt_cache_key with every request of a task and its follow-ups", async () => {
    file.svc.model.script('OPT-CACHE', [{ toolCalls: [{ name: 'list_files', args: {} }] }, { text: 'first answer' }]);
    const first = await run('OPT-CACHE', 'T-cache', {});
    file.svc.model.script('OPT-CACHE-AGAIN', [{ text: 'second answer' }]);
    const next = await run('OPT-CACHE-AGAIN', 'T-cache', {}, { task_id: first.id });
    expect(next.sessionId).toBe(first.id);
    const keys = file.svc.model.requests.filter((r) => JSON.stringify(r.body.messages).includes('OPT-CACHE')).map((r) => r.body.prompt_cache_key);
    expect(keys).toEqual([first.id, first.id, first.id]);
  });

  it("bills the tokens a provider reports writing to its cache at the model's cacheWritePerMTok", async () => {
    const prices = path.join(mkdtempSync(path.join(tmpdir(), 'subagentd-prices-')), 'prices.json');
    writeFileSync(prices, JSON.stringify({ 'cache-model': { inputPerMTok: 3, cachedInputPerMTok: 0.3, cacheWritePerMTok: 3.75, outputPerMTok: 15 } }));
    const priced = await startService({ model: file.svc.model, env: { PRICES_FILE: prices } });
    try {
      file.svc.model.script('OPT-CACHE-WRITE', [{ text: 'cached', usage: { input: 10_000, cached: 2_000, cacheWrite: 6_000, output: 1_000 } }]);
      const res = await priced.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ prompt: 'OPT-CACHE-WRITE', options: { model: 'cache-model' } }),
      });
      // 2,000 plain × $3 + 2,000 read × $0.3 + 6,000 written × $3.75 + 1,000 out × $15, per million.
      expect(JSON.parse(res.body.trim()).usage).toMatchObject({ inputTokens: 10_000, cachedInputTokens: 2_000, costMicroUsd: 44_100 });
    } finally {
      await priced.close();
    }
  });

  it('sends none with PROMPT_CACHE_KEY=off', async () => {
    const off = await startService({ model: file.svc.model, env: { PROMPT_CACHE_KEY: 'off' } });
    try {
      file.svc.model.script('OPT-NO-CACHE', [{ text: 'no key' }]);
      const res = await off.inject({ method: 'POST', url: '/tasks?wait=true', payload: taskBody({ prompt: 'OPT-NO-CACHE' }) });
      expect(JSON.parse(res.body.trim()).status).toBe('completed');
      expect(firstRequest('OPT-NO-CACHE').body).not.toHaveProperty('prompt_cache_key');
    } finally {
      await off.close();
    }
  });
});
