import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, taskEnd, type TestService } from './support/harness';
import { allBlocks, sseBlocks, type SseBlock } from './support/sse-client';

/** GET /tasks/:id/events and GET /events: the WebSocket streams' messages as server-sent events. */
let svc: TestService;
const KEY = 'key-sse-0123456789';
beforeAll(async () => {
  svc = await startService({ env: { HEARTBEAT_MS: '100', API_KEYS: `${KEY}:sse,key-other-0123456789:other` } });
});
afterAll(() => svc.close());

const auth = { authorization: `Bearer ${KEY}` };
const events = (blocks: SseBlock[]) => blocks.filter((b) => b.event !== undefined);

async function submit(prompt: string, parentTaskId = 'T-sse') {
  const res = await fetch(`${svc.url}/tasks`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(taskBody({ prompt, context: { parentTaskId, userId: 'u-sse' } })),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

function scriptSlow(marker: string, delayMs: number) {
  svc.model.script(marker, [
    { delayMs, text: 'Looking.', chunkDelayMs: 2, toolCalls: [{ name: 'write_file', args: { path: `${marker}.md`, content: 'x' } }] },
    { delayMs, toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [`${marker}.md`] } }] },
  ]);
}

describe('GET /tasks/:id/events', () => {
  it('streams the same messages as the WebSocket, id = seq and event = type, heartbeats as comments, then ends', async () => {
    scriptSlow('SSE-LIVE', 300);
    const id = await submit('SSE-LIVE');
    const res = await fetch(`${svc.url}/tasks/${id}/events`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const blocks = await allBlocks(res);
    const sent = events(blocks);
    expect(sent.map((b) => Number(b.id))).toEqual(sent.map((_, i) => i + 1));
    expect(sent.map((b) => b.event)).toEqual(sent.map((b) => JSON.parse(b.data!).type));
    expect(sent.at(-1)!.event).toBe('task.finished');
    // Byte for byte what a WebSocket reader replays.
    expect(sent.map((b) => JSON.parse(b.data!))).toEqual(await storedEvents(svc, id, { key: KEY }));
    // The model waits 300 ms twice at 100 ms heartbeats: comments with the heartbeat's JSON.
    const beats = blocks.filter((b) => b.comment?.startsWith('{')).map((b) => JSON.parse(b.comment!));
    expect(beats.length).toBeGreaterThan(0);
    expect(beats[0]).toMatchObject({ type: 'heartbeat', taskId: id, data: { lastSeq: expect.any(Number) } });
  });

  it('resumes after Last-Event-ID (or ?after=), and answers 204 once nothing follows the end', async () => {
    scriptSlow('SSE-RESUME', 0);
    const id = await submit('SSE-RESUME');
    await taskEnd(svc, id, { key: KEY });
    const all = events(await allBlocks(await fetch(`${svc.url}/tasks/${id}/events`, { headers: auth })));
    const last = Number(all.at(-1)!.id);
    const tail = events(await allBlocks(await fetch(`${svc.url}/tasks/${id}/events`, { headers: { ...auth, 'last-event-id': '3' } })));
    expect(tail.map((b) => Number(b.id))).toEqual(all.slice(3).map((b) => Number(b.id)));
    // The header wins over the query, as an EventSource reconnecting to a URL with ?after= expects.
    const both = events(await allBlocks(await fetch(`${svc.url}/tasks/${id}/events?after=1`, { headers: { ...auth, 'last-event-id': String(last - 1) } })));
    expect(both.map((b) => b.event)).toEqual(['task.finished']);
    const query = events(await allBlocks(await fetch(`${svc.url}/tasks/${id}/events?after=${last - 2}`, { headers: auth })));
    expect(query).toHaveLength(2);
    const done = await fetch(`${svc.url}/tasks/${id}/events`, { headers: { ...auth, 'last-event-id': String(last) } });
    expect(done.status).toBe(204);
  });

  it('takes ?access_token= (EventSource cannot send headers), refuses a wrong one and other tenants, checks the cursor', async () => {
    scriptSlow('SSE-AUTH', 0);
    const id = await submit('SSE-AUTH');
    await taskEnd(svc, id, { key: KEY });
    const ok = await fetch(`${svc.url}/tasks/${id}/events?access_token=${KEY}`);
    expect(ok.status).toBe(200);
    expect(events(await allBlocks(ok)).at(-1)!.event).toBe('task.finished');
    expect((await fetch(`${svc.url}/tasks/${id}/events?access_token=wrong-key-000`)).status).toBe(401);
    expect((await fetch(`${svc.url}/tasks/${id}/events`)).status).toBe(401);
    expect((await fetch(`${svc.url}/tasks/${id}/events?access_token=key-other-0123456789`)).status).toBe(404);
    expect((await fetch(`${svc.url}/tasks/${id.slice(0, -4)}0000/events`, { headers: auth })).status).toBe(404);
    const bad = await fetch(`${svc.url}/tasks/${id}/events`, { headers: { ...auth, 'last-event-id': '-1' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });
});

describe('GET /events?parentTaskId=', () => {
  it('streams every task of the parent with id = parentSeq, live, and resumes after Last-Event-ID', async () => {
    const parent = 'T-sse-parent';
    const controller = new AbortController();
    const res = await fetch(`${svc.url}/events?parentTaskId=${parent}`, { headers: auth, signal: controller.signal });
    expect(res.status).toBe(200);
    scriptSlow('SSE-P1', 0);
    scriptSlow('SSE-P2', 0);
    const ids = [await submit('SSE-P1', parent), await submit('SSE-P2', parent)];
    const seen: SseBlock[] = [];
    let finished = 0;
    for await (const block of sseBlocks(res)) {
      if (!block.event) continue;
      seen.push(block);
      if (block.event === 'task.finished' && ++finished === 2) break;
    }
    controller.abort();
    const messages = seen.map((b) => JSON.parse(b.data!));
    expect(new Set(messages.map((m) => m.taskId))).toEqual(new Set(ids));
    expect(seen.map((b) => Number(b.id))).toEqual(messages.map((m) => m.parentSeq));
    expect(messages.map((m) => m.parentSeq)).toEqual([...messages.map((m) => m.parentSeq)].sort((a, b) => a - b));
    // A reader that lost its connection after the fifth event gets the rest, once each.
    const again = new AbortController();
    const resumed = await fetch(`${svc.url}/events?parentTaskId=${parent}`, { headers: { ...auth, 'last-event-id': seen[4].id! }, signal: again.signal });
    const rest: SseBlock[] = [];
    for await (const block of sseBlocks(resumed)) {
      if (block.event) rest.push(block);
      if (rest.length === seen.length - 5) break;
    }
    again.abort();
    expect(rest.map((b) => b.id)).toEqual(seen.slice(5).map((b) => b.id));
  });

  it('is ended by the service when it shuts down, as is a connection that sent nothing yet, so the process can exit', async () => {
    const other = await startService({ model: svc.model });
    const res = await fetch(`${other.url}/events?parentTaskId=T-sse-close`);
    expect(res.status).toBe(200);
    const reading = allBlocks(res);
    // A client's pre-opened connection: Node's close() alone would wait for its header timeout.
    const silent = connect(Number(new URL(other.url).port), '127.0.0.1');
    await new Promise((resolve) => silent.once('connect', resolve));
    const silentClosed = new Promise((resolve) => silent.once('close', resolve));
    await other.close();
    const blocks = await reading;
    expect(blocks.at(-1)!.comment).toMatch(/^close 1001 the service is shutting down/);
    await silentClosed;
  });
});
