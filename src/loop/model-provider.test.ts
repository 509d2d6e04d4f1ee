import type { LanguageModelV3 } from '@ai-sdk/provider';
import { streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../../scripted-model/server.ts';
import { createModelProvider } from './model-provider.ts';
import { guardModel, ModelStallError } from './model-guard.ts';
import type { TokenUsage } from '../shapes/usage.ts';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(async () => {
  await model.close();
});

const nextTurns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe("the model fetch and the event loop's slice", () => {
  it("an answer's start and its reads each wait for their turn; released, the whole answer arrives", async () => {
    model.script('PROVIDER-TURNS', [{ text: 'taken in turns, every word of it', chunkSize: 4 }]);
    // The first turn (the answer's start) is held until the test lets it go; the reads go at once.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered = 0;
    const lane = { enter: () => (++entered === 1 ? held : undefined) };
    const provider = createModelProvider({
      connections: { openai: { type: 'openai', baseURL: model.url, api: 'chat' } },
      defaultProvider: 'openai',
      slices: lane,
    });

    const parts: string[] = [];
    const result = streamText({ model: provider.model('m'), prompt: 'PROVIDER-TURNS' });
    const reading = (async () => {
      for await (const text of result.textStream) parts.push(text);
    })();
    // The provider has answered, but nothing of it reaches the SDK before its turn.
    while (entered === 0) await nextTurns(1);
    await nextTurns(20);
    expect(entered).toBe(1);
    expect(parts).toEqual([]);

    release();
    await reading;
    expect(parts.join('')).toBe('taken in turns, every word of it');
    expect(entered).toBeGreaterThan(1);
    expect(await result.finishReason).toBe('stop');
  });
});

describe('an answer with no output whose connection fails after its usage', () => {
  it('is billed what the provider reported, and fails as the call would', async () => {
    const provider = createModelProvider({ connections: { openai: { type: 'openai', baseURL: model.url, api: 'chat' } }, defaultProvider: 'openai' });
    for (const fault of ['cut-after-usage', 'hold-after-usage'] as const) {
      const marker = `NO-OUTPUT-${fault}`;
      model.script(marker, [{ text: '', usage: { input: 500, output: 9 }, fault }]);
      const billed: TokenUsage[] = [];
      const guarded = guardModel(provider.model('m'), { onUsage: (u) => void billed.push(u), stallTimeoutMs: 300, maxRetries: 0 });
      const call = (guarded as LanguageModelV3).doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: marker }] }] });
      const errors: unknown[] = [];
      try {
        const reader = (await call).stream.getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) if (r.value.type === 'error') errors.push(r.value.error);
      } catch (err) {
        errors.push(err);
      }
      expect(model.usageSent.filter((u) => u.prompt.includes(marker))).toHaveLength(1);
      expect(billed).toEqual([expect.objectContaining({ inputTokens: 500, outputTokens: 9 })]);
      expect(errors).toHaveLength(1);
      // Held open: the stall timeout cuts it, with the stall's own error.
      if (fault === 'hold-after-usage') expect(errors[0]).toBeInstanceOf(ModelStallError);
    }
  });
});
