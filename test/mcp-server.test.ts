import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { serviceForTests, taskEnd } from './support/harness';
import { until } from './support/until';

/**
 * The service as an MCP server (`/mcp`), driven by the official SDK's own client over Streamable
 * HTTP: the `task` tool runs a subagent and answers its compact TaskOutput.
 */
// A definition whose bash calls wait for an approval (asked of the host's user through elicitation).
const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-mcp-server-'));
mkdirSync(path.join(dir, 'agents'));
writeFileSync(path.join(dir, 'agents', 'asks.md'), '---\nname: asks\ndescription: Asks before bash\npermissions:\n  bash: ask\n---\n');
const file = serviceForTests({ dir, env: { API_KEYS: 'key-a:tenant-a,key-b:tenant-b' } });
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const clients: Client[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
});

async function connect(key: string, headers: Record<string, string> = {}, elicit?: (message: string) => { decision: string; message?: string }) {
  const client = new Client({ name: 'subagentd-test', version: '1.0.0' }, elicit ? { capabilities: { elicitation: { form: {} } } } : {});
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (request) => ({ action: 'accept', content: elicit(request.params.message) }));
  const transport = new StreamableHTTPClientTransport(new URL(`${file.svc.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

describe('MCP server (/mcp)', () => {
  it('lists one tool, task, whose subagent_type is an enum of the definitions with their descriptions', async () => {
    const { client } = await connect('key-a');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['task']);
    const schema = tools[0].inputSchema as { properties: Record<string, { enum?: string[] }>; required: string[] };
    expect(schema.properties.subagent_type.enum).toEqual(expect.arrayContaining(['general', 'explore', 'shell']));
    expect(schema.properties.subagent_type.enum).not.toContain('fork');
    expect(schema.required.sort()).toEqual(['description', 'prompt', 'subagent_type']);
    expect(tools[0].description).toContain('- general: ');
  });

  it('runs a subagent: progress while it works, its compact output as the result, its file in the workspace, its usage billed', async () => {
    file.svc.model.script('MCP-WRITE', [
      { toolCalls: [{ name: 'write_file', args: { path: 'notes/mcp.md', content: '# From MCP\n' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'wrote notes/mcp.md', paths: ['notes/mcp.md'] } }] },
    ]);
    const { client } = await connect('key-a', { 'x-parent-task-id': 'T-mcp', 'x-user-id': 'u-mcp' });
    const progress: string[] = [];
    const result = await client.callTool(
      { name: 'task', arguments: { subagent_type: 'general', description: 'Write notes', prompt: 'MCP-WRITE' } },
      undefined,
      { onprogress: (p) => progress.push(String(p.message)) },
    );
    expect(result.isError).toBe(false);
    const out = result.structuredContent as { task_id: string; status: string; summary: string; artifacts: unknown[] };
    expect(out).toMatchObject({ status: 'completed', summary: 'wrote notes/mcp.md', artifacts: [{ relativePath: 'notes/mcp.md', size: 11, fsType: 'file' }] });
    expect(JSON.parse((result.content as Array<{ text: string }>)[0].text)).toEqual(out);
    expect(progress).toEqual(['step 1', 'running write_file', 'step 2', 'running complete']);
    // The tenant's own workspace, and the task under the tenant (another tenant sees no such task).
    expect(readFileSync(path.join(file.svc.config.workspacesDir, '@tenant-a', 'T-mcp', 'notes/mcp.md'), 'utf8')).toBe('# From MCP\n');
    const task = await taskEnd(file.svc, out.task_id, { key: 'key-a' });
    expect(task.context).toMatchObject({ parentTaskId: 'T-mcp', userId: 'u-mcp', toolCallId: expect.stringMatching(/^mcp:/) });
    expect((await file.svc.inject({ url: `/tasks/${out.task_id}`, headers: { authorization: 'Bearer key-b' } })).statusCode).toBe(404);
    const records = await file.svc.inject({ url: '/usage/records?parentTaskId=T-mcp', headers: { authorization: 'Bearer key-a' } });
    expect(records.json().records).toEqual([expect.objectContaining({ taskId: out.task_id, userId: 'u-mcp', inputTokens: expect.any(Number) })]);
  });

  it('takes parentTaskId and userId as arguments too, and says what is missing as a tool error', async () => {
    file.svc.model.script('MCP-ARGS', [{ toolCalls: [{ name: 'complete', args: { summary: 'args', paths: [] } }] }]);
    const { client } = await connect('key-a');
    const missing = await client.callTool({ name: 'task', arguments: { subagent_type: 'general', description: 'No context', prompt: 'x' } });
    expect(missing.isError).toBe(true);
    expect((missing.content as Array<{ text: string }>)[0].text).toContain('parentTaskId and userId are required');
    const ok = await client.callTool({
      name: 'task',
      arguments: { subagent_type: 'general', description: 'With args', prompt: 'MCP-ARGS', parentTaskId: 'T-mcp-args', userId: 'u-args' },
    });
    expect(ok.structuredContent).toMatchObject({ status: 'completed', summary: 'args' });
    const bad = await client.callTool({
      name: 'task',
      arguments: { subagent_type: 'general', description: 'Bad parent', prompt: 'x', parentTaskId: '../etc', userId: 'u' },
    });
    expect(bad.isError).toBe(true);
    expect((bad.content as Array<{ text: string }>)[0].text).toContain('context.parentTaskId');
  });

  it("cancelling the call (the host's notifications/cancelled) cancels the task", async () => {
    file.svc.model.script('MCP-SLOW', () => ({ delayMs: 200, toolCalls: [{ name: 'bash', args: { command: 'sleep 0.2' } }] }));
    const { client } = await connect('key-a', { 'x-parent-task-id': 'T-mcp-cancel', 'x-user-id': 'u' });
    const abort = new AbortController();
    const call = client
      .callTool({ name: 'task', arguments: { subagent_type: 'general', description: 'Never ends', prompt: 'MCP-SLOW' } }, undefined, {
        signal: abort.signal,
      })
      .catch((err: unknown) => err);
    let id: string | undefined;
    await until(async () => {
      const list = await file.svc.inject({ url: '/tasks?parentTaskId=T-mcp-cancel', headers: { authorization: 'Bearer key-a' } });
      id = list.json().tasks[0]?.id;
      return id !== undefined && list.json().tasks[0].steps >= 1;
    });
    abort.abort();
    expect(await call).toBeInstanceOf(Error);
    const ended = await taskEnd(file.svc, id!, { key: 'key-a' });
    expect([ended.status, ended.error.code]).toEqual(['aborted', 'cancelled']);
  });

  it("asks the host's user through elicitation before a call whose rule is ask; the answer decides", async () => {
    file.svc.model.script('MCP-ASKS', (ctx) =>
      ctx.turn === 0
        ? {
            toolCalls: [
              { name: 'bash', args: { command: 'echo allowed-by-elicitation' } },
              { name: 'bash', args: { command: 'rm -rf /tmp/nothing-here' } },
            ],
          }
        : { toolCalls: [{ name: 'complete', args: { paths: [], summary: ctx.toolResults.map((r) => r.content).join(' | ') } }] },
    );
    const asked: string[] = [];
    const { client } = await connect('key-a', { 'x-parent-task-id': 'T-mcp-asks', 'x-user-id': 'u' }, (message) => {
      asked.push(message);
      return message.includes('rm -rf') ? { decision: 'deny', message: 'not that' } : { decision: 'allow' };
    });
    const result = await client.callTool({ name: 'task', arguments: { subagent_type: 'asks', description: 'Asks first', prompt: 'MCP-ASKS' } });
    expect(asked).toHaveLength(2);
    expect(asked[0]).toContain('bash');
    const out = result.structuredContent as { status: string; summary: string };
    expect(out.status).toBe('completed');
    expect(out.summary).toContain('allowed-by-elicitation');
    expect(out.summary).toContain('not that');
  });

  it('takes the same API keys: none is 401; a session is its tenant’s alone', async () => {
    const anonymous = await fetch(`${file.svc.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(anonymous.status).toBe(401);
    const { transport } = await connect('key-a');
    const stolen = await fetch(`${file.svc.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer key-b',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(stolen.status).toBe(404);
  });
});
