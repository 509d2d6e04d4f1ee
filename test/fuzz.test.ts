import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  // A scripted model with no script answers 400, so accepted tasks end quickly as provider_error.
  svc = await startService({ env: { MAX_CONCURRENT_TASKS: '4', MAX_QUEUED_TASKS: '50', BODY_LIMIT_BYTES: '65536' } });
});
afterAll(() => svc.close());

const id = fc.oneof(fc.constantFrom('T-1', 'u-1', 'a.b:c_d-e', '..', '.', '', 'x'.repeat(129), 'a/b', '../../etc'), fc.string(), fc.anything());
const body = fc.record(
  {
    subagent_type: fc.oneof(fc.constantFrom('general', 'explore', 'shell', 'nope', ''), fc.string(), fc.anything()),
    description: fc.oneof(fc.string({ maxLength: 100 }), fc.anything()),
    prompt: fc.oneof(fc.string(), fc.anything()),
    command: fc.oneof(fc.constantFrom('true', 'echo hi'), fc.anything()),
    context: fc.oneof(
      fc.record(
        {
          parentTaskId: id,
          userId: id,
          toolCallId: fc.oneof(fc.string(), fc.anything()),
          timezone: fc.oneof(fc.constantFrom('Europe/Berlin', 'UTC', 'Nowhere/Land'), fc.anything()),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    ),
    options: fc.oneof(
      fc.record(
        {
          model: fc.oneof(fc.string(), fc.anything()),
          maxSteps: fc.oneof(fc.integer(), fc.double(), fc.anything()),
          timeoutMs: fc.oneof(fc.integer(), fc.anything()),
          outputSchema: fc.oneof(fc.constant({ type: 'object' }), fc.constant({ type: 'bogus' }), fc.object(), fc.anything()),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    ),
  },
  { requiredKeys: [] },
);

function assertContractAnswer(res: { statusCode: number; json(): any; body: string }) {
  expect(res.statusCode).toBeLessThan(500);
  if (res.statusCode >= 400) {
    const b = res.json();
    expect(typeof b.error.code).toBe('string');
    expect(typeof b.error.message).toBe('string');
    expect(Object.keys(b)).toEqual(['error']);
  } else {
    expect(res.json().id).toMatch(/^tsk_/);
  }
}

describe('POST /tasks under random input', () => {
  it('never answers 5xx, and every refusal has the contract error shape', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(body, fc.anything()), fc.boolean(), async (payload, wait) => {
        const res = await svc.inject({
          method: 'POST',
          url: `/tasks${wait ? '?wait=true' : ''}`,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(payload) ?? 'null',
        });
        assertContractAnswer(res);
      }),
      { numRuns: 400 },
    );
  });

  it('survives raw non-JSON bodies and odd headers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string(),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream'),
        fc.string({ maxLength: 300 }),
        async (raw, type, key) => {
          const res = await svc.inject({
            method: 'POST',
            url: '/tasks',
            headers: { 'content-type': type, 'idempotency-key': key.replace(/[^\x21-\x7e]/g, '') || 'k' },
            payload: raw,
          });
          assertContractAnswer(res);
        },
      ),
      { numRuns: 200 },
    );
  });
});
