import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, toolResults, taskEnd, type TestService } from './support/harness';
import { until } from './support/until';

/**
 * Network for commands: a definition's `network: { allow }` lets its commands reach those hosts
 * through the service's egress proxy, and nothing else; the default reaches nothing. Only loopback
 * servers here (EGRESS_ALLOW_PRIVATE=true), and curl as the command. Needs bubblewrap (the network
 * namespace is what makes the proxy the only way out).
 */
const bwrap = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', 'true']).status === 0;
let svc: TestService;
let dir: string;
let origin: Server;
let port: number;

describe.skipIf(!bwrap)('network for commands (bwrap)', () => {
  beforeAll(async () => {
    origin = createServer((_req, res) => res.end('hello from the allowed host\n'));
    // 127.0.0.2: loopback, but not the sandbox's own 127.0.0.1, which NO_PROXY keeps off the proxy.
    await new Promise<void>((r) => origin.listen(0, '127.0.0.2', r));
    port = (origin.address() as AddressInfo).port;
    dir = mkdtempSync(path.join(tmpdir(), 'subagentd-net-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(
      path.join(dir, 'agents', 'net.md'),
      `---\nname: net\ndescription: Reaches one host\nnetwork:\n  allow: ["127.0.0.2:${port}", "*.example.org"]\n---\n`,
    );
    // The scripted MCP server, bundled into one file the sandbox can see (the repository is hidden
    // from it): the parent task's workspace.
    const server = path.join(dir, 'workspaces', 'T-NET-MCP', '.tools', 'mcp-server.mjs');
    await build({
      entryPoints: [path.resolve(import.meta.dirname, '../scripted-model/mcp-server.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: server,
      logLevel: 'silent',
    });
    writeFileSync(
      path.join(dir, 'agents', 'net-mcp.md'),
      `---\nname: net-mcp\ndescription: An MCP server that reaches one host\nnetwork:\n  allow: ["127.0.0.2:${port}"]\nmcpServers:\n  scripted:\n    command: ${process.execPath}\n    args: ["${server}"]\n---\n`,
    );
    writeFileSync(path.join(dir, 'agents', 'net-ask.md'), `---\nname: net-ask\ndescription: Asks for hosts\nnetwork:\n  allow: []\n  ask: true\n---\n`);
    svc = await startService({ dir, env: { BASH_SANDBOX: 'bwrap', EGRESS_ALLOW_PRIVATE: 'true' } });
  });
  afterAll(async () => {
    await svc?.close();
    await new Promise<void>((r) => origin.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  const curl = (url: string) => `curl -sS -m 5 -o - -w ' [%{http_code}]' ${url} 2>&1; echo " exit=$?"`;
  async function runCommands(type: string, key: string, commands: string[], options: object = {}) {
    svc.model.script(key, [
      { toolCalls: commands.map((command) => ({ name: 'bash', args: { command } })) },
      { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] },
    ]);
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ subagent_type: type, prompt: key, context: { parentTaskId: `T-${key}`, userId: 'u' }, options }),
    });
    const task = JSON.parse(res.body.trim());
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    const results = toolResults(svc, key);
    return { task, results };
  }

  it('reaches an allowed host through the proxy (HTTP_PROXY set), is refused another with a 403 naming the list, and reports both', async () => {
    const { task, results } = await runCommands('net', 'NET-ALLOW', [
      curl(`http://127.0.0.2:${port}/`),
      curl(`http://127.0.0.3:${port}/`),
      'echo "proxy=$HTTPS_PROXY"',
      // The proxy's folder is there to connect to, not to write in (it is the host's).
      'echo x > /tmp/.subagentd-egress/fill 2>/dev/null && echo WROTE || echo "no write"',
    ]);
    expect(results[0]).toContain('hello from the allowed host');
    expect(results[0]).toContain('[200]');
    expect(results[1]).toContain('[403]');
    expect(results[1]).toContain('not on the task');
    expect(results[2]).toContain('proxy=http://127.0.0.1:');
    expect(results[3]).toContain('no write');
    // The step's commands run at once: their connections end in either order.
    const events = (await storedEvents(svc, task.id))
      .filter((e: { type: string }) => e.type === 'network.request')
      .map((e: { data: { host: string; bytesIn: number } }) => e.data)
      .sort((a: { host: string }, b: { host: string }) => a.host.localeCompare(b.host));
    expect(events).toEqual([
      expect.objectContaining({ host: '127.0.0.2', port, allowed: true }),
      expect.objectContaining({ host: '127.0.0.3', port, allowed: false }),
    ]);
    expect(events[0].bytesIn).toBeGreaterThan(0);
  });

  it('without a network policy a command reaches nothing, not even through the proxy variables', async () => {
    const { results } = await runCommands('general', 'NET-NONE', [curl(`http://127.0.0.2:${port}/`), 'echo "proxy=${HTTP_PROXY:-none}"']);
    expect(results[0]).not.toContain('hello from the allowed host');
    expect(results[0]).toMatch(/exit=[1-9]/);
    expect(results[1]).toContain('proxy=none');
  });

  it("a task's options.network only narrows: the definition's host is refused when the task's list leaves it out", async () => {
    const { results } = await runCommands('net', 'NET-NARROW', [curl(`http://127.0.0.2:${port}/`)], { network: { allow: ['api.example.org'] } });
    expect(results[0]).toContain('[403]');
    const widen = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ subagent_type: 'general', options: { network: { allow: ['127.0.0.2'] } } }),
    });
    expect([widen.statusCode, widen.json().error.details[0].field]).toEqual([400, 'body.options.network']);
  });

  it('with ask: true, a host off the list is an approval request; allowed, it joins the list, denied, the command gets a 403', async () => {
    const key = 'NET-ASK';
    // One command per step: a second connection to an allowed host is not asked again.
    svc.model.script(key, [
      { toolCalls: [{ name: 'bash', args: { command: `${curl(`http://127.0.0.2:${port}/`)}; ${curl(`http://127.0.0.2:${port}/`)}` } }] },
      { toolCalls: [{ name: 'bash', args: { command: curl(`http://127.0.0.3:${port}/`) } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] },
    ]);
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks',
      payload: taskBody({ subagent_type: 'net-ask', prompt: key, context: { parentTaskId: `T-${key}`, userId: 'u' } }),
    });
    const id = res.json().id as string;
    const pending = async () => {
      let request: { requestId: string; toolName: string; input: unknown } | undefined;
      await until(async () => {
        const task = (await svc.inject({ url: `/tasks/${id}` })).json();
        request = task.progress?.pending?.[0];
        return task.status === 'running' && request !== undefined;
      });
      return request!;
    };
    const first = await pending();
    expect(first).toMatchObject({ kind: 'approval', toolName: 'network', input: { host: '127.0.0.2', port } });
    const allowed = await svc.inject({ method: 'POST', url: `/tasks/${id}/approvals/${first.requestId}`, payload: { decision: 'allow' } });
    expect(allowed.statusCode, allowed.body).toBe(200);
    const second = await pending();
    expect(second.input).toEqual({ host: '127.0.0.3', port });
    await svc.inject({ method: 'POST', url: `/tasks/${id}/approvals/${second.requestId}`, payload: { decision: 'deny' } });
    const task = await taskEnd(svc, id);
    expect(task.status).toBe('completed');
    const results = toolResults(svc, key);
    expect(results[0].match(/hello from the allowed host/g)).toHaveLength(2);
    expect(results[1]).toContain('[403]');
    expect(results[1]).toContain('the caller denied it');
    const events = (await storedEvents(svc, id)).filter((e) => e.type.startsWith('approval.') || e.type === 'network.request');
    expect(events.map((e) => [e.type, (e.data as { host?: string; allowed?: boolean }).host ?? (e.data as { decision?: string }).decision])).toEqual([
      ['approval.requested', undefined],
      ['approval.answered', 'allow'],
      ['network.request', '127.0.0.2'],
      ['network.request', '127.0.0.2'],
      ['approval.requested', undefined],
      ['approval.answered', 'deny'],
      ['network.request', '127.0.0.3'],
    ]);
  });

  it("an MCP command server reaches the definition's hosts through the task's proxy, and no other", async () => {
    const key = 'NET-MCP';
    svc.model.script(key, [
      {
        toolCalls: [
          { name: 'mcp__scripted__fetch_url', args: { url: `http://127.0.0.2:${port}/` } },
          { name: 'mcp__scripted__fetch_url', args: { url: `http://127.0.0.3:${port}/` } },
        ],
      },
      { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }] },
    ]);
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ subagent_type: 'net-mcp', prompt: key, context: { parentTaskId: `T-${key}`, userId: 'u' } }),
    });
    const task = JSON.parse(res.body.trim());
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    const results = toolResults(svc, key);
    expect(results[0]).toContain('200 hello from the allowed host');
    expect(results[1]).toContain('403');
    expect(results[1]).toContain('not on the task');
    const hosts = (await storedEvents(svc, task.id)).filter((e) => e.type === 'network.request').map((e) => (e.data as { host: string }).host);
    expect(hosts.sort()).toEqual(['127.0.0.2', '127.0.0.3']);
  });

  it('a question whose command gave up is taken back: the task goes on, nothing left pending', async () => {
    const key = 'NET-ASK-GIVE-UP';
    svc.model.script(key, [
      { toolCalls: [{ name: 'bash', args: { command: `curl -sS -m 1 -o /dev/null http://127.0.0.3:${port}/ 2>&1; echo " exit=$?"` } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'gave up', paths: [] } }] },
    ]);
    const res = await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ subagent_type: 'net-ask', prompt: key, context: { parentTaskId: `T-${key}`, userId: 'u' } }),
    });
    const task = JSON.parse(res.body.trim());
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    expect(toolResults(svc, key)[0]).toMatch(/exit=[1-9]/);
    const types = (await storedEvents(svc, task.id)).map((e) => e.type);
    expect(types).toContain('approval.requested');
    expect(types).not.toContain('approval.answered');
    const requestId = (await storedEvents(svc, task.id)).find((e) => e.type === 'approval.requested')!.data.requestId as string;
    // Taken back: an answer now finds no such request.
    const late = await svc.inject({ method: 'POST', url: `/tasks/${task.id}/approvals/${requestId}`, payload: { decision: 'allow' } });
    expect(late.statusCode).toBe(404);
  });
});
