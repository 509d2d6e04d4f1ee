import type { AgentRegistry } from './definitions/agent-registry.ts';
import type { PriceTable } from './money/prices.ts';
import type { Config } from './config/config.ts';

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
export function startupWarnings(config: Config, registry: AgentRegistry, prices: PriceTable, now = Date.now()): StartupWarning[] {
  const warnings: StartupWarning[] = [];
  const openai = !config.openaiBaseUrl || new URL(config.openaiBaseUrl).hostname === 'api.openai.com';
  if (openai && !config.openaiApiKey) {
    warnings.push({
      message:
        "OPENAI_API_KEY is not set and the provider is OpenAI's API: every model call will be refused until it is (set OPENAI_BASE_URL for a server that needs no key)",
      fields: { provider: config.openaiBaseUrl ?? 'https://api.openai.com/v1' },
    });
  }
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
