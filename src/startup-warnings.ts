import type { AgentRegistry } from './definitions/agent-registry.ts';
import type { PriceTable } from './money/prices.ts';
import { ConfigError, type Config } from './config/config.ts';
import type { AgentDefinition } from './definitions/agent-definition.ts';
import { UnknownProviderError, type ModelProvider } from './loop/model-provider.ts';

export interface StartupWarning {
  message: string;
  fields: Record<string, unknown>;
}

/**
 * What an operator should know before the first task fails or costs go unwatched: a provider
 * that needs a key and has none (OpenAI's API, the default), and models with no price, whose
 * calls are recorded as unpriced tokens and whose tasks no cost budget (`maxCostUsd`) ever
 * stops. Token budgets still apply to them.
 */
export function startupWarnings(config: Config, registry: AgentRegistry, prices: PriceTable, now = Date.now(), models?: ModelProvider): StartupWarning[] {
  const warnings: StartupWarning[] = [];
  if (models) warnings.push(...providerWarnings(config, registry, models));
  const openai = !config.openaiBaseUrl || new URL(config.openaiBaseUrl).hostname === 'api.openai.com';
  // A set-up whose models are all another provider's needs no OpenAI key.
  const usesOpenai = !models || [config.defaultModel, ...registry.list().flatMap(modelIdsOf)].some((id) => models.resolve(id).provider === 'openai');
  if (openai && usesOpenai && !config.openaiApiKey) {
    warnings.push({
      message:
        "OPENAI_API_KEY is not set and the provider is OpenAI's API: every model call will be refused until it is (set OPENAI_BASE_URL for a server that needs no key)",
      fields: { provider: config.openaiBaseUrl ?? 'https://api.openai.com/v1' },
    });
  }
  warnings.push(...sandboxWarnings(config, registry));
  const typesByModel = new Map<string, string[]>();
  for (const def of registry.list()) {
    if (def.kind !== 'model' || !def.model) continue;
    typesByModel.set(def.model, [...(typesByModel.get(def.model) ?? []), def.type]);
  }
  if (!typesByModel.has(config.defaultModel)) typesByModel.set(config.defaultModel, []);
  for (const [model, types] of typesByModel) {
    if (prices.ratesOf(model, now, 1) !== null) continue;
    warnings.push({
      message: `model ${model} has no price: its calls are billed as unpriced tokens and cost budgets (maxCostUsd) never stop its tasks; give it a price in PRICES_FILE`,
      fields: { model, subagentTypes: types },
    });
  }
  return warnings;
}

/**
 * Definitions the sandbox will not serve as written: an `image` under bubblewrap (the host's tools
 * are used instead), an ACP agent without `network` in a container sandbox (it reaches no model).
 */
function sandboxWarnings(config: Config, registry: AgentRegistry): StartupWarning[] {
  const warnings: StartupWarning[] = [];
  const imaged = registry.list().filter((d) => d.image !== undefined);
  if (config.sandbox === 'bwrap' && imaged.length > 0) {
    warnings.push({
      message: "definitions name an image but SANDBOX=bwrap: their commands run on this host, with the host's tools (SANDBOX=container uses the image)",
      fields: { subagentTypes: imaged.map((d) => d.type) },
    });
  }
  const acp = registry.list().filter((d) => d.kind === 'acp' && d.network === undefined);
  if (config.sandbox === 'container' && acp.length > 0) {
    warnings.push({
      message:
        "ACP agents without network in a container sandbox (SANDBOX=container) reach no host, their model's neither: name its host in network: { allow }",
      fields: { subagentTypes: acp.map((d) => d.type) },
    });
  }
  return warnings;
}

/** Every model id a definition names: its model, its fallbacks, its compaction model. */
const modelIdsOf = (def: AgentDefinition) =>
  def.kind === 'model' ? [def.model, ...(def.fallbackModels ?? []), def.compactionModel].filter((m): m is string => !!m && m !== 'inherit') : [];

/**
 * Refuses to start on a model id whose provider is unknown (`DEFAULT_MODEL`, `SMALL_MODEL`, a
 * definition's models), naming the provider and where it is named.
 */
export function checkModelIds(config: Config, registry: AgentRegistry, models: ModelProvider): void {
  const named: Array<[string, string]> = [
    ['DEFAULT_MODEL', config.defaultModel],
    ['SMALL_MODEL', config.smallModel],
    ...registry.list().flatMap((def) => modelIdsOf(def).map((id): [string, string] => [`subagent definition "${def.type}"`, id])),
  ];
  const problems: string[] = [];
  for (const [where, id] of named) {
    try {
      models.resolve(id);
    } catch (err) {
      if (!(err instanceof UnknownProviderError)) throw err;
      problems.push(`${where}: ${err.message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${[...new Set(problems)].join('\n  ')}`);
}

/** The providers the definitions use that have no key, and the settings a definition's model does not take. */
function providerWarnings(config: Config, registry: AgentRegistry, models: ModelProvider): StartupWarning[] {
  const warnings: StartupWarning[] = [];
  const used = new Map<string, string[]>();
  const defs = registry.list().filter((d) => d.kind === 'model');
  for (const def of defs) {
    for (const id of modelIdsOf(def)) {
      const { provider } = models.resolve(id);
      used.set(provider, [...new Set([...(used.get(provider) ?? []), def.type])]);
    }
    // Its settings go to its fallbacks too, which may be another provider's models.
    for (const model of [def.model, ...(def.fallbackModels ?? [])]) {
      if (!model) continue;
      const dropped = models.unsupported(model, { effort: def.effort, topP: def.topP, maxOutputTokens: def.maxOutputTokens });
      if (dropped.length === 0) continue;
      const role = model === def.model ? 'model' : 'fallback model';
      warnings.push({
        message: `subagent definition "${def.type}": ${role} ${model} does not take ${dropped.join(', ')}; left out of its requests`,
        fields: { subagentType: def.type, model, settings: dropped },
      });
    }
  }
  const keys: Record<string, { key: string | undefined; variable: string }> = {
    anthropic: { key: config.anthropicApiKey, variable: 'ANTHROPIC_API_KEY' },
    google: { key: config.googleApiKey, variable: 'GOOGLE_GENERATIVE_AI_API_KEY' },
    ...Object.fromEntries(
      Object.entries(config.providers).flatMap(([name, p]) =>
        p.apiKeyEnv && !['openai', 'anthropic', 'google'].includes(name) ? [[name, { key: p.apiKey, variable: p.apiKeyEnv }]] : [],
      ),
    ),
  };
  for (const [provider, types] of used) {
    const k = keys[provider];
    if (!k || k.key) continue;
    warnings.push({
      message: `provider ${provider} has no key (${k.variable} is not set): the calls of ${types.join(', ')} will be refused until it is`,
      fields: { provider, subagentTypes: types },
    });
  }
  return warnings;
}
