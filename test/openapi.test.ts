import { readFileSync } from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components, paths } from '../packages/client/src/api-types';
import { API_TYPES_FILE, OPENAPI_FILE, apiTypesOf } from '../scripts/openapi-files';
import { startService, type TestService } from './support/harness';

let svc: TestService;
let doc: any;
beforeAll(async () => {
  svc = await startService({ env: { API_KEYS: 'key-a:tenant-a' } });
  // No key: the document is public.
  doc = await (await fetch(`${svc.url}/docs/json`)).json();
});
afterAll(() => svc.close());

describe('the OpenAPI document', () => {
  it('is public, and what docs/openapi.json and the generated client types say (npm run openapi)', async () => {
    expect(JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'))).toEqual(doc);
    expect(readFileSync(API_TYPES_FILE, 'utf8')).toBe(await apiTypesOf(doc));
  });

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    // Two rules cannot hold for every route: a WebSocket route answers 101, not 2xx, and /healthz
    // has no input and no key to get wrong (no 4xx); the next test checks them for the others.
    // StreamMessage is used by the WebSocket routes' x-websocket, which Redocly does not read.
    const config = await createConfig({
      extends: ['recommended'],
      rules: { 'operation-2xx-response': 'off', 'operation-4xx-response': 'off', 'no-unused-components': 'off' },
    });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('names every operation and schema, and declares each status a route answers', () => {
    const operations = Object.values(doc.paths).flatMap((item: any) => Object.values(item)) as any[];
    expect(new Set(operations.map((o) => o.operationId)).size).toBe(operations.length);
    expect(operations.every((o) => !o.responses.default && !JSON.stringify(o.responses).includes('Default Response'))).toBe(true);
    for (const o of operations) {
      const statuses = Object.keys(o.responses);
      expect(statuses.some((s) => /^2/.test(s)) || (o['x-websocket'] && statuses.includes('101'))).toBe(true);
      // Public routes (health, the agent card) take no input that could be wrong.
      if (!(Array.isArray(o.security) && o.security.length === 0))
        expect(
          statuses.some((s) => /^4/.test(s)),
          o.operationId,
        ).toBe(true);
    }
    expect(doc.paths['/tasks'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateTaskBody' });
    expect(doc.paths['/tasks/{id}'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Task' });
    expect(Object.keys(doc.paths['/tasks'].post.responses)).toEqual(['200', '202', '400', '401', '409', '413', '415', '429', '500', '503', '507']);
    expect(Object.keys(doc.paths['/tasks/{id}'].get.responses)).not.toContain('409');
    // The wildcard has a name a client can use.
    expect(doc.paths['/workspaces/{parentTaskId}/files/{path}'].get.parameters.map((p: any) => p.name)).toEqual(['parentTaskId', 'path']);
  });

  it("is the service's, at its version, in areas; uploads are bytes; event streams are text/event-stream", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(doc.info).toMatchObject({ title: 'subagentd', version: pkg.version });
    expect(JSON.parse(readFileSync('packages/client/package.json', 'utf8')).version).toBe(pkg.version);
    const operations = Object.entries(doc.paths).flatMap(([url, item]: [string, any]) => Object.values(item).map((o: any) => ({ url, ...o })));
    expect(operations.filter((o) => o.tags?.length !== 1 || o.tags[0] === 'default')).toEqual([]);
    expect(new Set(operations.map((o) => o.tags[0]))).toEqual(new Set(doc.tags.map((t: any) => t.name)));
    const tagOf = (url: string, method = 'get') => doc.paths[url][method].tags[0];
    expect([tagOf('/tasks', 'post'), tagOf('/tasks/{id}/stream'), tagOf('/tasks/{id}/events'), tagOf('/events'), tagOf('/usage'), tagOf('/healthz')]).toEqual([
      'tasks',
      'streams',
      'streams',
      'streams',
      'usage',
      'operations',
    ]);
    // A generator sends the file as it is, not JSON-encoded.
    expect(doc.paths['/workspaces/{parentTaskId}/files/{path}'].put.requestBody).toMatchObject({
      required: true,
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    });
    for (const route of ['/tasks/{id}/events', '/events']) {
      expect(Object.keys(doc.paths[route].get.responses['200'].content)).toEqual(['text/event-stream']);
      expect(doc.paths[route].get.parameters.map((p: any) => `${p.in}:${p.name}`)).toContain('header:last-event-id');
    }
  });

  it('applies the bearer scheme everywhere but /healthz', () => {
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/tasks'].post.security).toBeUndefined();
  });

  it('describes the WebSocket routes and every message they carry', () => {
    for (const route of ['/tasks/{id}/stream', '/stream']) {
      const op = doc.paths[route].get;
      expect(op.responses['101']).toBeDefined();
      expect(op.responses['426']).toBeDefined();
      // Never a plain 200: a GET without the upgrade gets 426.
      expect(op.responses['200']).toBeUndefined();
      expect(op['x-websocket'].message).toEqual({ $ref: '#/components/schemas/StreamMessage' });
    }
    const resolve = (s: any) => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
    const kinds = doc.components.schemas.StreamMessage.oneOf.map((s: any) => resolve(s).properties.type.const);
    expect(kinds).toEqual([
      'task.started',
      'step.started',
      'text.delta',
      'tool.call',
      'tool.result',
      'step.finished',
      'tool.replayed',
      'replay.diverged',
      'plan',
      'message.received',
      'context.compacted',
      'task.resumed',
      'task.paused',
      'model.fallback',
      'approval.requested',
      'approval.answered',
      'tool.requested',
      'tool.answered',
      'network.request',
      'hook.ran',
      'outcome.evaluated',
      'candidate.started',
      'candidate.finished',
      'candidate.selected',
      'task.finished',
      'heartbeat',
    ]);
  });
});

describe('a client generated from it (openapi-typescript + openapi-fetch)', () => {
  it('runs a task, reads it back and lists it, typed end to end with no cast', async () => {
    svc.model.script('TYPED-CLIENT', [{ toolCalls: [{ name: 'complete', args: { summary: 'typed', paths: [] } }], usage: { input: 5, output: 3 } }]);
    const client = createClient<paths>({ baseUrl: svc.url, headers: { authorization: 'Bearer key-a' } });
    const body: components['schemas']['CreateTaskBody'] = {
      subagent_type: 'general',
      description: 'typed client',
      prompt: 'TYPED-CLIENT',
      context: { parentTaskId: 'T-typed', userId: 'u-typed' },
    };
    const created = await client.POST('/tasks', { params: { query: { wait: 'true' } }, body });
    expect(created.response.status).toBe(200);
    if (!created.data || !('summary' in created.data)) throw new Error(`no task: ${JSON.stringify(created.error)}`);
    const task: components['schemas']['Task'] = created.data;
    expect(task).toMatchObject({ status: 'completed', summary: 'typed', usage: { inputTokens: 5, outputTokens: 3 } });

    const read = await client.GET('/tasks/{id}', { params: { path: { id: task.id } } });
    expect(read.data?.summary).toBe('typed');
    const list = await client.GET('/tasks', { params: { query: { parentTaskId: 'T-typed' } } });
    expect(list.data?.tasks.map((t) => t.id)).toEqual([task.id]);

    // An upload round-trips byte for byte: quotes, a NUL and bytes that are not UTF-8.
    const bytes = new Uint8Array([0x22, 0x7b, 0x00, 0xff, 0xfe, 0x0a, 0x22]);
    const put = await client.PUT('/workspaces/{parentTaskId}/files/{path}', {
      params: { path: { parentTaskId: 'T-typed', path: 'input.bin' } },
      body: bytes as unknown as string,
      bodySerializer: (b) => b as unknown as Uint8Array,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.response.status).toBe(201);
    expect(put.data?.size).toBe(bytes.length);
    const got = await client.GET('/workspaces/{parentTaskId}/files/{path}', {
      params: { path: { parentTaskId: 'T-typed', path: 'input.bin' } },
      parseAs: 'arrayBuffer',
    });
    expect(new Uint8Array(got.data as ArrayBuffer)).toEqual(bytes);

    const missing = await client.GET('/tasks/{id}', { params: { path: { id: 'tsk_00000000000000000000000000' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('not_found');
  });
});
