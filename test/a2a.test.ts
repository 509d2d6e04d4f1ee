import http from 'node:http';
import { Role, TaskState, type Message, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';
import { until } from './support/until';

/** The A2A server, driven by the official SDK's own client (v1.0), plus a raw v0.3 call. */
let svc: TestService;
const KEYS = { acme: 'a2a-key-acme', other: 'a2a-key-other' };

beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: `${KEYS.acme}:acme,${KEYS.other}:other`, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
});
afterAll(() => svc.close());

async function a2aClient(key = KEYS.acme): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }),
  );
  return factory.createFromUrl(svc.url);
}

const text = (value: string, extra: Partial<Message> = {}): Message => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  contextId: 'T-a2a',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...extra,
});
const send = (message: Message, configuration?: Record<string, unknown>) => ({
  tenant: '',
  message,
  configuration: configuration as never,
  metadata: undefined,
});

/** A subagent that writes a report in `steps` steps (`delayMs` before each answer), then completes. */
function scriptReport(marker: string, steps = 1, delayMs = 0) {
  svc.model.script(marker, (ctx) =>
    ctx.turn < steps
      ? { delayMs, toolCalls: [{ name: 'write_file', args: { path: `${marker}.md`, content: `# ${marker} ${ctx.turn}` } }], usage: { input: 10, output: 3 } }
      : { delayMs, toolCalls: [{ name: 'complete', args: { summary: `${marker} done`, paths: [`${marker}.md`] } }], usage: { input: 10, output: 3 } },
  );
}

const kinds = (events: StreamResponse[]) => events.map((e) => e.payload!.$case);

describe('A2A', () => {
  it('serves a public agent card with one skill per subagent type and both protocol versions', async () => {
    const res = await fetch(`${svc.url}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    const card: any = await res.json();
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual(['general', 'explore', 'plan', 'shell']);
    expect(card.supportedInterfaces).toEqual([
      { url: `${svc.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${svc.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card.capabilities).toEqual({ streaming: true, pushNotifications: true });
    expect(card.securitySchemes.bearer).toBeDefined();
    // The endpoint itself needs a key.
    expect((await fetch(`${svc.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
  });

  it("a message starts a task in the context's workspace and answers with it completed, artifacts included", async () => {
    scriptReport('A2A-SEND');
    const client = await a2aClient();
    const result = await client.sendMessage(send(text('A2A-SEND write the report')));
    expect('status' in result && result.status).toBeTruthy();
    const task = result as Extract<typeof result, { status: unknown }>;
    expect(task.contextId).toBe('T-a2a');
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.status!.message!.parts[0].content).toEqual({ $case: 'text', value: 'A2A-SEND done' });
    const file = task.artifacts.find((a) => a.name === 'A2A-SEND.md')!;
    expect(file.parts[0].content).toEqual({ $case: 'url', value: `${svc.url}/workspaces/T-a2a/files/A2A-SEND.md` });
    expect(file.metadata).toMatchObject({ fsType: 'file', size: 12 });
    // The same task through the HTTP API: the contextId is its parentTaskId.
    const same = await (await fetch(`${svc.url}/tasks/${task.id}`, { headers: { authorization: `Bearer ${KEYS.acme}` } })).json();
    expect(same).toMatchObject({ status: 'completed', context: { parentTaskId: 'T-a2a', userId: 'a2a' } });
    expect((await client.getTask({ tenant: '', id: task.id })).status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('streams the task, working updates, artifacts and the final state', async () => {
    scriptReport('A2A-STREAM', 2);
    const client = await a2aClient();
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(send(text('A2A-STREAM go'), { returnImmediately: false }))) events.push(e);
    expect(events[0].payload!.$case).toBe('task');
    expect(kinds(events).filter((k) => k === 'artifactUpdate')).toHaveLength(2); // summary + the file
    const last = events.at(-1)!.payload!;
    expect(last.$case).toBe('statusUpdate');
    expect(last.$case === 'statusUpdate' && last.value.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const working = events.filter((e) => e.payload!.$case === 'statusUpdate' && e.payload!.value.status!.state === TaskState.TASK_STATE_WORKING);
    expect(working.map((e) => (e.payload!.value as { metadata?: Record<string, unknown> }).metadata?.event)).toEqual(
      expect.arrayContaining(['task.started', 'tool.call', 'tool.result', 'step.finished']),
    );
  });

  it('cancels a running task', async () => {
    scriptReport('A2A-CANCEL', 50, 200);
    const client = await a2aClient();
    const started = (await client.sendMessage(send(text('A2A-CANCEL forever'), { returnImmediately: true }))) as { id: string };
    await until(async () => (await client.getTask({ tenant: '', id: started.id })).status!.state === TaskState.TASK_STATE_WORKING);
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask({ tenant: '', id: started.id, metadata: undefined })).rejects.toThrow(/already aborted/);
  });

  it('resubscribes after a disconnect and follows the task to its end', async () => {
    scriptReport('A2A-RESUB', 4, 150);
    const client = await a2aClient();
    const abort = new AbortController();
    let id = '';
    try {
      for await (const e of client.sendMessageStream(send(text('A2A-RESUB go')), { signal: abort.signal })) {
        if (e.payload!.$case === 'task') id = e.payload!.value.id;
        if (e.payload!.$case === 'statusUpdate') abort.abort(); // the connection drops
      }
    } catch {
      // aborted
    }
    expect(id).toMatch(/^tsk_/);
    const again: StreamResponse[] = [];
    for await (const e of client.resubscribeTask({ tenant: '', id })) again.push(e);
    expect(again[0].payload!.$case).toBe('task');
    const last = again.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && last.value.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await expect(async () => {
      for await (const _ of client.resubscribeTask({ tenant: '', id })) void _;
    }).rejects.toThrow(/cannot be subscribed/);
  });

  it("keeps tenants apart: another tenant's task is not found", async () => {
    scriptReport('A2A-TENANT');
    const mine = (await (await a2aClient()).sendMessage(send(text('A2A-TENANT x')))) as { id: string };
    const other = await a2aClient(KEYS.other);
    await expect(other.getTask({ tenant: '', id: mine.id })).rejects.toThrow(/not found/i);
    await expect(other.cancelTask({ tenant: '', id: mine.id, metadata: undefined })).rejects.toThrow(/not found/i);
  });

  it("delivers push notifications to a task's config through the webhook outbox, with its token", async () => {
    const received: Array<{ headers: http.IncomingHttpHeaders; body: any }> = [];
    const receiver = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(raw) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      scriptReport('A2A-PUSH', 1, 100);
      const client = await a2aClient();
      const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
      const task = (await client.sendMessage(
        send(text('A2A-PUSH go'), {
          returnImmediately: true,
          taskPushNotificationConfig: { tenant: '', id: 'cfg-1', taskId: '', url, token: 'tok-123', authentication: undefined },
        }),
      )) as { id: string };
      const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
      expect(listed.configs.map((c) => [c.id, c.url])).toEqual([['cfg-1', url]]);
      await until(async () => received.some((r) => r.body.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED'));
      expect(received.every((r) => r.headers['x-a2a-notification-token'] === 'tok-123')).toBe(true);
      expect(received.map((r) => r.body.statusUpdate.status.state)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
      expect(received[0].body.statusUpdate.taskId).toBe(task.id);
      // The A2A configs are not the tenant's webhooks.
      const hooks: any = await (await fetch(`${svc.url}/webhooks`, { headers: { authorization: `Bearer ${KEYS.acme}` } })).json();
      expect(hooks.webhooks).toEqual([]);
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
      expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
    } finally {
      receiver.close();
    }
  });

  it('accepts v0.3 method names (message/send, tasks/get) without an A2A-Version header', async () => {
    scriptReport('A2A-V03');
    const call = async (method: string, params: unknown): Promise<any> =>
      (
        await fetch(`${svc.url}/a2a`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.acme}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      ).json();
    const sent = await call('message/send', {
      message: { kind: 'message', messageId: 'v03-1', role: 'user', contextId: 'T-v03', parts: [{ kind: 'text', text: 'A2A-V03 go' }] },
    });
    expect(sent.result).toMatchObject({ kind: 'task', contextId: 'T-v03', status: { state: 'completed' } });
    const got = await call('tasks/get', { id: sent.result.id });
    expect(got.result.status.state).toBe('completed');
    const missing = await call('tasks/get', { id: 'tsk_01JZZZZZZZZZZZZZZZZZZZZZZZ' });
    expect(missing.error.code).toBe(-32001);
  });
});
