import { describe, expect, it } from 'vitest';
import { builtinAgents, createAgentRegistry } from './definitions/agent-registry.ts';
import { loadPriceTable } from './money/prices.ts';
import { loadConfig } from './config/config.ts';
import { createModelProvider } from './loop/model-provider.ts';
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

  it('names a provider a definition uses with no key, and a setting its model does not take', () => {
    const config = loadConfig({
      OPENAI_API_KEY: 'sk-x',
      GOOGLE_GENERATIVE_AI_API_KEY: 'g',
      DEFAULT_MODEL: 'anthropic:claude-3-5-haiku-latest',
      SMALL_MODEL: 'google:gemini-2.5-flash',
    });
    const defs = builtinAgents({ defaultModel: config.defaultModel, smallModel: config.smallModel }).map((d) =>
      d.type === 'general' ? { ...d, effort: 'high' as const, fallbackModels: ['google:gemini-2.5-flash', 'anthropic:claude-3-haiku-20240307'] } : d,
    );
    const models = createModelProvider({
      connections: { openai: { type: 'openai' }, anthropic: { type: 'anthropic' }, google: { type: 'google', apiKey: 'g' } },
      defaultProvider: 'openai',
    });
    const messages = startupWarnings(config, createAgentRegistry(defs), loadPriceTable(undefined), Date.now(), models).map((w) => w.message);
    expect(messages).toEqual(
      expect.arrayContaining([
        'subagent definition "general": model anthropic:claude-3-5-haiku-latest does not take effort; left out of its requests',
        // A fallback on another provider is checked as the model is; one that takes the setting is not named.
        'subagent definition "general": fallback model anthropic:claude-3-haiku-20240307 does not take effort; left out of its requests',
        expect.stringMatching(/^provider anthropic has no key \(ANTHROPIC_API_KEY is not set\)/),
      ]),
    );
    expect(messages.some((m) => m.startsWith('provider google'))).toBe(false);
    expect(messages.some((m) => m.includes('gemini-2.5-flash does not take'))).toBe(false);
    // Every model is Claude's or Gemini's: no OpenAI key is needed.
    const noOpenai = loadConfig({ ANTHROPIC_API_KEY: 'a', DEFAULT_MODEL: 'anthropic:claude-sonnet-4-5' });
    const registry = createAgentRegistry(builtinAgents({ defaultModel: noOpenai.defaultModel, smallModel: noOpenai.smallModel }));
    const quiet = startupWarnings(noOpenai, registry, loadPriceTable(undefined), Date.now(), models).map((w) => w.message);
    expect(quiet.filter((m) => m.includes('OPENAI_API_KEY'))).toEqual([]);
  });

  it("says when a definition's image is not used (SANDBOX=bwrap), and not when it is", () => {
    const defs = (config: ReturnType<typeof loadConfig>) =>
      createAgentRegistry(
        builtinAgents({ defaultModel: config.defaultModel, smallModel: config.smallModel }).map((d) =>
          d.type === 'general' ? { ...d, image: 'python:3.12' } : d,
        ),
      );
    const bwrap = loadConfig({ OPENAI_API_KEY: 'sk-x' });
    expect(startupWarnings(bwrap, defs(bwrap), loadPriceTable(undefined)).map((w) => w.message)).toEqual([
      expect.stringMatching(/^definitions name an image but SANDBOX=bwrap/),
    ]);
    const container = loadConfig({ OPENAI_API_KEY: 'sk-x', SANDBOX: 'container', SANDBOX_IMAGE: 'debian:bookworm' });
    expect(startupWarnings(container, defs(container), loadPriceTable(undefined))).toEqual([]);
  });

  it('names the ACP agents a container sandbox leaves without a network, not those that name their hosts', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'sk-x', SANDBOX: 'container', SANDBOX_IMAGE: 'debian:bookworm' });
    const acp = { kind: 'acp' as const, acp: { command: 'opencode', args: ['acp'], env: [], permission: 'allow_workspace' as const } };
    const general = builtinAgents({ defaultModel: config.defaultModel, smallModel: config.smallModel }).find((d) => d.type === 'general')!;
    const registry = createAgentRegistry([
      { ...general, ...acp, type: 'open' },
      { ...general, ...acp, type: 'allowed', network: { allow: ['api.example.com'] } },
    ]);
    const warnings = startupWarnings(config, registry, loadPriceTable(undefined));
    expect(warnings).toEqual([{ message: expect.stringMatching(/^ACP agents without network in a container sandbox/), fields: { subagentTypes: ['open'] } }]);
  });
});
