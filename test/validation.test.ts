import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { BODY_LIMIT_BYTES: '4096' } });
});
afterAll(() => svc.close());

const post = (payload: unknown, headers: Record<string, string> = {}) =>
  svc.inject({ method: 'POST', url: '/tasks', payload: payload as string, headers: { 'content-type': 'application/json', ...headers } });

function expectInvalid(res: { statusCode: number; json(): any }, field: string) {
  expect(res.statusCode).toBe(400);
  const body = res.json();
  expect(body.error.code).toBe('invalid_request');
  expect(body.error.message).toEqual(expect.any(String));
  expect(body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  for (const d of body.error.details) expect(d.message).toEqual(expect.any(String));
}

describe('POST /tasks validation', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing subagent_type', { subagent_type: undefined }, 'body.subagent_type'],
    ['missing description', { description: undefined }, 'body.description'],
    ['empty description', { description: '' }, 'body.description'],
    ['description over 80 chars', { description: 'x'.repeat(81) }, 'body.description'],
    ['missing prompt', { prompt: undefined }, 'body.prompt'],
    ['empty prompt', { prompt: '' }, 'body.prompt'],
    ['missing context', { context: undefined }, 'body.context'],
    ['missing parentTaskId', { context: { userId: 'u-1' } }, 'body.context.parentTaskId'],
    ['missing userId', { context: { parentTaskId: 'T-1' } }, 'body.context.userId'],
    ['parentTaskId with a slash', { context: { parentTaskId: '../etc', userId: 'u-1' } }, 'body.context.parentTaskId'],
    ['parentTaskId of ..', { context: { parentTaskId: '..', userId: 'u-1' } }, 'body.context.parentTaskId'],
    ['parentTaskId over 128 chars', { context: { parentTaskId: 'a'.repeat(129), userId: 'u-1' } }, 'body.context.parentTaskId'],
    ['userId with a space', { context: { parentTaskId: 'T-1', userId: 'u 1' } }, 'body.context.userId'],
    ['unknown timezone', { context: { parentTaskId: 'T-1', userId: 'u-1', timezone: 'Mars/Olympus' } }, 'body.context.timezone'],
    ['maxSteps not an integer', { options: { maxSteps: 2.5 } }, 'body.options.maxSteps'],
    ['maxSteps zero', { options: { maxSteps: 0 } }, 'body.options.maxSteps'],
    ['maxSteps above the definition', { options: { maxSteps: 51 } }, 'body.options.maxSteps'],
    ['timeoutMs negative', { options: { timeoutMs: -1 } }, 'body.options.timeoutMs'],
    ['outputSchema not an object', { options: { outputSchema: 'string' } }, 'body.options.outputSchema'],
    ['outputSchema not a JSON Schema', { options: { outputSchema: { type: 'no-such-type' } } }, 'body.options.outputSchema'],
    ['shell without command', { subagent_type: 'shell', prompt: undefined }, 'body.command'],
  ];
  it.each(cases)('%s → 400 invalid_request', async (_name, over, field) => {
    expectInvalid(await post(taskBody(over)), field);
  });

  it('names every bad field at once', async () => {
    const res = await post({ subagent_type: 'general', context: { parentTaskId: '', userId: '' } });
    expect(res.statusCode).toBe(400);
    const fields = res.json().error.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['body.description', 'body.context.parentTaskId', 'body.context.userId']));
  });

  it('unknown subagent_type → 400 unknown_subagent_type listing the available types', async () => {
    const res = await post(taskBody({ subagent_type: 'wizard' }));
    expect(res.statusCode).toBe(400);
    const { error } = res.json();
    expect(error.code).toBe('unknown_subagent_type');
    for (const t of ['general', 'explore', 'shell']) expect(error.message).toContain(t);
    expect(error.details.available).toEqual(expect.arrayContaining(['general', 'explore', 'shell']));
  });

  it('malformed JSON → 400 in the contract shape', async () => {
    const res = await post('{"subagent_type": ');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: { code: 'invalid_json', message: expect.any(String) } });
  });

  it('a non-object body → 400 invalid_request', async () => {
    expectInvalid(await post('[1,2,3]'), 'body');
  });

  it('a body over the limit → 413 payload_too_large', async () => {
    const res = await post(taskBody({ prompt: 'x'.repeat(10_000) }));
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('payload_too_large');
  });

  it('a content type with no parser → 415 in the contract shape', async () => {
    const res = await svc.inject({ method: 'POST', url: '/tasks', payload: '<task/>', headers: { 'content-type': 'application/xml' } });
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe('unsupported_media_type');
  });

  it('bad query values → 400 naming the query field', async () => {
    expectInvalid(await svc.inject({ method: 'POST', url: '/tasks?wait=maybe', payload: taskBody() }), 'querystring.wait');
    expectInvalid(await svc.inject({ url: '/tasks?limit=0' }), 'querystring.limit');
    expectInvalid(await svc.inject({ url: '/tasks?status=sleeping' }), 'querystring.status');
    expectInvalid(await svc.inject({ url: '/usage?groupBy=planet' }), 'querystring.groupBy');
    expectInvalid(await svc.inject({ url: '/usage?from=yesterday' }), 'querystring.from');
  });

  it('a task id that names no task, malformed or not → 404; an unknown route → 404; both in the contract shape', async () => {
    for (const id of ['not-a-task-id', 'tsk_01JAAAAAAAAAAAAAAAAAAAAAAA']) {
      const unknown = await svc.inject({ url: `/tasks/${id}` });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({ error: { code: 'not_found', message: `task ${id} not found` } });
    }
    const res = await svc.inject({ url: '/no/such/route' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'not_found', message: 'route GET /no/such/route not found' } });
  });

  it('ignores unknown top-level fields (the task tool may grow)', async () => {
    svc.model.script('EXTRA-FIELDS', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload: { ...taskBody({ prompt: 'EXTRA-FIELDS' }), color: 'blue' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('completed');
  });
});
