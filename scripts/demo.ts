/**
 * `npm run demo`: the whole flow with no key and no network. Starts the service on ./data with the
 * project's scripted OpenAI-compatible model server, then acts as an orchestrator backend would:
 * submits a task, follows its progress stream, prints the TaskOutput, downloads the artifact and
 * shows the bill from /usage.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import WebSocket from 'ws';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';
import { closeDatabase, openDatabase } from '../src/store/database';
import { scriptDemo } from '../scripted-model/demo-script';
import { startScriptedModel } from '../scripted-model/server';

const dim = (s: string) => `\x1b[2m${s}\x1b[0m`;
const bold = (s: string) => `\x1b[1m${s}\x1b[0m`;
const short = (v: unknown, n = 110) => {
  const s = (typeof v === 'string' ? v : JSON.stringify(v)).replace(/\n/g, '⏎');
  return s.length > n ? `${s.slice(0, n)}…` : s;
};

async function main() {
  const model = await startScriptedModel();
  scriptDemo(model);

  const config = loadConfig({
    ...process.env,
    PORT: '0',
    DATABASE_PATH: process.env.DATABASE_PATH ?? './data/demo.db',
    WORKSPACES_DIR: process.env.WORKSPACES_DIR ?? './data/workspaces',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'demo-key',
    API_KEYS: '',
    HEARTBEAT_MS: '250',
    LOG_LEVEL: 'warn',
  });
  const db = await openDatabase(config.databaseUrl ?? config.databasePath);
  const app = await createApp({ config, db, logger: pino({ level: 'error' }) });
  await app.server.listen({ port: 0, host: '127.0.0.1' });
  await app.recover();
  const base = `http://127.0.0.1:${(app.server.server.address() as { port: number }).port}`;
  console.log(bold(`subagentd listening on ${base}`), dim(`(scripted model at ${model.url})`));

  // The parent task's workspace already holds the orchestrator's files.
  const parentTaskId = `demo-${Date.now()}`;
  const ws = path.join(config.workspacesDir, parentTaskId);
  mkdirSync(path.join(ws, 'logs'), { recursive: true });
  const kinds = ['ECONNRESET: upstream closed', 'ETIMEDOUT: db query', 'ECONNRESET: upstream closed', 'EACCES: /var/cache'];
  const log = Array.from({ length: 40 }, (_, i) =>
    i % 5 === 0
      ? `2026-11-29T10:${String(i).padStart(2, '0')}:00Z ERROR ${kinds[(i / 5) % kinds.length]}`
      : `2026-11-29T10:${String(i).padStart(2, '0')}:00Z INFO request ok`,
  ).join('\n');
  writeFileSync(path.join(ws, 'logs/app.log'), `${log}\n`);

  const body = {
    subagent_type: 'general',
    description: 'Summarise error logs',
    prompt: 'Read logs/app.log in the workspace, count the error logs by kind, and write reports/errors.md.',
    context: { parentTaskId, userId: 'u-42', toolCallId: 'call_demo_1', timezone: 'Europe/Berlin' },
  };
  console.log(`\n${bold('POST /tasks')} ${dim(short(body, 160))}`);
  const accepted = (await (
    await fetch(`${base}/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  ).json()) as { id: string; streamUrl: string };
  console.log(`→ 202 ${JSON.stringify(accepted)}\n`);

  console.log(bold(`WebSocket ${accepted.streamUrl}`));
  await new Promise<void>((resolve, reject) => {
    const socket = new WebSocket(`${base.replace('http', 'ws')}${accepted.streamUrl}`);
    socket.on('message', (raw) => {
      const e = JSON.parse((raw as Buffer).toString());
      const seq = e.seq === undefined ? '   ' : String(e.seq).padStart(3);
      const d = e.data;
      const detail = (): string => {
        switch (e.type) {
          case 'task.started':
            return `${d.subagent_type} on ${d.model} in ${d.workspace}`;
          case 'step.started':
            return `step ${d.step}`;
          case 'text.delta':
            return JSON.stringify(d.text);
          case 'tool.call':
            return `${d.toolName} ${short(d.input, 90)}`;
          case 'tool.result':
            return `${d.toolName}${d.isError ? ' ERROR' : ''} ${short(d.output, 90)}`;
          case 'step.finished':
            return `step ${d.step} ${d.finishReason}, ${d.usage.totalTokens} tokens`;
          case 'task.finished':
            return `${d.status} (${d.stopReason}) after ${d.steps} steps`;
          case 'heartbeat':
            return dim(`still working (last seq ${d.lastSeq})`);
          default:
            return '';
        }
      };
      console.log(`  ${seq} ${e.type.padEnd(14)} ${detail()}`);
    });
    socket.on('close', (code) => (console.log(dim(`  socket closed with ${code}`)), resolve()));
    socket.on('error', reject);
  });

  const output = (await (await fetch(`${base}/tasks/${accepted.id}`)).json()) as { status: string; artifacts: Array<{ url: string }> };
  console.log(`\n${bold(`GET /tasks/${accepted.id}`)}\n${JSON.stringify(output, null, 2)}`);

  const file = await fetch(`${base}${output.artifacts[0].url}`);
  console.log(`\n${bold(`GET ${output.artifacts[0].url}`)} → ${file.status}\n${dim(await file.text())}`);

  const usage = await (await fetch(`${base}/usage?userId=u-42&groupBy=subagentType`)).json();
  console.log(`${bold('GET /usage?userId=u-42&groupBy=subagentType')} ${dim('(all demo runs in ./data)')}\n${JSON.stringify(usage, null, 2)}`);

  await app.server.close();
  await closeDatabase(db);
  await model.close();
  if (output.status !== 'completed') process.exit(1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
