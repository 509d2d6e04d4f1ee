import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../packages/client/src/api-types';
import { startService, type TestService } from './support/harness';

/**
 * A client generated the way many TypeScript users make one: openapi-typescript's types for the
 * service's document (packages/client/src/api-types.ts is that output, kept current by the drift
 * test) under openapi-fetch. openapi-fetch JSON-encodes every body unless told otherwise, so an
 * upload needs the README's `bodySerializer`; with it, the file holds exactly what was sent
 * (test/readme-examples.test.ts runs the README's own lines).
 */
let svc: TestService;
let api: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  svc = await startService();
  api = createClient<paths>({ baseUrl: svc.url });
});
afterAll(() => svc.close());

/** Text that JSON would change: quotes, a backslash, a newline, a character beyond ASCII. */
const text = '"quoted", a \\ backslash,\nand é\n';
const file = (where: string) => ({ params: { path: { parentTaskId: 'T-fetch', path: where } } });
const stored = async (where: string) => Buffer.from(await (await fetch(`${svc.url}/workspaces/T-fetch/files/${where}`)).arrayBuffer());

describe('an openapi-fetch client on the generated types', () => {
  it("uploads a string with the README's bodySerializer and reads back exactly those bytes", async () => {
    const { data, response } = await api.PUT('/workspaces/{parentTaskId}/files/{path}', {
      ...file('notes/upload.txt'),
      body: text,
      bodySerializer: (body) => body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(response.status).toBe(201);
    expect(data).toMatchObject({ relativePath: 'notes/upload.txt', size: Buffer.byteLength(text) });
    expect((await stored('notes/upload.txt')).equals(Buffer.from(text))).toBe(true);
    // Read back through the same client, as text.
    const back = await api.GET('/workspaces/{parentTaskId}/files/{path}', { ...file('notes/upload.txt'), parseAs: 'text' });
    expect(back.data).toBe(text);
  });

  it('uploads bytes (a Blob) the same way', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0x22, 0x5c, 0x0a]);
    const { response } = await api.PUT('/workspaces/{parentTaskId}/files/{path}', {
      ...file('data/blob.bin'),
      body: '',
      bodySerializer: () => new Blob([bytes]),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(response.status).toBe(201);
    expect((await stored('data/blob.bin')).equals(bytes)).toBe(true);
  });

  it("without it, openapi-fetch's default stores the string JSON-encoded: why the README shows the call", async () => {
    await api.PUT('/workspaces/{parentTaskId}/files/{path}', { ...file('notes/default.txt'), body: text });
    expect((await stored('notes/default.txt')).toString()).toBe(JSON.stringify(text));
  });
});
