import { APICallError, type LanguageModelV3, type LanguageModelV3CallOptions, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../../scripted-model/server.ts';
import { createModelProvider, type ModelProvider } from './model-provider.ts';

let model: ScriptedModel;
let local: ModelProvider;
let threaded: ModelProvider;
const httpErrors: number[] = [];

beforeAll(async () => {
  model = await startScriptedModel();
  local = createModelProvider({ baseURL: model.url, api: 'chat', stallTimeoutMs: 5_000 });
  threaded = createModelProvider({ baseURL: model.url, api: 'chat', stallTimeoutMs: 5_000, threads: 2, onHttpError: (s) => httpErrors.push(s) });
});
afterAll(async () => {
  await threaded.close?.();
  await model.close();
});

const v3 = (m: ModelProvider, id = 'm') => m(id) as LanguageModelV3;
const call = (marker: string, extra: Partial<LanguageModelV3CallOptions> = {}): LanguageModelV3CallOptions => ({
  prompt: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: marker }] },
  ],
  tools: [{ type: 'function', name: 'list_files', inputSchema: { type: 'object', properties: {} } }],
  includeRawChunks: true,
  ...extra,
});
async function partsOf(stream: ReadableStream<LanguageModelV3StreamPart>) {
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const p of stream) parts.push(p);
  return parts;
}
/** What a consumer sees of the parts, without the ids and times each answer makes anew. */
const shape = (parts: LanguageModelV3StreamPart[]) =>
  parts.map((p) => {
    if (p.type === 'raw') return { type: 'raw', keys: Object.keys(p.rawValue as object).sort() };
    if (p.type === 'response-metadata') return { type: p.type, modelId: p.modelId };
    if (p.type === 'text-delta') return { type: p.type, delta: p.delta };
    if (p.type === 'tool-call') return { type: p.type, toolName: p.toolName, input: p.input };
    if (p.type === 'finish') return { type: p.type, usage: p.usage, finishReason: p.finishReason };
    return { type: p.type };
  });

describe('model threads', () => {
  it('stream the same parts, request and headers as the provider on the event loop', async () => {
    model.script('SAME-PARTS', [
      { text: 'hello from a thread', chunkSize: 5, toolCalls: [{ name: 'list_files', args: { path: '.' } }], usage: { input: 30, output: 7 } },
    ]);
    const a = await v3(local).doStream(call('SAME-PARTS'));
    const b = await v3(threaded).doStream(call('SAME-PARTS'));
    const [pa, pb] = [await partsOf(a.stream), await partsOf(b.stream)];
    expect(shape(pb)).toEqual(shape(pa));
    expect(shape(pb)).toContainEqual({ type: 'text-delta', delta: 'hello' });
    expect(shape(pb)).toContainEqual({ type: 'tool-call', toolName: 'list_files', input: '{"path":"."}' });
    expect(b.request?.body).toEqual(a.request?.body);
    expect(b.response?.headers?.['content-type']).toBe(a.response?.headers?.['content-type']);
  });

  it("give back the provider's errors as its own: status, retryability, the metric", async () => {
    model.script('REFUSED', () => ({ status: 400, errorMessage: 'bad request, scripted' }));
    model.script('BUSY', () => ({ status: 503, errorMessage: 'overloaded, scripted' }));
    const refused = await Promise.resolve(v3(threaded).doStream(call('REFUSED'))).catch((e: unknown) => e);
    expect(APICallError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ statusCode: 400, isRetryable: false, message: 'bad request, scripted' });
    const busy = await Promise.resolve(v3(threaded).doStream(call('BUSY'))).catch((e: unknown) => e);
    expect(busy).toMatchObject({ statusCode: 503, isRetryable: true });
    expect(httpErrors).toEqual([400, 503]);
  });

  it("end an aborted answer with the signal's reason, and keep serving", async () => {
    model.script('HELD', [{ text: 'held', usage: { input: 5, output: 1 }, fault: 'hold-after-usage' }]);
    model.script('AFTER', [{ text: 'still here' }]);
    const abort = new AbortController();
    const held = await v3(threaded).doStream(call('HELD', { abortSignal: abort.signal }));
    const reader = held.stream.getReader();
    const seen: string[] = [];
    for (;;) {
      const { value } = await reader.read();
      seen.push(value!.type);
      if (value!.type === 'raw' && (value.rawValue as { usage?: unknown }).usage) break;
    }
    const reason = new Error('cancelled by the test');
    abort.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
    expect(seen).toContain('text-delta');
    const after = await partsOf((await v3(threaded).doStream(call('AFTER'))).stream);
    expect(
      after
        .filter((p) => p.type === 'text-delta')
        .map((p) => (p as { delta: string }).delta)
        .join(''),
    ).toBe('still here');
  });

  it('fail a call under way as retryable when the threads stop', async () => {
    const own = createModelProvider({ baseURL: model.url, api: 'chat', threads: 1 });
    model.script('STOPPED', [{ text: 'never ends', fault: 'hold-after-usage' }]);
    const held = await v3(own).doStream(call('STOPPED'));
    const reader = held.stream.getReader();
    await own.close!();
    let err: unknown;
    for (;;) {
      try {
        if ((await reader.read()).done) break;
      } catch (e) {
        err = e;
        break;
      }
    }
    expect(APICallError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ isRetryable: true });
    await expect(v3(own).doStream(call('STOPPED'))).rejects.toThrow(/stopping/);
  });
});
