import type { LanguageModelV3 } from '@ai-sdk/provider';
import { wrapLanguageModel, type LanguageModel } from 'ai';
import { anthropicKit } from './providers/anthropic.ts';
import { googleKit } from './providers/google.ts';
import { openaiKit } from './providers/openai.ts';
import { openaiCompatibleKit } from './providers/openai-compatible.ts';
import type { ChunkReader, Connection, ModelSettings, ProviderKit, ProviderType } from './providers/provider-types.ts';
import { stallGuardedFetch } from './stall-guard.ts';
import { dialectOf, mergingBody, mergingSource } from './providers/sse-merge.ts';
import { interpose, interposeResult, type Pulls } from '../util/pulled-stream.ts';
import type { SliceLane } from '../util/turns.ts';

export type { ChunkReader, Connection, Effort, ModelSettings, ProviderType } from './providers/provider-types.ts';
export { EFFORTS } from './providers/provider-types.ts';

/** One file per provider type: a fourth provider is one more file and one more line here. */
const KITS: Record<ProviderType, ProviderKit> = {
  openai: openaiKit,
  'openai-compatible': openaiCompatibleKit,
  anthropic: anthropicKit,
  google: googleKit,
};

/** A model id names a provider nobody configured (`antropic:claude-…`). */
export class UnknownProviderError extends Error {
  readonly code = 'unknown_provider';
  constructor(
    readonly provider: string,
    readonly modelId: string,
    readonly known: string[],
  ) {
    super(`model "${modelId}" names an unknown provider "${provider}"; known providers: ${known.join(', ')}`);
    this.name = 'UnknownProviderError';
  }
}

/** Which connection and which of its models an id names. */
export interface ModelRef {
  /** The connection's name: `openai`, `anthropic`, `google` or one of `PROVIDERS`. */
  provider: string;
  type: ProviderType;
  /** The model's id at its provider (the id without its prefix). */
  modelId: string;
}

/** Turns model ids (`provider:model`, or a bare id of the default provider) into language models. */
export interface ModelProvider {
  /** The connection and model `id` names; throws UnknownProviderError. */
  resolve(id: string): ModelRef;
  /** The language model `id` names, its requests shaped by `settings` in its provider's own terms. */
  model(id: string, settings?: ModelSettings): LanguageModel;
  /** A reader of one call's raw chunks, as `id`'s provider sends them (for the model guard). */
  reader(id: string): ChunkReader;
  /** The settings `id`'s model does not take (left out of its requests). */
  unsupported(id: string, settings: ModelSettings): Array<keyof ModelSettings>;
}

export interface ProviderSettings {
  /** The named connections: the built-in three and `PROVIDERS`. */
  connections: Record<string, Connection>;
  /** Whose a bare id is (`DEFAULT_PROVIDER`). */
  defaultProvider: string;
  /** Cut a model response that sends nothing for this long. */
  stallTimeoutMs?: number;
  /** Told of every error status the provider answers (for metrics). */
  onHttpError?(status: number): void;
  /** The lane of the event loop's slice the answers take turns of (util/turns.ts); none: they go on at once. */
  slices?: SliceLane;
}

const PREFIXED = /^([a-z][a-z0-9-]*):(.+)$/s;

/**
 * The providers of the service. A bare id is the default provider's. An id whose prefix is no
 * known provider is refused, except when the default provider is an OpenAI-compatible server of
 * its own (a base URL): there ids such as `llama3:8b` are that server's model names, as they were
 * before providers had names.
 */
export function createModelProvider(settings: ProviderSettings): ModelProvider {
  const fetchOf = mergingDeltas(
    watchStatus(settings.stallTimeoutMs ? stallGuardedFetch(settings.stallTimeoutMs) : fetch, (status) => settings.onHttpError?.(status)),
    settings.slices,
  );
  const known = Object.keys(settings.connections);
  const fallback = settings.connections[settings.defaultProvider];
  const taggedNames = fallback !== undefined && (fallback.type === 'openai-compatible' || fallback.type === 'openai') && fallback.baseURL !== undefined;
  const models = new Map<string, LanguageModelV3>();

  function resolve(id: string): ModelRef {
    const m = PREFIXED.exec(id);
    if (m && settings.connections[m[1]]) return { provider: m[1], type: settings.connections[m[1]].type, modelId: m[2] };
    if (m && !taggedNames) throw new UnknownProviderError(m[1], id, known);
    if (!fallback) throw new UnknownProviderError(settings.defaultProvider, id, known);
    return { provider: settings.defaultProvider, type: fallback.type, modelId: id };
  }

  /** One provider model per id: the SDK's providers are cheap, but not free, to make per call. */
  function base(id: string): { ref: ModelRef; model: LanguageModelV3 } {
    const ref = resolve(id);
    let model = models.get(id);
    if (!model) {
      // Ids come from requests too (`options.model`): the cache stays bounded.
      if (models.size >= 1000) models.clear();
      model = KITS[ref.type].model(settings.connections[ref.provider], ref.modelId, fetchOf, ref.provider);
      models.set(id, model);
    }
    return { ref, model };
  }

  return {
    resolve,
    model(id, modelSettings = {}) {
      const { ref, model } = base(id);
      const kit = KITS[ref.type];
      return wrapLanguageModel({
        model,
        middleware: { specificationVersion: 'v3', transformParams: async ({ params }) => kit.shape(params, ref.modelId, modelSettings) },
      });
    },
    reader: (id) => KITS[resolve(id).type].reader(),
    unsupported: (id, modelSettings) => {
      const ref = resolve(id);
      return KITS[ref.type].unsupported(ref.modelId, modelSettings);
    },
  };
}

function watchStatus(inner: typeof fetch, onError?: (status: number) => void): typeof fetch {
  if (!onError) return inner;
  return async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await inner(input, init);
    if (res.status >= 400) onError(res.status);
    return res;
  };
}

/**
 * A fetch whose streamed answers (OpenAI's chat completions, Anthropic's messages, Gemini's
 * content) have the text deltas that arrive in one read merged (sse-merge.ts): under load, the
 * stream path (the SDK's, or OpenAI's chat reader) and the event that follows run once for them
 * rather than once each. With `slices`, every answer's start
 * (the SDK builds its stream chain) and each of its reads (parsed through that chain) take their
 * turn of the event loop's shared slice: hundreds of answers that arrive together do not hold the
 * loop for hundreds of milliseconds.
 */
function mergingDeltas(inner: typeof fetch, slices?: SliceLane): typeof fetch {
  return async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await inner(input, init);
    const turn = slices?.enter();
    if (turn) await turn;
    const streamed = res.ok && (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    const dialect = streamed ? dialectOf(input instanceof Request ? input.url : String(input)) : null;
    if (!streamed || (!dialect && !slices)) return res;
    const merging = (bytes: Pulls<Uint8Array>) => mergingSource(bytes, dialect, slices);
    // The fetch's own body (request-fetch.ts) takes the merge in its place: one Response an answer,
    // and no web stream made for it unless a reader asks for one.
    if (interposeResult<Uint8Array>(res, merging)) return res;
    if (res.body === null || interpose<Uint8Array>(res.body, merging)) return res;
    return new Response(mergingBody(res.body, dialect, slices), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
