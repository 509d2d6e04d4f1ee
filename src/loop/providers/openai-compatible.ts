/** Any OpenAI-compatible server (a local Ollama, vLLM, a vendor's gateway) over Chat Completions. */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { openaiChunkReader } from './openai.ts';
import { commonSettings, withProviderOptions, type ProviderKit } from './provider-types.ts';

export const openaiCompatibleKit: ProviderKit = {
  type: 'openai-compatible',
  model(connection, modelId, fetch, name) {
    const provider = createOpenAICompatible({
      name,
      baseURL: connection.baseURL!,
      apiKey: connection.apiKey,
      headers: connection.headers,
      // The usage chunk is what the service bills from.
      includeUsage: true,
      fetch,
    });
    return provider.chatModel(modelId);
  },
  reader: openaiChunkReader,
  shape(options, _modelId, settings) {
    // The server decides what it takes: `reasoning_effort` is sent as asked (servers ignore what they do not know).
    const shaped = commonSettings(options, settings);
    return settings.effort ? withProviderOptions(shaped, 'openaiCompatible', { reasoningEffort: settings.effort }) : shaped;
  },
  unsupported: () => [],
};
