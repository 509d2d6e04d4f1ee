import { readFileSync } from 'node:fs';
import { calcPrice } from '@pydantic/genai-prices';
import { z } from 'zod';
import type { TokenUsage } from '../shapes/usage.ts';

/** US dollars per million tokens. Cached input tokens are part of the input tokens. */
export interface Rates {
  inputPerMTok: number;
  cachedInputPerMTok: number;
  /** Input tokens written to the provider's prompt cache (where it reports them). */
  cacheWritePerMTok: number;
  outputPerMTok: number;
}

/**
 * `PRICES_FILE`: `{ "<model id>": { inputPerMTok, cachedInputPerMTok?, cacheWritePerMTok?, outputPerMTok } }`;
 * a key `provider:model` prices that provider's model, a bare key the model on any provider.
 */
export const pricesFileSchema = z.record(
  z.string().min(1),
  z.object({
    inputPerMTok: z.number().min(0),
    cachedInputPerMTok: z.number().min(0).optional(),
    cacheWritePerMTok: z.number().min(0).optional(),
    outputPerMTok: z.number().min(0),
  }),
);

export interface PriceTable {
  /** The rates of `model` for a call made at `at` with `inputTokens` of input (some prices have tiers), or null. */
  ratesOf(model: string, at: number, inputTokens: number): Rates | null;
}

/**
 * Prices: `PRICES_FILE` first, then the price data of `@pydantic/genai-prices` (maintained by
 * Pydantic, MIT, no dependencies, with historical prices by start date and tiered prices; bundled,
 * so no network at run time). Throws with a readable message when the file is invalid.
 */
export function loadPriceTable(file: string | undefined): PriceTable {
  const own = file ? readPricesFile(file) : {};
  const cache = new Map<string, Rates | null>();
  return {
    ratesOf(model, at, inputTokens) {
      // `provider:model`: the file's key for it, else its bare key (any provider's), else the package's price.
      const named = PREFIXED.exec(model);
      const mine = own[model] ?? (named ? own[named[2]] : undefined);
      if (mine) {
        return {
          inputPerMTok: mine.inputPerMTok,
          cachedInputPerMTok: mine.cachedInputPerMTok ?? mine.inputPerMTok,
          cacheWritePerMTok: mine.cacheWritePerMTok ?? mine.inputPerMTok,
          outputPerMTok: mine.outputPerMTok,
        };
      }
      // Prices change by day at most: one lookup per model, day and tier size.
      const key = `${model}\u0000${Math.floor(at / 86_400_000)}\u0000${inputTokens}`;
      if (cache.size > 10_000) cache.clear();
      if (!cache.has(key)) cache.set(key, named ? packageRates(named[2], at, inputTokens, PACKAGE_PROVIDERS[named[1]]) : packageRates(model, at, inputTokens));
      return cache.get(key)!;
    },
  };
}

function readPricesFile(file: string): z.infer<typeof pricesFileSchema> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`PRICES_FILE ${file} cannot be read as JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = pricesFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`PRICES_FILE ${file}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return parsed.data;
}

type PackagePrice = number | { base: number; tiers?: Array<{ start: number; price: number }> } | undefined;

/** A model id's provider prefix (`anthropic:claude-sonnet-4-5`). */
const PREFIXED = /^([a-z][a-z0-9-]*):(.+)$/s;
/** The built-in providers, as the package names them (a named connection's models are looked up by name alone). */
const PACKAGE_PROVIDERS: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', google: 'google' };

function packageRates(model: string, at: number, inputTokens: number, providerId?: string): Rates | null {
  const found = calcPrice({ input_tokens: Math.max(inputTokens, 1), output_tokens: 1 }, model, { timestamp: new Date(at), ...(providerId && { providerId }) });
  if (!found) return null;
  const rate = (p: PackagePrice): number | null => {
    if (typeof p === 'number') return p;
    if (!p) return null;
    let price = p.base;
    for (const tier of p.tiers ?? []) if (inputTokens >= tier.start) price = tier.price;
    return price;
  };
  const prices = found.model_price as Record<string, PackagePrice>;
  const input = rate(prices.input_mtok);
  const output = rate(prices.output_mtok);
  if (input === null || output === null) return null;
  return {
    inputPerMTok: input,
    cachedInputPerMTok: rate(prices.cache_read_mtok) ?? input,
    cacheWritePerMTok: rate(prices.cache_write_mtok) ?? input,
    outputPerMTok: output,
  };
}

/** Dollars per million tokens as whole pico-dollars per token (exact for any price quoted to 6 decimals). */
const picoPerToken = (perMTok: number) => BigInt(Math.round(perMTok * 1_000_000));

/**
 * A call's cost in whole micro-dollars: (input − cached − cache-written) × input price + cached ×
 * cached price + cache-written × cache-write price + output × output price, in integers, rounded
 * once (half up). Reasoning tokens are part of output.
 */
export function costMicroUsd(usage: TokenUsage, rates: Rates): number {
  const written = Math.min(usage.cacheWriteTokens ?? 0, Math.max(usage.inputTokens - usage.cachedInputTokens, 0));
  const uncached = BigInt(Math.max(usage.inputTokens - usage.cachedInputTokens - written, 0));
  const pico =
    uncached * picoPerToken(rates.inputPerMTok) +
    BigInt(usage.cachedInputTokens) * picoPerToken(rates.cachedInputPerMTok) +
    BigInt(written) * picoPerToken(rates.cacheWritePerMTok) +
    BigInt(usage.outputTokens) * picoPerToken(rates.outputPerMTok);
  return Number((pico + 500_000n) / 1_000_000n);
}
