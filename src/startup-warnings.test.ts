import { describe, expect, it } from 'vitest';
import { builtinAgents, createAgentRegistry } from './definitions/agent-registry.ts';
import { loadPriceTable } from './money/prices.ts';
import { loadConfig } from './config/config.ts';
import { startupWarnings } from './startup-warnings.ts';

function warningsFor(env: Record<string, string>) {
  const config = loadConfig(env);
  const registry = createAgentRegistry(builtinAgents({ defaultModel: config.defaultModel, smallModel: config.smallModel }));
  return startupWarnings(config, registry, loadPriceTable(undefined)).map((w) => w.message);
}

describe('startupWarnings', () => {
  it("warns when OpenAI's API has no key, not when another server is named", () => {
    expect(warningsFor({})).toEqual([expect.stringMatching(/^OPENAI_API_KEY is not set/)]);
    expect(warningsFor({ OPENAI_BASE_URL: 'https://api.openai.com/v1' })).toHaveLength(1);
    expect(warningsFor({ OPENAI_API_KEY: 'sk-x' })).toEqual([]);
    // A local server (Ollama, vLLM) needs none.
    expect(warningsFor({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' })).toEqual([]);
  });

  it('warns about each model with no price, since cost budgets never stop its tasks', () => {
    const messages = warningsFor({ OPENAI_API_KEY: 'sk-x', DEFAULT_MODEL: 'qwen2.5:7b', SMALL_MODEL: 'gpt-4.1-nano' });
    expect(messages).toEqual([expect.stringMatching(/^model qwen2\.5:7b has no price: .*cost budgets \(maxCostUsd\) never stop its tasks/)]);
  });
});
