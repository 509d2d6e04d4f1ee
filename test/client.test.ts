import WebSocket from 'ws';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubagentClient, SubagentApiError, type SocketConstructor, type StreamMessage } from '@subagentd/client';
import { startService, type TestService } from './support/harness';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy';

/** The typed client (`@subagentd/client`) against a real service, over real HTTP, WebSockets and SSE. */
let svc: TestService;
let proxy: TcpProxy;
const KEY = 'client-test-key';
const context = { parentTaskId: 'T-client', userId: 'u-client' };

beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: `${KEY}:acme`, HEARTBEAT_MS: '200' } });
  proxy = await startTcpProxy(svc.url);
});
afterAll(async () => {
  await proxy.close();
  await svc.close();
});

const client = (over: Partial<Parameters<typeof createSubagentClient>[0]> = {}) => createSubagentClient({ baseUrl: svc.url, apiKey: KEY, ...over });

/** A subagent that writes a file in `steps` tool steps (each `delayMs` apart), then completes. */
function scriptWriter(marker: string, steps: number, delayMs = 0) {
  svc.model.script(marker, (ctx) =>
    ctx.turn < steps
      ? {
          delayMs,
          toolCalls: [{ name: 'write_file', args: { path: `${marker}/${ctx.turn}.txt`, content: `step ${ctx.turn}` } }],
          usage: { input: 10, output: 2 },
        }
      : { toolCalls: [{ name: 'complete', args: { summary: `wrote ${steps} files`, paths: [`${marker}/0.txt`] } }], usage: { input: 10, output: 2 } },
  );
}

describe('@subagentd/client', () => {
  it('creates a task, waits for it and reads it back, typed', async () => {
    scriptWriter('CLIENT-WAIT', 2);
    const c = client();
    const accepted = await c.tasks.create({ subagent_type: 'general', description: 'Write two files', prompt: 'CLIENT-WAIT', context });
    expect(accepted.streamUrl).toBe(`/tasks/${accepted.id}/stream`);
    const done = await c.tasks.wait(accepted.id);
    expect(done.status).toBe('completed');
    expect(done.summary).toBe('wrote 2 files');
    expect(done.artifacts.map((a) => a.url)).toEqual(['/workspaces/T-client/files/CLIENT-WAIT/0.txt']);
    expect((await c.tasks.get(accepted.id)).usage.inputTokens).toBe(30);
    const listed = await c.tasks.list({ parentTaskId: 'T-client', limit: 5 });
    expect(listed.tasks.map((t) => t.id)).toContain(accepted.id);
    expect((await c.tasks.messages(accepted.id)).length).toBeGreaterThan(2);
  });

  it('run() creates and waits in one call; a zod outputSchema is sent as JSON Schema and types the output', async () => {
    svc.model.script('CLIENT-RUN', [{ toolCalls: [{ name: 'complete', args: { summary: 'counted', paths: [], output: { errors: 3, top: 'ECONNRESET' } } }] }]);
    const schema = z.object({ errors: z.number().int().min(0), top: z.string(), note: z.string().default('none') });
    const done = await client().tasks.run({ subagent_type: 'general', description: 'Count', prompt: 'CLIENT-RUN', context, options: { outputSchema: schema } });
    expect(done.status).toBe('completed');
    // Typed from the schema (a compile error otherwise) and parsed by it (the default applied).
    const output: { errors: number; top: string; note: string } | null = done.output;
    expect(output).toEqual({ errors: 3, top: 'ECONNRESET', note: 'none' });
    // The service got the JSON Schema: a model output that breaks it is refused there.
    svc.model.script('CLIENT-RUN-BAD', (ctx) =>
      ctx.turn === 0
        ? { toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [], output: { errors: -1, top: 'x' } } }] }
        : { toolCalls: [{ name: 'complete', args: { summary: 'fixed', paths: [], output: { errors: 0, top: 'none' } } }] },
    );
    const fixed = await client().tasks.run({
      subagent_type: 'general',
      description: 'Count',
      prompt: 'CLIENT-RUN-BAD',
      context,
      options: { outputSchema: schema },
    });
    expect(fixed).toMatchObject({ status: 'completed', steps: 2, output: { errors: 0, top: 'none', note: 'none' } });
  });

  it('derives an Idempotency-Key from the tool call id: a repeated tool call gets the first task', async () => {
    scriptWriter('CLIENT-IDEM', 1);
    const c = client();
    const body = { subagent_type: 'general', description: 'Once', prompt: 'CLIENT-IDEM', context: { ...context, toolCallId: 'call_idem_1' } };
    const first = await c.tasks.create(body);
    const again = await c.tasks.create(body);
    expect(again.id).toBe(first.id);
    const other = await c.tasks.create({ ...body, context: { ...context, toolCallId: 'call_idem_2' } });
    expect(other.id).not.toBe(first.id);
    await c.tasks.wait(other.id);
  });

  it('honours Retry-After on 429 and 503; a 400 comes back as the contract error', async () => {
    const calls: number[] = [];
    let refusals = 2;
    const flaky: typeof fetch = async (input, init) => {
      calls.push(Date.now());
      if (refusals-- > 0) {
        return new Response(JSON.stringify({ error: { code: 'overloaded', message: 'try later' } }), {
          status: refusals === 1 ? 429 : 503,
          headers: { 'retry-after': '1', 'content-type': 'application/json' },
        });
      }
      return fetch(input, init);
    };
    const agents = await client({ fetch: flaky }).agents.list();
    expect(agents.map((a) => a.type)).toContain('general');
    expect(calls).toHaveLength(3);
    expect(calls[1] - calls[0]).toBeGreaterThanOrEqual(950);
    expect(calls[2] - calls[1]).toBeGreaterThanOrEqual(950);
    const bad = await client()
      .tasks.create({ subagent_type: 'nope', description: 'x', prompt: 'x', context })
      .catch((e) => e);
    expect(bad).toMatchObject({ status: 400, code: 'unknown_subagent_type' });
  });

  it('puts, lists, reads and deletes workspace files', async () => {
    const c = client();
    const put = await c.workspaces.put('T-client-files', 'in/data.csv', 'a,b\n1,2\n');
    expect(put).toMatchObject({ path: 'in/data.csv', size: 8, fsType: 'file' });
    expect((await c.workspaces.list('T-client-files')).files.map((f) => f.path)).toEqual(['in', 'in/data.csv']);
    expect(await (await c.workspaces.get('T-client-files', 'in/data.csv')).text()).toBe('a,b\n1,2\n');
    await c.workspaces.delete('T-client-files', 'in');
    expect((await c.workspaces.list('T-client-files')).files).toEqual([]);
  });

  it('reads usage, budgets and agents for its tenant', async () => {
    const c = client();
    const usage = await c.usage.get({ parentTaskId: 'T-client', groupBy: 'subagentType' });
    expect(usage.totals.tasks).toBeGreaterThan(0);
    expect((await c.usage.records({ parentTaskId: 'T-client', limit: 1 })).records).toHaveLength(1);
    expect(await c.budgets.put('parent', 'T-client', { maxTokens: 1_000_000 })).toMatchObject({ scope: 'parent', maxTokens: 1_000_000 });
    await c.budgets.delete('parent', 'T-client');
    expect((await c.agents.list()).find((a) => a.type === 'shell')?.kind).toBe('shell');
  });
});

/** Every stream test runs over both transports: WebSocket (`ws` here, on Node 20) and server-sent events. */
const transports = [{ transport: 'websocket' as const, WebSocket: WebSocket as unknown as SocketConstructor }, { transport: 'sse' as const }];

describe.each(transports)('@subagentd/client streams over $transport', (over) => {
  it('wait() gets past a connection that goes silent (a proxy stops forwarding, never closes): it reconnects', async () => {
    // The service heartbeats every 200 ms here; three quiet seconds mean the connection is dead.
    svc.model.script('CLIENT-SILENT', (ctx) =>
      ctx.turn === 0
        ? { delayMs: 1500, toolCalls: [{ name: 'write_file', args: { path: 'silent.txt', content: 'x' } }], usage: { input: 10, output: 2 } }
        : { toolCalls: [{ name: 'complete', args: { summary: 'through the silence', paths: [] } }], usage: { input: 10, output: 2 } },
    );
    const c = client({ ...over, baseUrl: proxy.url, streamIdleTimeoutMs: 3000 });
    const accepted = await c.tasks.create({ subagent_type: 'general', description: 'Silent drop', prompt: 'CLIENT-SILENT', context });
    const waited = c.tasks.wait(accepted.id);
    await new Promise((r) => setTimeout(r, 500));
    proxy.stall();
    const done = await waited;
    expect(done).toMatchObject({ id: accepted.id, status: 'completed', summary: 'through the silence' });
    // The stalled connections (a kept-alive HTTP one among them) are dropped for the next tests.
    proxy.cut();
  }, 20_000);

  it('streams every event in order through a dropped connection, reconnecting from the last seq', async () => {
    scriptWriter('CLIENT-DROP', 6, 150);
    const c = client({ ...over, baseUrl: proxy.url });
    // Created directly: only the stream goes through the proxy that is cut.
    const { id } = await client().tasks.create({ subagent_type: 'general', description: 'Slow writer', prompt: 'CLIENT-DROP', context });
    const seen: StreamMessage[] = [];
    let cuts = 0;
    for await (const m of c.tasks.stream(id)) {
      seen.push(m);
      // Drop the network twice while the task runs.
      if (m.type === 'step.finished' && cuts < 2) {
        cuts++;
        proxy.cut();
      }
    }
    expect(cuts).toBe(2);
    const events = seen.filter((m): m is Exclude<StreamMessage, { type: 'heartbeat' }> => m.type !== 'heartbeat');
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.type).toBe('task.finished');
    expect(events.filter((e) => e.type === 'tool.call')).toHaveLength(7);
  });

  it('throws the contract error for an unknown task, over HTTP and on a stream', async () => {
    const c = client(over);
    const err = await c.tasks.get('tsk_01JZZZZZZZZZZZZZZZZZZZZZZZ').catch((e) => e);
    expect(err).toBeInstanceOf(SubagentApiError);
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
    const streamErr = await (async () => {
      for await (const _ of c.tasks.stream('tsk_01JZZZZZZZZZZZZZZZZZZZZZZZ')) void _;
    })().catch((e) => e);
    expect(streamErr).toMatchObject({ status: 404, code: 'not_found' });
    const bad = await createSubagentClient({ baseUrl: svc.url, apiKey: 'wrong' })
      .agents.list()
      .catch((e) => e);
    expect(bad).toMatchObject({ status: 401 });
  });

  it('follows every task of a parent as one stream, resuming after a parentSeq', async () => {
    scriptWriter('CLIENT-PARENT-A', 1);
    scriptWriter('CLIENT-PARENT-B', 1);
    const c = client(over);
    const parentTaskId = `T-client-parent-${over.transport}`;
    const controller = new AbortController();
    const seen: StreamMessage[] = [];
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const reading = (async () => {
      let finished = 0;
      for await (const m of c.parents.stream(parentTaskId, { signal: controller.signal })) {
        // The first heartbeat says the stream is open: the tasks start after it.
        if (m.type === 'heartbeat') opened();
        else seen.push(m);
        if (m.type === 'task.finished' && ++finished === 2) return;
      }
    })();
    await open;
    const ids = [
      (await c.tasks.create({ subagent_type: 'general', description: 'A', prompt: 'CLIENT-PARENT-A', context: { parentTaskId, userId: 'u-client' } })).id,
      (await c.tasks.create({ subagent_type: 'general', description: 'B', prompt: 'CLIENT-PARENT-B', context: { parentTaskId, userId: 'u-client' } })).id,
    ];
    await reading;
    controller.abort();
    const events = seen as Array<Exclude<StreamMessage, { type: 'heartbeat' }>>;
    expect(new Set(events.map((e) => e.taskId))).toEqual(new Set(ids));
    expect(events.map((e) => e.parentSeq)).toEqual(events.map((_, i) => events[0].parentSeq! + i));
    // From a cursor: what followed it, once.
    const again: number[] = [];
    for await (const m of c.parents.stream(parentTaskId, { after: events[2].parentSeq, heartbeats: false })) {
      // No heartbeat here, and the type says so (m.type cannot be 'heartbeat').
      again.push(m.parentSeq!);
      if (again.length === events.length - 3) break;
    }
    expect(again).toEqual(events.slice(3).map((e) => e.parentSeq));
    // A stream stopped by its caller's signal ends the loop with an AbortError, not silently.
    const stop = new AbortController();
    const stopped = (async () => {
      for await (const m of c.parents.stream(parentTaskId, { after: events.at(-1)!.parentSeq, signal: stop.signal })) if (m.type === 'heartbeat') stop.abort();
    })();
    await expect(stopped).rejects.toMatchObject({ name: 'AbortError' });
  });

  it("reads the skills, and writes, reads, lists and deletes a user's memory", async () => {
    const c = client();
    expect(await c.skills.list()).toEqual([]);
    const written = await c.memory.put('user', 'u-client-mem', 'general', 'notes/MEMORY.md', 'remember this');
    expect(written).toMatchObject({ path: 'notes/MEMORY.md', size: 13, url: '/memory/user/u-client-mem/general/files/notes/MEMORY.md' });
    expect(await (await c.memory.get('user', 'u-client-mem', 'general', 'notes/MEMORY.md')).text()).toBe('remember this');
    const listing = await c.memory.list('user', 'u-client-mem', 'general');
    expect(listing.bytes).toBe(13);
    expect(listing.files.map((f) => f.path)).toEqual(['notes', 'notes/MEMORY.md']);
    await c.memory.delete('user', 'u-client-mem', 'general');
    await expect(c.memory.list('user', 'u-client-mem', 'general')).rejects.toMatchObject({ status: 404 });
  });

  it('purges a task, erases a user, makes and revokes a key, and reads the audit log', async () => {
    const c = client();
    scriptWriter('CLIENT-LIFE', 0);
    const done = await c.tasks.wait(
      (
        await c.tasks.create({
          subagent_type: 'general',
          description: 'life',
          prompt: 'CLIENT-LIFE',
          context: { parentTaskId: 'T-client-life', userId: 'u-client-life' },
        })
      ).id,
    );
    expect((await c.tasks.purge(done.id)).purged).toBe(true);
    expect(await c.users.erase('u-client-life')).toMatchObject({ tasks: 1, memories: 0, erasedAs: expect.stringMatching(/^erased:[0-9a-f]{16}$/) });
    const made = await c.keys.create({ role: 'read', name: 'from the client' });
    expect((await c.keys.list()).map((k) => k.id)).toContain(made.id);
    const reader = client({ apiKey: made.key });
    expect((await reader.tasks.list({})).tasks.length).toBeGreaterThan(0);
    const refused = await reader.keys.list().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SubagentApiError);
    expect((refused as SubagentApiError).status).toBe(403);
    await c.keys.revoke(made.id);
    const { entries } = await c.audit({ limit: 10 });
    expect(entries.map((e) => e.action).slice(0, 4)).toEqual(['key.revoked', 'key.created', 'user.erased', 'task.purged']);
  });
});
