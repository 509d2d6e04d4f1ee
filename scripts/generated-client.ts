/**
 * `.ci/generated-client`: a client generated from docs/openapi.json by a third-party generator
 * (@hey-api/openapi-ts, which needs Node 22.18+) talks to the real service: it uploads bytes that
 * JSON would mangle, reads them back identical, and runs a task to its end. Usage:
 * `tsx scripts/generated-client.ts <folder the generator wrote>`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { startScriptedModel } from '../scripted-model/server.ts';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { closeDatabase, openDatabase } from '../src/store/database.ts';

const generated = path.resolve(process.argv[2] ?? '');
const sdk = await import(pathToFileURL(path.join(generated, 'sdk.gen.ts')).href);
const { client } = await import(pathToFileURL(path.join(generated, 'client.gen.ts')).href);

const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-generated-'));
const model = await startScriptedModel();
model.script('GENERATED-CLIENT', [{ toolCalls: [{ name: 'complete', args: { summary: 'read it', paths: ['inputs.bin'] } }], usage: { input: 7, output: 2 } }]);
const config = loadConfig({
  DATABASE_PATH: path.join(dir, 'db.sqlite'),
  WORKSPACES_DIR: path.join(dir, 'ws'),
  AGENTS_DIR: path.join(dir, 'agents'),
  OPENAI_BASE_URL: model.url,
  OPENAI_API_KEY: 'sk-generated-client',
  API_KEYS: 'key-generated-0123456789:gen',
  BASH_SANDBOX: 'none',
});
const db = await openDatabase(config.databasePath);
const app = await createApp({ config, db, logger: pino({ level: 'silent' }) });
await app.server.listen({ port: 0, host: '127.0.0.1' });
await app.recover();
const { port } = app.server.server.address() as { port: number };
client.setConfig({ baseUrl: `http://127.0.0.1:${port}`, auth: () => 'key-generated-0123456789' });

function check(ok: boolean, what: string, detail?: unknown) {
  if (!ok) throw new Error(`generated client: ${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  console.log(`ok  ${what}`);
}

try {
  // Quotes, braces, a NUL and bytes that are not UTF-8: a JSON-encoded upload changes every one.
  const bytes = new Uint8Array([0x22, 0x7b, 0x00, 0xff, 0xfe, 0x0a, 0x7d, 0x22]);
  const put = await sdk.putWorkspaceFile({ path: { parentTaskId: 'T-gen', path: 'inputs.bin' }, body: new Blob([bytes]) });
  check(put.response.status === 201 && put.data?.size === bytes.length, 'upload: 201 with the size of the bytes sent', put.data ?? put.error);
  const got = await sdk.getWorkspaceFile({ path: { parentTaskId: 'T-gen', path: 'inputs.bin' }, parseAs: 'arrayBuffer' });
  check(Buffer.from(got.data as ArrayBuffer).equals(Buffer.from(bytes)), 'download: the same bytes');
  const task = await sdk.createTask({
    query: { wait: 'true' },
    body: { subagent_type: 'general', description: 'Generated client', prompt: 'GENERATED-CLIENT', context: { parentTaskId: 'T-gen', userId: 'u-gen' } },
  });
  check(task.response.status === 200 && task.data?.status === 'completed', 'a task created with ?wait=true ends completed', task.data ?? task.error);
  check(task.data.artifacts[0]?.relativePath === 'inputs.bin' && task.data.artifacts[0]?.size === bytes.length, 'its artifact is the uploaded file');
  const read = await sdk.getTask({ path: { id: task.data.id } });
  check(read.data?.usage?.inputTokens === 7, 'read back, with its usage', read.data?.usage);
  const refused = await sdk.getTask({ path: { id: task.data.id }, auth: () => 'a-wrong-key-000000' });
  check(refused.response.status === 401 && refused.error?.error?.code === 'unauthorized', 'a wrong key: 401 in the contract error shape', refused.error);
} finally {
  await app.server.close();
  await closeDatabase(db);
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
