import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startService, storedEvents, taskBody, toolResults, type TestService } from './support/harness';

/**
 * Definitions' `mcpServers`: a real MCP server process (scripted-model/mcp-server.ts, the official
 * SDK's server over stdio) started per task inside its sandbox, its tools offered to the model as
 * `mcp__<server>__<tool>`, called through the SDK's client.
 */
const repo = path.resolve(import.meta.dirname, '..');
let svc: TestService;
let dir: string;

function definition(name: string, extra = '', env = 'env: [MCP_TEST_VISIBLE]') {
  return `---
name: ${name}
description: A subagent with the scripted MCP server (${name})
${extra}
mcpServers:
  scripted:
    command: ${process.execPath}
    args: ["--import", "${path.join(repo, 'node_modules/tsx/dist/loader.mjs')}", "${path.join(repo, 'scripted-model/mcp-server.ts')}"]
    ${env}
---
`;
}

/** An MCP server over Streamable HTTP on loopback (the SDK's, stateless), recording the Authorization it gets. */
let urlServer: Server;
const seenAuthorization: string[] = [];
async function startUrlServer(): Promise<string> {
  urlServer = createServer((req, res) => {
    seenAuthorization.push(String(req.headers.authorization));
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const mcp = new McpServer({ name: 'url-mcp', version: '1.0.0' });
      mcp.registerTool('shout', { description: 'Upper-cases a text', inputSchema: { text: z.string() } }, async ({ text }) => ({
        content: [{ type: 'text', text: text.toUpperCase() }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      void mcp.connect(transport).then(() => transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
    });
  });
  await new Promise<void>((r) => urlServer.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(urlServer.address() as AddressInfo).port}/mcp`;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-mcp-'));
  mkdirSync(path.join(dir, 'agents'));
  const url = await startUrlServer();
  writeFileSync(
    path.join(dir, 'agents', 'mcp-url.md'),
    `---\nname: mcp-url\ndescription: A URL MCP server\nmcpServers:\n  remote:\n    url: ${url}\n    headers: { Authorization: "Bearer \${MCP_URL_TOKEN}" }\n---\n`,
  );
  const port = new URL(url).port;
  for (const [name, allow] of [
    ['mcp-url-listed', `127.0.0.1:${port}`],
    ['mcp-url-unlisted', 'api.example.org'],
  ])
    writeFileSync(
      path.join(dir, 'agents', `${name}.md`),
      `---\nname: ${name}\ndescription: A URL MCP server under a network policy\nnetwork:\n  allow: ["${allow}"]\nmcpServers:\n  remote:\n    url: ${url}\n---\n`,
    );
  writeFileSync(path.join(dir, 'agents', 'with-mcp.md'), definition('with-mcp'));
  writeFileSync(path.join(dir, 'agents', 'mcp-echo-only.md'), definition('mcp-echo-only', 'tools: [read_file, mcp__scripted__echo]'));
  writeFileSync(path.join(dir, 'agents', 'mcp-ask.md'), definition('mcp-ask', 'permissions:\n  mcp__scripted__echo: ask'));
  writeFileSync(path.join(dir, 'agents', 'mcp-broken.md'), definition('mcp-broken', '', 'env: [MCP_SCRIPTED_BROKEN]'));
  process.env.MCP_TEST_VISIBLE = 'visible';
  process.env.MCP_TEST_HIDDEN = 'hidden';
  process.env.MCP_SCRIPTED_BROKEN = '1';
  process.env.MCP_URL_TOKEN = 'url-secret';
  svc = await startService({ dir, env: { BASH_TIMEOUT_MS: '3000' } });
});
afterAll(async () => {
  await svc.close();
  await new Promise<void>((r) => urlServer.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const run = async (type: string, prompt: string, parentTaskId: string, options: object = {}) => {
  const res = await svc.inject({
    method: 'POST',
    url: '/tasks?wait=true',
    payload: taskBody({ subagent_type: type, prompt, context: { parentTaskId, userId: 'u-mcp' }, options }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};
const firstRequest = (key: string) => svc.model.requests.find((r) => JSON.stringify(r.body.messages).includes(key))!;

describe("definitions' MCP servers", () => {
  it('offers the server tools as mcp__<server>__<tool>, runs them in the workspace with only the listed variables', async () => {
    svc.model.script('MCP-USE', [
      {
        toolCalls: [
          { name: 'mcp__scripted__echo', args: { text: 'hello' } },
          { name: 'mcp__scripted__where', args: {} },
          { name: 'mcp__scripted__env_names', args: {} },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'used MCP', paths: ['mcp-was-here.txt'] } }] },
    ]);
    const done = await run('with-mcp', 'MCP-USE', 'T-mcp-use');
    expect(done).toMatchObject({ status: 'completed', summary: 'used MCP' });
    const offered = firstRequest('MCP-USE').body.tools!.map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['mcp__scripted__echo', 'mcp__scripted__where', 'mcp__scripted__slow', 'read_file', 'bash', 'complete']));
    const echo = firstRequest('MCP-USE').body.tools!.find((t) => t.function.name === 'mcp__scripted__echo')! as unknown as {
      function: { parameters: unknown };
    };
    expect(echo.function.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    const [said, where, names] = toolResults(svc, 'MCP-USE');
    expect(said).toContain('echo: hello');
    const ws = path.join(svc.config.workspacesDir, 'T-mcp-use');
    expect(where).toContain(ws);
    expect(readFileSync(path.join(ws, 'mcp-was-here.txt'), 'utf8')).toBe('written by the MCP server\n');
    expect(names).toContain('MCP_TEST_VISIBLE');
    expect(names).not.toContain('MCP_TEST_HIDDEN');
    expect(names).not.toContain('OPENAI_API_KEY');
    const events = await storedEvents(svc, done.id);
    expect(events.filter((e: { type: string }) => e.type === 'tool.call').map((e: { data: { toolName: string } }) => e.data.toolName)).toEqual([
      'mcp__scripted__echo',
      'mcp__scripted__where',
      'mcp__scripted__env_names',
      'complete',
    ]);
  });

  it('GET /agents names the servers, never their command or variables', async () => {
    const listed = (await svc.inject({ url: '/agents' })).json().agents.find((a: { type: string }) => a.type === 'with-mcp');
    expect(listed.mcpServers).toEqual(['scripted']);
    expect(JSON.stringify(listed)).not.toContain('mcp-server.ts');
    expect(JSON.stringify(listed)).not.toContain('MCP_TEST_VISIBLE');
  });

  it('filters them by the definition’s tools and options.tools', async () => {
    svc.model.script('MCP-ONLY', [{ toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [] } }] }]);
    await run('mcp-echo-only', 'MCP-ONLY', 'T-mcp-only');
    expect(
      firstRequest('MCP-ONLY')
        .body.tools!.map((t) => t.function.name)
        .sort(),
    ).toEqual(['complete', 'mcp__scripted__echo', 'read_file']);
    svc.model.script('MCP-NARROW', [{ toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [] } }] }]);
    await run('with-mcp', 'MCP-NARROW', 'T-mcp-only', { tools: ['mcp__scripted__fail', 'grep'] });
    expect(
      firstRequest('MCP-NARROW')
        .body.tools!.map((t) => t.function.name)
        .sort(),
    ).toEqual(['complete', 'grep', 'mcp__scripted__fail']);
  });

  it('a tool error, a crash mid-call and a timeout are tool errors the model reads; a timed-out call is cancelled on the server', async () => {
    svc.model.script('MCP-FAULTS', [
      { toolCalls: [{ name: 'mcp__scripted__fail', args: {} }] },
      { toolCalls: [{ name: 'mcp__scripted__slow', args: {} }] },
      { toolCalls: [{ name: 'mcp__scripted__crash', args: {} }] },
      { toolCalls: [{ name: 'mcp__scripted__echo', args: { text: 'after the crash' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'survived', paths: [] } }] },
    ]);
    const done = await run('with-mcp', 'MCP-FAULTS', 'T-mcp-faults');
    expect(done).toMatchObject({ status: 'completed', summary: 'survived' });
    const [failed, slow, crashed, after] = toolResults(svc, 'MCP-FAULTS');
    expect(failed).toContain('it failed on purpose');
    expect(slow).toMatch(/timed out|timeout/i);
    expect(crashed).toContain('crashing now');
    expect(after).toMatch(/failed|closed|exited/i);
    // The server heard the cancel of the call that ran past BASH_TIMEOUT_MS (3 s here).
    expect(existsSync(path.join(svc.config.workspacesDir, 'T-mcp-faults', 'mcp-cancelled.txt'))).toBe(true);
  });

  it('asks before an MCP tool whose rule is ask', async () => {
    svc.model.script('MCP-ASK', [{ toolCalls: [{ name: 'mcp__scripted__echo', args: { text: 'may I' } }] }]);
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ subagent_type: 'mcp-ask', prompt: 'MCP-ASK', context: { parentTaskId: 'T-mcp-ask', userId: 'u' } }),
    });
    const id = res.json().id;
    let task: { status: string; pause?: { reason: string; pending: Array<{ toolName: string }> } } = { status: 'queued' };
    for (let i = 0; i < 100 && task.status !== 'paused'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      task = (await svc.inject({ url: `/tasks/${id}` })).json();
    }
    expect(task.status).toBe('paused');
    expect(task.pause).toMatchObject({ reason: 'approval', pending: [expect.objectContaining({ toolName: 'mcp__scripted__echo' })] });
    await svc.inject({ method: 'POST', url: `/tasks/${id}/cancel` });
  });

  it('reaches a URL server over Streamable HTTP, with a header made from a variable of the service', async () => {
    svc.model.script('MCP-URL', [
      { toolCalls: [{ name: 'mcp__remote__shout', args: { text: 'quiet' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'shouted', paths: [] } }] },
    ]);
    const done = await run('mcp-url', 'MCP-URL', 'T-mcp-url');
    expect(done).toMatchObject({ status: 'completed', summary: 'shouted' });
    expect(toolResults(svc, 'MCP-URL')[0]).toContain('QUIET');
    expect(seenAuthorization).toContain('Bearer url-secret');
  });

  it("under the definition's network policy, a URL server must be on its list and pass the address guard", async () => {
    svc.model.script('MCP-URL-POLICY', [{ toolCalls: [{ name: 'complete', args: { summary: 'never', paths: [] } }] }]);
    const unlisted = await run('mcp-url-unlisted', 'MCP-URL-POLICY', 'T-mcp-url-policy');
    expect([unlisted.status, unlisted.error.code]).toEqual(['error', 'mcp_server_failed']);
    expect(unlisted.error.message).toContain("is not on the definition's network allow-list (api.example.org)");
    // Listed, but loopback: refused unless EGRESS_ALLOW_PRIVATE, as a command's connection would be.
    const loopback = await run('mcp-url-listed', 'MCP-URL-POLICY', 'T-mcp-url-policy');
    expect([loopback.status, loopback.error.code]).toEqual(['error', 'mcp_server_failed']);
    expect(loopback.error.message).toContain('EGRESS_ALLOW_PRIVATE is off');
    // With the switch (a service of its own), the listed server is reached.
    const openDir = mkdtempSync(path.join(tmpdir(), 'subagentd-mcp-open-'));
    cpSync(path.join(dir, 'agents'), path.join(openDir, 'agents'), { recursive: true });
    const open = await startService({ dir: openDir, env: { EGRESS_ALLOW_PRIVATE: 'true' } });
    try {
      open.model.script('MCP-URL-OPEN', [
        { toolCalls: [{ name: 'mcp__remote__shout', args: { text: 'through the policy' } }] },
        { toolCalls: [{ name: 'complete', args: { summary: 'shouted', paths: [] } }] },
      ]);
      const res = await open.inject({
        method: 'POST',
        url: '/tasks?wait=true',
        payload: taskBody({ subagent_type: 'mcp-url-listed', prompt: 'MCP-URL-OPEN', context: { parentTaskId: 'T-mcp-url-open', userId: 'u-mcp' } }),
      });
      const done = JSON.parse(res.body.trim());
      expect(done, JSON.stringify(done.error)).toMatchObject({ status: 'completed', summary: 'shouted' });
      const said = open.model.requests
        .at(-1)!
        .body.messages.filter((m) => m.role === 'tool')
        .map((m) => String(m.content));
      expect(said[0]).toContain('THROUGH THE POLICY');
    } finally {
      await open.close();
      rmSync(openDir, { recursive: true, force: true });
    }
  });

  it('a server that does not start ends the task error/mcp_server_failed with its stderr', async () => {
    svc.model.script('MCP-BROKEN', [{ toolCalls: [{ name: 'complete', args: { summary: 'never', paths: [] } }] }]);
    const done = await run('mcp-broken', 'MCP-BROKEN', 'T-mcp-broken');
    expect(done.status).toBe('error');
    expect(done.error.code).toBe('mcp_server_failed');
    expect(done.error.message).toContain('broken on purpose');
  });
});
