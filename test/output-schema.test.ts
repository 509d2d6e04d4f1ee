import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(() => svc.close());

const outputSchema = {
  type: 'object',
  properties: { errors: { type: 'integer', minimum: 0 }, top: { type: 'string' } },
  required: ['errors', 'top'],
  additionalProperties: false,
};

const run = async (marker: string) =>
  (
    await svc.inject({
      method: 'POST',
      url: '/tasks?wait=true',
      payload: taskBody({ prompt: marker, options: { outputSchema } }),
    })
  ).json();

describe('options.outputSchema', () => {
  it('returns a valid output', async () => {
    svc.model.script('OUT-VALID', [{ toolCalls: [{ name: 'complete', args: { summary: 'counted', paths: [], output: { errors: 3, top: 'ECONNRESET' } } }] }]);
    const out = await run('OUT-VALID');
    expect(out).toMatchObject({ status: 'completed', stopReason: 'complete', output: { errors: 3, top: 'ECONNRESET' }, steps: 1 });
  });

  it('sends an invalid output back to the model, which fixes it', async () => {
    let feedback = '';
    svc.model.script('OUT-FIX', (ctx) => {
      if (ctx.turn === 0) {
        return { toolCalls: [{ name: 'complete', args: { summary: 'counted', paths: [], output: { errors: 'three' } } }] };
      }
      feedback = ctx.toolResults[0]?.content ?? '';
      return { toolCalls: [{ name: 'complete', args: { summary: 'counted again', paths: [], output: { errors: 3, top: 'EPIPE' } } }] };
    });
    const out = await run('OUT-FIX');
    expect(feedback).toContain('does not match the output schema');
    expect(feedback).toContain('errors');
    expect(out).toMatchObject({ status: 'completed', stopReason: 'complete', summary: 'counted again', output: { errors: 3, top: 'EPIPE' }, steps: 2 });
  });

  it('never returns an output that failed validation', async () => {
    svc.model.script('OUT-INVALID', [{ toolCalls: [{ name: 'complete', args: { summary: 'x', paths: [] } }] }, { text: 'I cannot produce it.' }]);
    const out = await run('OUT-INVALID');
    expect(out).toMatchObject({ status: 'completed', stopReason: 'text', output: null, summary: 'I cannot produce it.' });
  });

  it('is described to the model in the complete tool', async () => {
    svc.model.script('OUT-DESC', [{ toolCalls: [{ name: 'complete', args: { summary: 's', paths: [], output: { errors: 0, top: '' } } }] }]);
    await run('OUT-DESC');
    const req = svc.model.requests.find((r) => JSON.stringify(r.body).includes('OUT-DESC'))!;
    const complete = (req.body.tools as Array<{ function: { name: string; description: string } }>).find((t) => t.function.name === 'complete')!;
    expect(complete.function.description).toContain('"required":["errors","top"]');
  });
});
