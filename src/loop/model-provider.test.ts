import { streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../../scripted-model/server.ts';
import { createModelProvider } from './model-provider.ts';

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
