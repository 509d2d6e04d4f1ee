/**
 * `npm run bench answer`: what one streamed model answer costs the service's provider path, per
 * provider, in CPU: the provider model as the service builds it (its fetch, the merge, the SDK's
 * request, and the SDK's stream chain or, for OpenAI's chat, the service's own reader of the
 * answer: providers/openai-chat-answer.ts) read to its end, against the same answer fetched with the
 * service's fetch and merged but not parsed, and against a bare request whose SSE is split and
 * JSON-parsed by hand. All three run in this process, one answer at a time, on the scripted model
 * server, whose own share is in every row alike: the differences are what each layer costs.
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { request } from 'undici';
import { startScriptedModel } from '../scripted-model/server.ts';
import { createModelProvider } from '../src/loop/model-provider.ts';
import { dialectOf, mergingBody } from '../src/loop/providers/sse-merge.ts';
import { stallGuardedFetch } from '../src/loop/stall-guard.ts';

/** Each provider's model, and the bare request its wire format takes for the same prompt. */
const PROVIDERS = {
  openai: {
    model: 'openai:gpt-4.1-mini',
    path: '/chat/completions',
    body: { model: 'gpt-4.1-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'ANSWER' }] },
  },
  anthropic: {
    model: 'anthropic:claude-sonnet-4-5',
    path: '/messages',
    body: { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'ANSWER' }] },
  },
  google: {
    model: 'google:gemini-2.5-flash',
    path: '/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    body: { contents: [{ role: 'user', parts: [{ text: 'ANSWER' }] }] },
  },
} as const;

export interface AnswerCost {
  /** CPU per answer, µs: the provider model as the service builds it, through its fetch and merge. */
  modelUs: number;
  /** CPU per answer, µs: the service's fetch and merge, the body read as bytes. */
  fetchUs: number;
  /** CPU per answer, µs: a bare undici request, its SSE split and each event JSON-parsed. */
  bareUs: number;
}

/** `answers` answers of `chunks` text chunks each (one read each: no delay between them), per provider. */
export async function benchAnswer(answers = 3000, chunks = 5): Promise<Record<string, AnswerCost>> {
  const model = await startScriptedModel();
  model.script('ANSWER', () => ({ text: 'word'.repeat(chunks), chunkSize: 4 }));
  const provider = createModelProvider({
    connections: {
      openai: { type: 'openai', baseURL: model.url, api: 'chat', apiKey: 'bench' },
      anthropic: { type: 'anthropic', baseURL: model.url, apiKey: 'bench' },
      google: { type: 'google', baseURL: model.url, apiKey: 'bench' },
    },
    defaultProvider: 'openai',
    stallTimeoutMs: 120_000,
  });
  const guarded = stallGuardedFetch(120_000);
  const headers = { 'content-type': 'application/json', authorization: 'Bearer bench', 'x-api-key': 'bench', 'x-goog-api-key': 'bench' };
  const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'ANSWER' }] }];
  const results: Record<string, AnswerCost> = {};
  try {
    for (const [name, p] of Object.entries(PROVIDERS)) {
      const url = `${model.url}${p.path}`;
      const body = JSON.stringify(p.body);
      // As the loop calls it (run-agent.ts): the provider's own model, its stream read part by part.
      const languageModel = provider.model(p.model) as LanguageModelV3;
      const sdk = async () => {
        const { stream } = await languageModel.doStream({ prompt, includeRawChunks: false });
        const reader = stream.getReader();
        while (!(await reader.read()).done);
      };
      const fetched = async () => {
        const res = await guarded(url, { method: 'POST', body, headers });
        const reader = mergingBody(res.body!, dialectOf(url)).getReader();
        while (!(await reader.read()).done);
      };
      const bare = async () => {
        const res = await request(url, { method: 'POST', body, headers });
        let pending = '';
        for await (const chunk of res.body) {
          pending += (chunk as Buffer).toString();
          for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
            const data = /^data: (.*)$/m.exec(pending.slice(0, end))?.[1];
            pending = pending.slice(end + 2);
            if (data?.startsWith('{')) JSON.parse(data);
          }
        }
      };
      // Two passes of the three in turn, each after a warm-up: the second pass's figures are kept.
      const costs = { modelUs: 0, fetchUs: 0, bareUs: 0 };
      for (let pass = 0; pass < 2; pass++) {
        costs.modelUs = await cpuPerCall(sdk, answers);
        costs.fetchUs = await cpuPerCall(fetched, answers);
        costs.bareUs = await cpuPerCall(bare, answers);
      }
      results[name] = costs;
    }
  } finally {
    await model.close();
  }
  return results;
}

/** This process's CPU per call of `f`, µs, over `n` calls in a row after `n / 10` to warm up. */
async function cpuPerCall(f: () => Promise<void>, n: number): Promise<number> {
  for (let i = 0; i < n / 10; i++) await f();
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}
