/** `npm run bench hooks`: what a definition's hook costs a tool call. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { now, pct, startBenchService } from './support.ts';

/** Tool calls per task (then `complete`): the per-call figure is the task's difference over these. */
const CALLS = 10;

/**
 * What is compared: no hook; a PreToolUse command that reads its event and says nothing; a URL
 * that answers 204; commands before and after each call; and, as a yardstick, no hook but each
 * call a `bash` call (`true`) instead of list_files: what a command costs a call anyway.
 */
const KINDS = ['none', 'command', 'url', 'command+post', 'bash'] as const;
type Kind = (typeof KINDS)[number];

function writeAgents(dir: string, url: string) {
  mkdirSync(path.join(dir, 'agents'), { recursive: true });
  const agent = (name: string, hooks: string) =>
    writeFileSync(path.join(dir, 'agents', `${name}.md`), `---\nname: ${name}\ndescription: hook bench\n${hooks}---\nWork.\n`);
  agent('hooks-none', '');
  agent('hooks-command', 'hooks:\n  PreToolUse:\n    - matcher: "*"\n      command: cat > /dev/null\n');
  agent('hooks-url', `hooks:\n  PreToolUse:\n    - matcher: "*"\n      url: ${url}\n`);
  agent(
    'hooks-command-post',
    'hooks:\n  PreToolUse:\n    - matcher: "*"\n      command: cat > /dev/null\n  PostToolUse:\n    - matcher: "*"\n      command: cat > /dev/null\n',
  );
}

/**
 * Sequential tasks of `CALLS` list_files calls and a `complete` (?wait=true, one at a time), for a
 * definition without hooks and with one PreToolUse hook on every call (a command in the sandbox
 * `sandbox` names, a URL on loopback; and a command before and after each call), interleaved so the
 * machine's drift falls on all alike. What a hook costs a call is the p50 difference over `CALLS`.
 */
export async function benchHooks(sandbox: 'bwrap' | 'none', tasks = 30) {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-bench-hooks-'));
  writeAgents(dir, url);
  const svc = await startBenchService(
    { BASH_SANDBOX: sandbox === 'bwrap' ? 'bwrap' : 'none', HOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`, WEBHOOK_ALLOW_PRIVATE: 'true' },
    { dir },
  );
  const times: Record<Kind, number[]> = { none: [], command: [], url: [], 'command+post': [], bash: [] };
  const typeOf = (kind: Kind) => (kind === 'bash' ? 'hooks-none' : `hooks-${kind.replace('+', '-')}`);
  try {
    for (let i = -2; i < tasks; i++) {
      for (const kind of KINDS) {
        const marker = `HOOK-BENCH-${kind}-${i}`;
        svc.model.script(marker, [
          ...Array.from({ length: CALLS }, () => ({
            toolCalls: [kind === 'bash' ? { name: 'bash', args: { command: 'true' } } : { name: 'list_files', args: {} }],
            usage: { input: 100, output: 10 },
          })),
          { toolCalls: [{ name: 'complete', args: { summary: 'done', paths: [] } }], usage: { input: 100, output: 10 } },
        ]);
        const t = now();
        const res = await fetch(`${svc.url}/tasks?wait=true`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            subagent_type: typeOf(kind),
            description: 'hook bench',
            prompt: marker,
            context: { parentTaskId: `P-${typeOf(kind)}`, userId: 'u' },
          }),
        });
        const done = (await res.json()) as { status?: string };
        if (done.status !== 'completed') throw new Error(`a ${kind} task ended ${JSON.stringify(done).slice(0, 300)}`);
        // The first rounds warm the service up.
        if (i >= 0) times[kind].push(now() - t);
      }
    }
  } finally {
    await svc.close();
    await new Promise<void>((r) => receiver.close(() => r()));
  }
  const base = pct(times.none, 50);
  return {
    sandbox,
    tasks,
    calls: CALLS,
    rows: KINDS.map((kind) => ({
      kind,
      p50: pct(times[kind], 50),
      p99: pct(times[kind], 99),
      perCall: kind === 'none' ? 0 : (pct(times[kind], 50) - base) / CALLS,
    })),
  };
}
