import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';

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
    const results = svc.model.requests
      .filter((r) => JSON.stringify(r.body.messages).includes(key))
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    return { task, results };
  }

  it('reaches an allowed host through the proxy (HTTP_PROXY set), is refused another with a 403 naming the list, and reports both', async () => {
    const { task, results } = await runCommands('net', 'NET-ALLOW', [
      curl(`http://127.0.0.2:${port}/`),
      curl(`http://127.0.0.3:${port}/`),
      'echo "proxy=$HTTPS_PROXY"',
    ]);
    expect(results[0]).toContain('hello from the allowed host');
    expect(results[0]).toContain('[200]');
    expect(results[1]).toContain('[403]');
    expect(results[1]).toContain('not on the task');
    expect(results[2]).toContain('proxy=http://127.0.0.1:');
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
});
