import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnContext } from '../scripted-model/server';
import { backgroundStartedSchema, sendInputResultSchema, waitResultSchema } from '../src/shapes/lead-tools';
import { startService, taskBody, taskEnd, wsUrl, type TestService } from './support/harness';
import { until } from './support/until';
import { openStream } from './support/ws-client';

/**
 * Background children (contract v1.3, seed 001 `background`; Codex's multi-agent tools): a lead's
 * `task` call with `run_in_background` answers at once, and `wait`, `send_input` and
 * `close_agent` reach the children it started, and only those. Children hold on to each other
 * through files in the shared workspace (a child that waits for a file its lead writes only after
 * the `task` call answered), so what the tests prove does not hang on timing.
 */
const KEYS = { acme: 'key-acme-0123456789', other: 'key-other-0123456789' };
let svc: TestService;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-background-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'lead.md'),
    '---\nname: lead\ndescription: Runs subagents at once\nmaxDepth: 1\nbackground: true\n---\nDelegate, then wait.\n',
  );
  writeFileSync(path.join(dir, 'agents', 'waiter.md'), '---\nname: waiter\ndescription: Runs one subagent at a time\nmaxDepth: 1\n---\nDelegate.\n');
  svc = await startService({ dir, env: { API_KEYS: `${KEYS.acme}:acme,${KEYS.other}:other`, MAX_CONCURRENT_TASKS: '4' } });
});
afterAll(async () => {
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = (key = KEYS.acme) => ({ authorization: `Bearer ${key}` });
const submit = async (body: Record<string, unknown>, key = KEYS.acme) =>
  (await svc.inject({ method: 'POST', url: '/tasks', headers: auth(key), payload: taskBody(body) })).json();
const task = async (id: string, key = KEYS.acme) => (await svc.inject({ url: `/tasks/${id}`, headers: auth(key) })).json();
const end = (id: string, key = KEYS.acme) => taskEnd(svc, id, { key });
const childrenOf = async (parentTaskId: string, lead: string) =>
  (await svc.inject({ url: `/tasks?parentTaskId=${parentTaskId}`, headers: auth() }))
    .json()
    .tasks.filter((t: { parentTask: string | null }) => t.parentTask === lead)
    .reverse();
/** The model's requests of the task whose prompt holds `marker`. */
const requestsOf = (marker: string) =>
  svc.model.requests.filter((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content).includes(marker));
/** Every tool result the model read for `marker` (its last request holds the whole conversation). */
const resultsSeen = (marker: string) =>
  requestsOf(marker)
    .at(-1)!
    .body.messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
const json = (content: string) => JSON.parse(content) as Record<string, any>;
/** The tool results that are JSON (a file tool's answer is text). */
const jsonResults = (marker: string) =>
  resultsSeen(marker).flatMap((r) => {
    try {
      return [json(r)];
    } catch {
      return [];
    }
  });
/** What a bash call printed, from its result. */
const printed = (ctx: TurnContext) => String(json(ctx.toolResults[0].content).stdout).trim();
/** A bash line that waits (10 s at most) for `file` in the workspace, then says whether it came. */
const awaitFile = (file: string) => `for i in $(seq 1 200); do [ -f ${file} ] && break; sleep 0.05; done; [ -f ${file} ] && echo seen || echo missing`;
const call = (name: string, args: unknown) => ({ toolCalls: [{ name, args }] });
const complete = (summary: string) => call('complete', { summary, paths: [] });
const lastUser = (ctx: TurnContext) => String(ctx.messages.filter((m) => m.role === 'user').at(-1)?.content);

describe('a task started in the background', () => {
  it('answers the lead at once; wait returns its summary; its events, record and fields are its own', async () => {
    svc.model.script('BG-ONE-LEAD', (ctx) => {
      if (ctx.turn === 0) return call('task', { subagent_type: 'general', description: 'Look for go', prompt: 'BG-ONE-CHILD' });
      // Written only once the `task` call answered: the child sees it only if the call did not wait for it.
      if (ctx.turn === 1)
        return {
          toolCalls: [
            { name: 'write_file', args: { path: 'go-one', content: 'go' } },
            { name: 'wait', args: {} },
          ],
        };
      return complete(`got: ${json(ctx.toolResults[1].content).finished[0].summary}`);
    });
    svc.model.script('BG-ONE-CHILD', (ctx) => (ctx.turn === 0 ? call('bash', { command: awaitFile('go-one') }) : complete(`child ${printed(ctx)}`)));
    const parentStream = await openStream(wsUrl(svc, `/stream?parentTaskId=T-bg-one&access_token=${KEYS.acme}`));
    const lead = await submit({ subagent_type: 'lead', prompt: 'BG-ONE-LEAD', context: { parentTaskId: 'T-bg-one', userId: 'u' } });
    expect(await end(lead.id)).toMatchObject({ status: 'completed', summary: 'got: child seen', background: false });

    const [child] = await childrenOf('T-bg-one', lead.id);
    expect(child).toMatchObject({ status: 'completed', summary: 'child seen', depth: 1, parentTask: lead.id, background: true, subagent_type: 'general' });
    const [started, waited] = jsonResults('BG-ONE-LEAD');
    expect(started).toEqual({ task_id: child.id, status: expect.stringMatching(/^(queued|running)$/) });
    expect(waited).toEqual({
      finished: [{ task_id: child.id, status: 'completed', summary: 'child seen', output: null, artifacts: [] }],
      running: [],
      timedOut: false,
    });
    // The shapes the OpenAPI document names (`x-tools`) and the client's types come from.
    expect(backgroundStartedSchema.strict().safeParse(started).success).toBe(true);
    expect(waitResultSchema.strict().safeParse(waited).success).toBe(true);
    const doc = (await svc.inject({ url: '/docs/json' })).json();
    expect(doc['x-tools'].wait).toEqual({ input: { $ref: '#/components/schemas/WaitArgs' }, output: { $ref: '#/components/schemas/WaitResult' } });
    // Offered with the task tool; a definition's `background` is its default.
    const tools = requestsOf('BG-ONE-LEAD')[0].body.tools as unknown as Array<{ function: { name: string; parameters: any } }>;
    expect(tools.map((t) => t.function.name)).toEqual(expect.arrayContaining(['task', 'wait', 'send_input', 'close_agent']));
    expect(tools.find((t) => t.function.name === 'task')!.function.parameters.properties.run_in_background.description).toMatch(/default true/);

    // The child's events are on the parent stream with the lead's; its usage is its own record.
    await parentStream.waitFor((m) => m.taskId === lead.id && m.type === 'task.finished');
    const seen = parentStream.messages.filter((m) => m.type !== 'heartbeat');
    expect(seen.filter((m) => m.type === 'task.finished').map((m) => m.taskId)).toEqual([child.id, lead.id]);
    expect(seen.filter((m) => m.taskId === child.id).map((m) => m.type)).toEqual(expect.arrayContaining(['task.started', 'tool.call', 'task.finished']));
    parentStream.socket.close();
    const { records } = (await svc.inject({ url: '/usage/records?parentTaskId=T-bg-one', headers: auth() })).json();
    expect(records.map((r: { taskId: string }) => r.taskId).sort()).toEqual([child.id, lead.id].sort());
    const childRecord = records.find((r: { taskId: string }) => r.taskId === child.id);
    expect(childRecord.inputTokens).toBe(child.usage.inputTokens);
    expect(child.usage.inputTokens).toBeGreaterThan(0);
  });

  it('runs three children at once: the model is asked for each first step before any second step', async () => {
    const ids = ['A', 'B', 'C'];
    svc.model.script('BG-TRIO-LEAD', (ctx) => {
      if (ctx.turn === 0) {
        return {
          toolCalls: ids.map((x) => ({ name: 'task', args: { subagent_type: 'general', description: `Part ${x}`, prompt: `BG-TRIO-${x}` } })),
        };
      }
      // Waits for the ones still running until none is.
      const results = ctx.messages.filter((m) => m.role === 'tool').map((m) => json(String(m.content)));
      const started = results.filter((r) => 'task_id' in r).map((r) => r.task_id as string);
      const waits = results.filter((r) => 'finished' in r);
      const running = waits.length === 0 ? started : (waits.at(-1)!.running as Array<{ task_id: string }>).map((r) => r.task_id);
      if (running.length > 0) return call('wait', { task_ids: running });
      const summaries = waits.flatMap((w) => (w.finished as Array<{ summary: string }>).map((f) => f.summary));
      return complete(summaries.sort().join(', '));
    });
    for (const x of ids) {
      // Each child's first step ends only once all three have begun theirs.
      const gate = `touch started-${x}; for i in $(seq 1 200); do [ $(ls started-* | wc -l) -ge 3 ] && break; sleep 0.05; done; ls started-* | wc -l`;
      svc.model.script(`BG-TRIO-${x}`, (ctx) => (ctx.turn === 0 ? call('bash', { command: gate }) : complete(`${x} saw ${printed(ctx)}`)));
    }
    const lead = await submit({ subagent_type: 'lead', prompt: 'BG-TRIO-LEAD', context: { parentTaskId: 'T-bg-trio', userId: 'u' } });
    expect(await end(lead.id)).toMatchObject({ status: 'completed', summary: 'A saw 3, B saw 3, C saw 3' });
    expect(await childrenOf('T-bg-trio', lead.id)).toHaveLength(3);

    // The request log: every child's first request came before any child's second one.
    const turnOf = (r: (typeof svc.model.requests)[number]) => r.body.messages.filter((m) => m.role === 'assistant').length;
    const order = svc.model.requests.flatMap((r, i) => {
      const prompt = JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content);
      const child = ids.find((x) => prompt.includes(`BG-TRIO-${x}`));
      return child ? [{ child, turn: turnOf(r), i }] : [];
    });
    const firsts = order.filter((o) => o.turn === 0);
    const seconds = order.filter((o) => o.turn === 1);
    expect(firsts.map((o) => o.child).sort()).toEqual(ids);
    expect(seconds).toHaveLength(3);
    expect(Math.max(...firsts.map((o) => o.i))).toBeLessThan(Math.min(...seconds.map((o) => o.i)));
  });

  it('send_input steers a running child before its next step, and continues an ended one as a follow-up', async () => {
    svc.model.script('BG-STEER-LEAD', (ctx) => {
      const first = () => json(ctx.messages.find((m) => m.role === 'tool')!.content as string).task_id as string;
      switch (ctx.turn) {
        case 0:
          return call('task', { subagent_type: 'general', description: 'Paint', prompt: 'BG-STEER-CHILD' });
        case 1:
          return call('send_input', { task_id: first(), message: 'STEER: use blue' });
        case 2:
          return call('write_file', { path: 'go-steer', content: 'go' });
        case 3:
          return call('wait', { task_ids: [first()] });
        case 4:
          return call('send_input', { task_id: first(), message: 'FOLLOW: now red' });
        case 5:
          return call('wait', { task_ids: [json(ctx.toolResults[0].content).task_id] });
        default:
          return complete(json(ctx.toolResults[0].content).finished[0].summary);
      }
    });
    svc.model.script('BG-STEER-CHILD', (ctx) =>
      ctx.turn === 0 ? call('bash', { command: awaitFile('go-steer') }) : complete(`${ctx.turn === 1 ? 'heard' : 'then'}: ${lastUser(ctx)}`),
    );
    const lead = await submit({ subagent_type: 'lead', prompt: 'BG-STEER-LEAD', context: { parentTaskId: 'T-bg-steer', userId: 'u' } });
    expect(await end(lead.id)).toMatchObject({ status: 'completed', summary: 'then: FOLLOW: now red' });

    const [child, followUp] = await childrenOf('T-bg-steer', lead.id);
    const answers = jsonResults('BG-STEER-LEAD');
    expect(answers[1]).toEqual({ task_id: child.id, status: expect.stringMatching(/^(queued|running)$/), delivered: 'before its next step' });
    expect(child).toMatchObject({ status: 'completed', summary: 'heard: STEER: use blue', steps: 2 });
    // Read by its second step, as a steering message is.
    expect(
      requestsOf('BG-STEER-CHILD')
        .filter((r) => JSON.stringify(r.body.messages).includes('STEER: use blue'))[0]
        .body.messages.at(-1),
    ).toMatchObject({
      role: 'user',
      content: 'STEER: use blue',
    });
    expect(answers[3]).toEqual({ task_id: followUp.id, status: expect.any(String), continues: child.id });
    for (const a of [answers[1], answers[3]]) expect(sendInputResultSchema.safeParse(a).success).toBe(true);
    expect(followUp).toMatchObject({ previousTaskId: child.id, parentTask: lead.id, background: true, depth: 1, summary: 'then: FOLLOW: now red' });
  });

  it("close_agent cancels a child; the lead's end cancels those still running (parent_ended)", async () => {
    svc.model.script('BG-CLOSE-LEAD', (ctx) => {
      const started = ctx.messages.filter((m) => m.role === 'tool').flatMap((m) => [json(String(m.content))].filter((r) => 'task_id' in r));
      if (ctx.turn === 0) {
        return {
          toolCalls: [1, 2].map((n) => ({ name: 'task', args: { subagent_type: 'general', description: `Hang ${n}`, prompt: `BG-HANG-${n}` } })),
        };
      }
      if (ctx.turn === 1) return call('close_agent', { task_id: started[0].task_id });
      return complete('left the other one running');
    });
    for (const n of [1, 2]) svc.model.script(`BG-HANG-${n}`, [call('bash', { command: 'sleep 30' })]);
    const lead = await submit({ subagent_type: 'lead', prompt: 'BG-CLOSE-LEAD', context: { parentTaskId: 'T-bg-close', userId: 'u' } });
    expect(await end(lead.id)).toMatchObject({ status: 'completed' });
    // Both were started in one step, so the list's order between them is not theirs: tell them by name.
    const children = await childrenOf('T-bg-close', lead.id);
    const closed = children.find((c: { description: string }) => c.description === 'Hang 1');
    const left = children.find((c: { description: string }) => c.description === 'Hang 2');
    expect(json(resultsSeen('BG-CLOSE-LEAD')[2])).toMatchObject({
      task_id: closed.id,
      status: 'aborted',
      error: { code: 'cancelled', message: `closed by its lead ${lead.id} (close_agent)` },
    });
    expect(await end(closed.id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    expect(await end(left.id)).toMatchObject({ status: 'aborted', error: { code: 'parent_ended', message: `its lead ${lead.id} ended (completed)` } });
  });

  it('a lead cancelled while it waits cancels its background child', async () => {
    svc.model.script('BG-CANCEL-LEAD', [
      call('task', { subagent_type: 'general', description: 'Hang', prompt: 'BG-HANG-3' }),
      call('wait', { timeoutMs: 600_000 }),
    ]);
    svc.model.script('BG-HANG-3', [call('bash', { command: 'sleep 30' })]);
    const lead = await submit({ subagent_type: 'lead', prompt: 'BG-CANCEL-LEAD', context: { parentTaskId: 'T-bg-cancel', userId: 'u' } });
    await until(async () => (await task(lead.id)).progress?.tool === 'wait');
    const [child] = await childrenOf('T-bg-cancel', lead.id);
    await until(async () => (await task(child.id)).progress?.tool === 'bash');
    expect((await svc.inject({ method: 'POST', url: `/tasks/${lead.id}/cancel`, headers: auth() })).statusCode).toBe(202);
    expect(await end(lead.id)).toMatchObject({ status: 'aborted', error: { code: 'cancelled' } });
    expect(await end(child.id)).toMatchObject({ status: 'aborted', error: { code: 'parent_ended' } });
  });
});

describe("a lead's reach", () => {
  it("never reaches another task's child, nor another tenant's", async () => {
    svc.model.script('BG-OWNER', [call('task', { subagent_type: 'general', description: 'Own', prompt: 'BG-OWNED' }), call('wait', {}), complete('done')]);
    svc.model.script('BG-OWNED', [complete('owned')]);
    const owner = await submit({ subagent_type: 'lead', prompt: 'BG-OWNER', context: { parentTaskId: 'T-bg-reach', userId: 'u' } });
    expect(await end(owner.id)).toMatchObject({ status: 'completed' });
    const [owned] = await childrenOf('T-bg-reach', owner.id);
    for (const [marker, key] of [
      ['BG-STRANGER', KEYS.acme],
      ['BG-FOREIGN', KEYS.other],
    ] as const) {
      svc.model.script(marker, [
        {
          toolCalls: [
            { name: 'wait', args: { task_ids: [owned.id] } },
            { name: 'send_input', args: { task_id: owned.id, message: 'hijack' } },
            { name: 'close_agent', args: { task_id: owned.id } },
          ],
        },
        complete('tried'),
      ]);
      const other = await submit({ subagent_type: 'lead', prompt: marker, context: { parentTaskId: 'T-bg-reach', userId: 'u' } }, key);
      expect(await end(other.id, key)).toMatchObject({ status: 'completed' });
      expect(resultsSeen(marker)).toEqual([
        `not subagents this task started: ${owned.id}`,
        `${owned.id} is not a subagent this task started`,
        `${owned.id} is not a subagent this task started`,
      ]);
    }
    // Nothing happened to it: no follow-up, the same end.
    expect((await svc.inject({ url: '/tasks?parentTaskId=T-bg-reach', headers: auth() })).json().tasks).toHaveLength(3);
    expect(await task(owned.id)).toMatchObject({ status: 'completed', summary: 'owned' });
  });

  it('offers the tools by the limits: without wait, no background; denied ones are not offered', async () => {
    svc.model.script('BG-NARROW', [complete('ok')]);
    svc.model.script('BG-DENIED', [complete('ok')]);
    const offered = (marker: string) => requestsOf(marker)[0].body.tools as unknown as Array<{ function: { name: string; parameters: any } }>;
    await end(
      (await submit({ subagent_type: 'lead', prompt: 'BG-NARROW', context: { parentTaskId: 'T-bg-tools', userId: 'u' }, options: { tools: ['task'] } })).id,
    );
    expect(offered('BG-NARROW').map((t) => t.function.name)).toEqual(['complete', 'task']);
    expect(offered('BG-NARROW')[1].function.parameters.properties).not.toHaveProperty('run_in_background');
    const denied = { permissions: { close_agent: 'deny', send_input: 'deny' } };
    await end((await submit({ subagent_type: 'lead', prompt: 'BG-DENIED', context: { parentTaskId: 'T-bg-tools', userId: 'u' }, options: denied })).id);
    const names = offered('BG-DENIED').map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(['task', 'wait']));
    expect(names).not.toContain('close_agent');
    expect(names).not.toContain('send_input');
  });

  it('a definition without background waits unless a call asks; a background call past the depth limit starts nothing', async () => {
    svc.model.script('BG-WAITER', (ctx) => {
      if (ctx.turn === 0) return call('task', { subagent_type: 'general', description: 'Inline', prompt: 'BG-INLINE' });
      if (ctx.turn === 1) return call('task', { subagent_type: 'general', description: 'Aside', prompt: 'BG-ASIDE', run_in_background: true });
      if (ctx.turn === 2) return call('wait', {});
      return complete('both');
    });
    svc.model.script('BG-INLINE', [complete('inline done')]);
    // A child is as deep as the root allows: its own background call is refused.
    svc.model.script('BG-ASIDE', (ctx) =>
      ctx.turn === 0
        ? call('task', { subagent_type: 'general', description: 'Deeper', prompt: 'BG-DEEPER', run_in_background: true })
        : complete(ctx.toolResults[0].content),
    );
    const lead = await submit({ subagent_type: 'waiter', prompt: 'BG-WAITER', context: { parentTaskId: 'T-bg-waiter', userId: 'u' } });
    expect(await end(lead.id)).toMatchObject({ status: 'completed' });
    const [inline, aside] = await childrenOf('T-bg-waiter', lead.id);
    const [first, second] = resultsSeen('BG-WAITER').map(json);
    expect(first).toMatchObject({ task_id: inline.id, status: 'completed', summary: 'inline done' });
    expect(inline.background).toBe(false);
    expect(second).toEqual({ task_id: aside.id, status: expect.any(String) });
    expect(aside).toMatchObject({ background: true, summary: 'Agent depth limit reached. Solve the task yourself.' });
    expect(requestsOf('BG-DEEPER')).toEqual([]);
  });
});
