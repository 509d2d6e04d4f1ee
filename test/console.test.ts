import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * The console (GET /ui) in a real browser: Debian's chromium driven by playwright-core, against
 * the service and the scripted model. Screenshots of each page land in test-artifacts/console/.
 * CHROMIUM_BIN names the browser (default /usr/bin/chromium); .ci/run installs it.
 */
const browserBin = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const missing = existsSync(browserBin) ? null : `${browserBin} does not exist`;
if (missing) console.warn(`[console test] skipped: ${missing}. apt-get install chromium (or set CHROMIUM_BIN) to run it; .ci/run does.`);
const shots = path.resolve(import.meta.dirname, '../test-artifacts/console');
const KEY = 'console-key-0123456789';

let svc: TestService;
let dir: string | undefined;
let browser: Browser;
let page: Page;
/** What the page said went wrong: errors in its console (a CSP refusal among them) and uncaught exceptions. */
const problems: string[] = [];

const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
  svc.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload && { payload }) });

describe.skipIf(missing !== null)('the console in a browser', () => {
  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    // A definition whose hook refuses `rm`: its decisions show beside the calls; a lead whose
    // background children show as a tree under it.
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-console-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(
      path.join(dir, 'agents', 'careful.md'),
      '---\nname: careful\ndescription: Refuses rm\nhooks:\n  PreToolUse:\n    - matcher: bash\n      command: |\n        if grep -q \'"rm \'; then echo "rm is not allowed" >&2; exit 2; fi\n---\n',
    );
    writeFileSync(path.join(dir, 'agents', 'lead.md'), '---\nname: lead\ndescription: Runs subagents at once\nmaxDepth: 1\nbackground: true\n---\nDelegate.\n');
    // And one with a skill and a memory, for the task page's facts.
    mkdirSync(path.join(dir, 'skills', 'house-style'), { recursive: true });
    writeFileSync(path.join(dir, 'skills', 'house-style', 'SKILL.md'), '---\nname: house-style\ndescription: How we write.\n---\nShort sentences.\n');
    writeFileSync(path.join(dir, 'agents', 'writer.md'), '---\nname: writer\ndescription: Writes\nskills: [house-style]\nmemory: user\n---\n');
    svc = await startService({ dir, env: { API_KEYS: `${KEY}:acme` } });
    browser = await chromium.launch({ executablePath: browserBin, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the page and its files with a strict Content-Security-Policy, no key needed', async () => {
    const res = await svc.inject({ url: '/ui' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body).not.toMatch(/<script>|<style>|style="/);
    const asset = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(res.body)![1];
    const js = await svc.inject({ url: asset });
    expect([js.statusCode, js.headers['cache-control']]).toEqual([200, 'public, max-age=31536000, immutable']);
    expect((await svc.inject({ url: '/ui/assets/nothing.js' })).statusCode).toBe(404);
    // The API behind it still needs the key.
    expect((await svc.inject({ url: '/tasks' })).statusCode).toBe(401);
  });

  it('signs in, shows a task appear and stream, answers its approval, and the task completes', async () => {
    await page.goto(`${svc.url}/ui`);
    await page.fill('input[name=key]', 'wrong-key');
    await page.click('button[type=submit]');
    await page.waitForSelector('.signin .error');
    // That 401 was asked for; from here on the page must report no error at all.
    problems.length = 0;
    await page.fill('input[name=key]', KEY);
    await page.click('button[type=submit]');
    await page.waitForSelector('table.tasks');

    svc.model.script('CONSOLE-RUN', [
      {
        text: 'Looking at the workspace first.',
        toolCalls: [{ name: 'bash', args: { command: 'echo console-was-here > seen.txt' } }],
        usage: { input: 1200, output: 40 },
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'All done from the console', paths: ['seen.txt'] } }], usage: { input: 1300, output: 20 } },
    ]);
    const created = await api(
      'POST',
      '/tasks',
      taskBody({
        description: 'Console walk-through',
        prompt: 'CONSOLE-RUN',
        context: { parentTaskId: 'T-console', userId: 'u-console' },
        options: { permissions: { bash: 'ask' } },
      }),
    );
    expect(created.statusCode, created.body).toBe(202);
    const id = created.json().id as string;

    // The list reads itself again: the new task appears without a reload.
    const row = page.locator(`tr[data-task="${id}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toContain('Console walk-through');
    await page.screenshot({ path: path.join(shots, '1-tasks.png') });

    await row.locator('a').click();
    await page.waitForSelector('.timeline .text');
    expect(await page.textContent('.timeline')).toContain('Looking at the workspace first.');
    const allow = page.locator('.pending button.allow');
    await allow.waitFor({ timeout: 10_000 });
    expect(await page.textContent('.pending')).toContain('echo console-was-here');
    // The call waits for its answer: it is not said to run.
    expect(await page.locator('.timeline details.tool summary', { hasText: 'bash' }).textContent()).toContain('awaiting approval');
    await page.screenshot({ path: path.join(shots, '2-approval.png') });
    await allow.click();

    await page.waitForSelector('.summary', { timeout: 15_000 });
    expect(await page.textContent('.summary')).toBe('All done from the console');
    expect(await page.textContent('h2 .status')).toBe('completed');
    // The tool call, folded, with its input and output.
    await page.click('.timeline details.tool summary');
    expect(await page.textContent('.timeline details.tool')).toContain('echo console-was-here > seen.txt');
    expect(await page.textContent('.timeline')).toContain('approval allow (by caller)');
    expect(await page.textContent('.artifacts')).toContain('seen.txt');
    await page.screenshot({ path: path.join(shots, '3-task.png'), fullPage: true });
    const done = (await api('GET', `/tasks/${id}`)).json();
    expect(done).toMatchObject({ status: 'completed', summary: 'All done from the console' });
  }, 60_000);

  it("shows a task's skills and memory", async () => {
    svc.model.script('CONSOLE-SKILLS', [{ toolCalls: [{ name: 'complete', args: { summary: 'written with skills', paths: [] } }] }]);
    const created = await api(
      'POST',
      '/tasks?wait=true',
      taskBody({ subagent_type: 'writer', prompt: 'CONSOLE-SKILLS', context: { parentTaskId: 'T-console-skills', userId: 'u-writer' } }),
    );
    const task = JSON.parse(created.body.trim());
    await page.goto(`${svc.url}/ui#/tasks/${task.id}`);
    await page.locator('.summary', { hasText: 'written with skills' }).waitFor({ timeout: 15_000 });
    await page.locator('dd.memory').waitFor({ timeout: 15_000 });
    expect(await page.textContent('dd.skills')).toBe('house-style');
    expect(await page.textContent('dd.memory')).toContain('per user: u-writer');
    await page.screenshot({ path: path.join(shots, '4-skills.png') });
    expect(problems).toEqual([]);
  });

  it('cancels a running task and sends it a steering message from its page', async () => {
    svc.model.script('CONSOLE-SLOW', [{ toolCalls: [{ name: 'bash', args: { command: 'sleep 30' } }] }]);
    const id = (await api('POST', '/tasks', taskBody({ prompt: 'CONSOLE-SLOW', context: { parentTaskId: 'T-console', userId: 'u-console' } }))).json().id;
    await page.goto(`${svc.url}/ui#/tasks/${id}`);
    await page.waitForSelector('.liveness');
    // Its liveness in words, while its command runs.
    await page.locator('.liveness', { hasText: 'running bash for' }).waitFor({ timeout: 10_000 });
    await page.fill('input[name=steer]', 'please hurry');
    await page.click('.actions button[type=submit]');
    await expect.poll(() => page.inputValue('input[name=steer]')).toBe('');
    page.once('dialog', (d) => void d.accept());
    await page.click('.actions button.danger');
    await page.locator('h2 .status', { hasText: 'aborted' }).waitFor({ timeout: 15_000 });
    expect((await api('GET', `/tasks/${id}`)).json().error.code).toBe('cancelled');
  }, 60_000);

  it("shows a task's outcome and its candidates side by side, and the selected attempt's diff", async () => {
    svc.model.script('CONSOLE-CAND', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'write_file', args: { path: 'answer.txt', content: ctx.model === 'cons-b' ? 'right' : 'wrong' } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: `answered by ${ctx.model}`, paths: ['answer.txt'] } }] },
    );
    const created = await api(
      'POST',
      '/tasks?wait=true',
      taskBody({
        prompt: 'CONSOLE-CAND',
        context: { parentTaskId: 'T-console-cand', userId: 'u-console' },
        options: {
          isolation: 'worktree',
          outcome: { verify: { command: 'grep -q right answer.txt' }, maxIterations: 1 },
          candidates: { n: 2, models: ['cons-a', 'cons-b'] },
        },
      }),
    );
    const task = JSON.parse(created.body.trim());
    expect(task.status).toBe('completed');
    await page.goto(`${svc.url}/ui#/tasks/${task.id}`);
    await page.locator('.candidates tr.selected').waitFor({ timeout: 15_000 });
    expect(await page.textContent('.candidates tr.selected .model')).toBe('cons-b');
    expect(await page.textContent('.candidates tr.selected .outcome-status')).toBe('satisfied');
    expect(await page.locator('.candidates tbody tr').count()).toBe(2);
    expect(await page.textContent('.candidates tr:not(.selected) .outcome-status')).toBe('max iterations reached');
    expect(await page.textContent('.outcome .iterations')).toBe('after 1 check');
    expect(await page.textContent('.criteria tr[data-criterion=verify]')).toContain('yes');
    await page.getByText('Show the diff').click();
    await page.locator('pre.diff', { hasText: '+right' }).waitFor({ timeout: 15_000 });
    await page.screenshot({ path: path.join(shots, '10-candidates.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('shows what the hooks decided beside each call', async () => {
    svc.model.script('CONSOLE-HOOKS', [
      { toolCalls: [{ name: 'bash', args: { command: 'rm notes.txt' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'kept the notes', paths: [] } }] },
    ]);
    const id = (
      await api('POST', '/tasks', taskBody({ subagent_type: 'careful', prompt: 'CONSOLE-HOOKS', context: { parentTaskId: 'T-console', userId: 'u-console' } }))
    ).json().id;
    await page.goto(`${svc.url}/ui#/tasks/${id}`);
    await page.locator('h2 .status', { hasText: 'completed' }).waitFor({ timeout: 15_000 });
    const call = page.locator('.timeline details.tool', { hasText: 'bash' });
    // The heading follows the task's row, the timeline its stream: the call's line may come after.
    await call.locator('summary', { hasText: 'PreToolUse: block' }).waitFor({ timeout: 15_000 });
    await call.locator('summary').click();
    expect(await call.locator('.hooks').textContent()).toContain('PreToolUse hook (bash): block — rm is not allowed');
    await page.screenshot({ path: path.join(shots, '3b-hooks.png'), fullPage: true });
  }, 60_000);

  it('reads usage by day, model, type and user, with a chart', async () => {
    // A shell task has no model: its row in the model table says so, not an empty name.
    const shell = await api('POST', '/tasks?wait=true', {
      subagent_type: 'shell',
      description: 'No model',
      command: 'true',
      context: { parentTaskId: 'T-console', userId: 'u-console' },
    });
    expect(JSON.parse(shell.body)).toMatchObject({ status: 'completed', model: null });
    await page.goto(`${svc.url}/ui#/usage`);
    await page.waitForSelector('.totals');
    const { totals } = (await api('GET', '/usage')).json();
    expect(await page.textContent('.totals')).toContain(`${totals.tasks} tasks · ${totals.totalTokens.toLocaleString('en-US')} tokens`);
    await page.waitForSelector('.chart canvas');
    expect(await page.textContent('.groups')).toContain('u-console');
    const models = page.locator('.group', { has: page.locator('h3', { hasText: 'Model' }) });
    expect(await models.locator('tbody td:first-child').allTextContents()).toContain('shell (no model)');
    await page.screenshot({ path: path.join(shots, '4-usage.png'), fullPage: true });
    expect(problems).toEqual([]);
  }, 30_000);

  it('lists batches of replays and shows one as a table of comparisons', async () => {
    // Two tasks, replayed on two models: the second model writes another summary.
    svc.model.script('CONSOLE-REPLAY', (ctx) => ({
      toolCalls: [{ name: 'complete', args: { summary: ctx.model === 'replay-b' ? 'another summary' : 'the summary', paths: [] } }],
    }));
    const ids: string[] = [];
    for (const n of [1, 2]) {
      const body = taskBody({ prompt: `CONSOLE-REPLAY ${n}`, context: { parentTaskId: 'T-console-replay', userId: 'u-replay' } });
      ids.push(JSON.parse((await api('POST', '/tasks?wait=true', { ...body, options: { model: 'replay-a' } })).body.trim()).id);
    }
    const started = await api('POST', '/replays', { taskIds: ids, variants: [{ model: 'replay-a' }, { model: 'replay-b' }] });
    expect(started.statusCode, started.body).toBe(202);
    const batch = started.json().id as string;

    await page.goto(`${svc.url}/ui#/replays`);
    const listed = page.locator(`tr[data-batch="${batch}"]`);
    await listed.waitFor({ timeout: 15_000 });
    expect(await listed.locator('td').allTextContents()).toEqual([batch, 'replay-a, replay-b', '4', expect.stringMatching(/ago$/)]);
    await listed.locator('a').click();
    // Read again while replays run: every row ends completed, the other model's summary differs.
    await page.locator('h2 .status.completed').waitFor({ timeout: 20_000 });
    const rows = page.locator('table.replays tbody tr');
    expect(await rows.count()).toBe(4);
    const cells = await Promise.all([0, 1, 2, 3].map((i) => rows.nth(i).locator('td').allTextContents()));
    expect(cells.map((c) => [c[0], c[1], c[3], c[4], c[5], c[9]])).toEqual(
      ids.flatMap((id) => [
        [id, 'replay-a', 'completed', 'never', '1 → 1', 'yes'],
        [id, 'replay-b', 'completed', 'never', '1 → 1', 'no'],
      ]),
    );
    const { rows: answered } = (await api('GET', `/replays/${batch}`)).json();
    expect(await rows.nth(1).getAttribute('data-replay')).toBe(answered[1].replayTaskId);
    await page.screenshot({ path: path.join(shots, '4-replays.png'), fullPage: true });
    expect(problems).toEqual([]);
  }, 40_000);

  /** A tab of its own, signed in on the task list, whose timers run only when the test says. */
  async function tabOnPausedClock(): Promise<Page> {
    const tab = await browser.newPage();
    tab.on('pageerror', (err) => problems.push(err.message));
    await tab.clock.install();
    await tab.goto(`${svc.url}/ui`);
    await tab.fill('input[name=key]', KEY);
    await tab.click('button[type=submit]');
    await tab.waitForSelector('table.tasks');
    return tab;
  }

  it('keeps a filter half typed while the list is read again, and applies it on Enter', async () => {
    // The list's 2 s read comes between two keys.
    const tab = await tabOnPausedClock();
    await tab.fill('input[name=parentTaskId]', 'T-half');
    const reread = tab.waitForResponse((r) => r.url().includes('/tasks?') && !r.url().includes('parentTaskId'));
    await tab.clock.runFor(2500);
    await reread;
    // The page drew the list it read again (a render), and what was typed is still there.
    await tab.evaluate(
      () => new Promise((r) => (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() => r(null))),
    );
    expect(await tab.inputValue('input[name=parentTaskId]')).toBe('T-half');
    const filtered = tab.waitForResponse((r) => r.url().includes('/tasks?') && r.url().includes('parentTaskId=T-half'));
    await tab.press('input[name=parentTaskId]', 'Enter');
    await filtered;
    await tab.locator('.hint', { hasText: 'No task matches.' }).waitFor();
    await tab.close();
    expect(problems).toEqual([]);
  }, 30_000);

  it("filtered by a parent, the list follows its stream: a new task's row appears with every timer stopped", async () => {
    // No poll can bring the row.
    const live = await tabOnPausedClock();
    const streamed = live.waitForResponse((r) => r.url().includes('/events?parentTaskId=T-live'));
    await live.fill('input[name=parentTaskId]', 'T-live');
    await live.press('input[name=parentTaskId]', 'Enter');
    await streamed;
    await live.locator('.hint', { hasText: 'No task matches.' }).waitFor();
    // A moment ahead that a loaded machine cannot have passed before the call (the past is an
    // error), and well before the 30 s fallback poll.
    await live.clock.pauseAt((await live.evaluate(() => Date.now())) + 5000);

    svc.model.script('CONSOLE-LIVE', [{ toolCalls: [{ name: 'complete', args: { summary: 'live', paths: [] } }] }]);
    const id = (
      await api('POST', '/tasks', taskBody({ description: 'Seen live', prompt: 'CONSOLE-LIVE', context: { parentTaskId: 'T-live', userId: 'u-console' } }))
    ).json().id as string;
    const row = live.locator(`tr[data-task="${id}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toContain('Seen live');
    // Its end comes the same way.
    await row.locator('.status', { hasText: 'completed' }).waitFor({ timeout: 10_000 });
    await live.close();
    expect(problems).toEqual([]);
  }, 30_000);

  it("shows background children as a tree under their lead, in the list and on the lead's page", async () => {
    svc.model.script('CONSOLE-LEAD', (ctx) => {
      if (ctx.turn === 0) {
        return {
          toolCalls: [1, 2].map((n) => ({ name: 'task', args: { subagent_type: 'general', description: `Helper ${n}`, prompt: `CONSOLE-HELPER-${n}` } })),
        };
      }
      const seen = ctx.messages.filter((m) => m.role === 'tool' && String(m.content).includes('"finished"'));
      const done = seen.reduce((n, m) => n + (JSON.parse(String(m.content)).finished as unknown[]).length, 0);
      return done < 2 ? { toolCalls: [{ name: 'wait', args: {} }] } : { toolCalls: [{ name: 'complete', args: { summary: 'both helped', paths: [] } }] };
    });
    for (const n of [1, 2]) svc.model.script(`CONSOLE-HELPER-${n}`, [{ toolCalls: [{ name: 'complete', args: { summary: `helper ${n}`, paths: [] } }] }]);
    const created = await api(
      'POST',
      '/tasks?wait=true',
      taskBody({ subagent_type: 'lead', description: 'The lead', prompt: 'CONSOLE-LEAD', context: { parentTaskId: 'T-console-tree', userId: 'u-console' } }),
    );
    const lead = JSON.parse(created.body.trim());
    expect(lead.status).toBe('completed');
    const { tasks } = (await api('GET', '/tasks?parentTaskId=T-console-tree')).json();
    const helpers = (tasks as Array<{ id: string; parentTask: string | null }>)
      .filter((t) => t.parentTask === lead.id)
      .map((t) => t.id)
      .reverse();
    expect(helpers).toHaveLength(2);

    await page.goto(`${svc.url}/ui#/tasks`);
    await page.fill('input[name=parentTaskId]', 'T-console-tree');
    await page.press('input[name=parentTaskId]', 'Enter');
    // Filtered: until the list holds only this tree (the unfiltered one, drawn first, has these rows too).
    const rows = page.locator('table.tasks tbody tr');
    const tree = [lead.id, ...helpers];
    await until(async () => {
      const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-task') ?? ''));
      return shown.length === tree.length && shown.every((id) => tree.includes(id));
    }, 10_000);
    // The lead, then its children one level in, oldest first, each marked as in the background.
    expect(await rows.evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-task'), tr.getAttribute('data-depth')]))).toEqual([
      [lead.id, '0'],
      [helpers[0], '1'],
      [helpers[1], '1'],
    ]);
    expect(await page.locator(`tr[data-task="${helpers[0]}"] .tag`).textContent()).toBe('background');
    await page.screenshot({ path: path.join(shots, '6-tree.png') });

    await page.locator(`tr[data-task="${lead.id}"] a`).click();
    await page.locator('.subagents li').nth(1).waitFor({ timeout: 10_000 });
    expect(await page.locator('.subagents li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-task')))).toEqual(helpers);
    expect(await page.textContent('.subagents')).toContain('Helper 1');
    // By its name: the two children start at once, so either may be the older.
    await page.locator('.subagents li a', { hasText: 'Helper 1' }).click();
    // The child's page replaces the lead's (whose summary shows until then).
    await page.locator('.summary', { hasText: 'helper 1' }).waitFor({ timeout: 10_000 });
    expect(await page.textContent('.summary')).toBe('helper 1');
    expect(problems).toEqual([]);
  }, 30_000);

  it('stays usable on a task of 5,000 events: the latest drawn first, the rest on demand', async () => {
    // 25 steps of 100 quick tool calls: about 5,050 events.
    svc.model.script('CONSOLE-BIG', (ctx) =>
      ctx.turn < 25
        ? { toolCalls: Array.from({ length: 100 }, (_, i) => ({ name: 'read_file', args: { path: `missing-${ctx.turn}-${i}.txt` } })) }
        : { toolCalls: [{ name: 'complete', args: { summary: 'read a lot', paths: [] } }] },
    );
    const created = await api(
      'POST',
      '/tasks?wait=true',
      taskBody({ prompt: 'CONSOLE-BIG', context: { parentTaskId: 'T-console-big', userId: 'u-console' }, options: { maxSteps: 30 } }),
    );
    const task = JSON.parse(created.body.trim());
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    const events = (await api('GET', `/tasks/${task.id}/events?after=0`)).body.split('\n\n').filter((b) => b.includes('data:')).length;
    expect(events).toBeGreaterThan(5000);
    const started = Date.now();
    await page.goto(`${svc.url}/ui#/tasks/${task.id}`);
    await page.locator('.summary', { hasText: 'read a lot' }).waitFor({ timeout: 30_000 });
    const more = page.locator('.task button.link', { hasText: 'earlier items' });
    await more.waitFor({ timeout: 30_000 });
    const drawnAt = Date.now() - started;
    expect(await page.locator('.timeline > *').count()).toBe(300);
    await more.click();
    await expect.poll(() => page.locator('.timeline > *').count(), { timeout: 30_000 }).toBeGreaterThan(2500);
    console.log(`[console] a task of ${events} events: its page drawn in ${drawnAt} ms, every item in ${Date.now() - started} ms`);
    await page.screenshot({ path: path.join(shots, '5-big-task.png') });
    expect(problems).toEqual([]);
  }, 120_000);
});
