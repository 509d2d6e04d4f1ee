import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opencodeBin, opencodeEnv, opencodeMissing } from './support/opencode';
import { startService, type TestService } from './support/harness';

/**
 * A real MCP host nobody here wrote: `opencode run` (npm `opencode-ai`), its model the scripted one,
 * with subagentd's `/mcp` configured as a remote MCP server in one line of its config. Its model
 * calls our `task` tool; the subagent runs here and writes the file; opencode reads the result.
 * OPENCODE_BIN names its binary (.ci/run installs it).
 */
const bin = opencodeBin;
const missing = opencodeMissing;
if (missing) console.warn(`[mcp-opencode test] skipped: ${missing}; .ci/run sets it.`);

let svc: TestService;
let home: string;

describe.skipIf(missing !== null)('opencode as an MCP host of subagentd', () => {
  beforeAll(async () => {
    svc = await startService({ env: { API_KEYS: 'oc-key:oc-tenant' } });
    home = mkdtempSync(path.join(tmpdir(), 'subagentd-oc-mcp-'));
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("delegates a task through /mcp: the subagent's file in the workspace, its summary in opencode's answer", async () => {
    // opencode's own model: call subagentd's task tool, then say what came back.
    svc.model.script('OC-MCP-DELEGATE', (ctx) =>
      ctx.turn === 0
        ? {
            toolCalls: [
              { name: 'subagentd_task', args: { subagent_type: 'general', description: 'Write the note', prompt: 'SUB-VIA-MCP: write notes/via-mcp.md' } },
            ],
          }
        : { text: `delegated: ${ctx.toolResults.map((r) => r.content).join(' ')}` },
    );
    // The subagent's model, here.
    svc.model.script('SUB-VIA-MCP', [
      { toolCalls: [{ name: 'write_file', args: { path: 'notes/via-mcp.md', content: '# Via MCP\n' } }] },
      { toolCalls: [{ name: 'complete', args: { summary: 'wrote notes/via-mcp.md for opencode', paths: ['notes/via-mcp.md'] } }] },
    ]);
    // The one entry an MCP host needs.
    const mcp = {
      subagentd: {
        type: 'remote',
        url: `${svc.url}/mcp`,
        headers: { Authorization: 'Bearer oc-key', 'X-Parent-Task-Id': 'T-oc-mcp', 'X-User-Id': 'u-oc' },
      },
    };
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(bin!, ['run', '--title', 'delegate', '--format', 'json', 'OC-MCP-DELEGATE: have a subagent write the note'], {
        cwd: home,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...opencodeEnv(svc.model.url, { mcp }) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    expect(out.code, `${out.stdout}\n${out.stderr}`.slice(-4000)).toBe(0);
    expect(out.stdout).toContain('delegated:');
    expect(out.stdout).toContain('wrote notes/via-mcp.md for opencode');
    // The subagent ran here, for the tenant of the key, in the workspace the header named.
    expect(readFileSync(path.join(svc.config.workspacesDir, '@oc-tenant', 'T-oc-mcp', 'notes/via-mcp.md'), 'utf8')).toBe('# Via MCP\n');
    const tasks = (await svc.inject({ url: '/tasks?parentTaskId=T-oc-mcp', headers: { authorization: 'Bearer oc-key' } })).json().tasks;
    expect(tasks).toEqual([expect.objectContaining({ status: 'completed', context: expect.objectContaining({ userId: 'u-oc' }) })]);
  }, 150_000);
});
