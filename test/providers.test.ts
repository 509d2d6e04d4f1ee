import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { streamText, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server';
import { startService, storedEvents, taskBody, type TestService } from './support/harness';

/**
 * Providers natively: a task on Anthropic's Messages API and one on the Gemini API, through the
 * real @ai-sdk/anthropic and @ai-sdk/google packages, against the scripted model server speaking
 * each protocol over real HTTP.
 */
let model: ScriptedModel;
let svc: TestService;
let dir: string;
const ANTHROPIC_KEY = 'sk-ant-test-secret-4242';
const GOOGLE_KEY = 'goog-test-secret-4242';

beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-providers-'));
  mkdirSync(path.join(dir, 'agents'));
  writeFileSync(
    path.join(dir, 'agents', 'claude.md'),
    '---\nname: claude\ndescription: On Claude\nmodel: anthropic:claude-sonnet-4-5\neffort: low\nmaxOutputTokens: 4000\n---\nWork on Claude.\n',
  );
  writeFileSync(
    path.join(dir, 'agents', 'gemini.md'),
    '---\nname: gemini\ndescription: On Gemini\nmodel: google:gemini-2.5-flash\neffort: medium\ntopP: 0.8\nmaxOutputTokens: 3000\n---\nWork on Gemini.\n',
  );
  writeFileSync(
    path.join(dir, 'agents', 'claude-compacting.md'),
    '---\nname: claude-compacting\ndescription: On Claude, compacted by Gemini\nmodel: anthropic:claude-sonnet-4-5\ncompactAtTokens: 1000\ncompactionModel: google:gemini-2.5-flash\n---\nWork.\n',
  );
  writeFileSync(
    path.join(dir, 'agents', 'mixed.md'),
    '---\nname: mixed\ndescription: Claude, then Gemini, then OpenAI\nmodel: [anthropic:claude-sonnet-4-5, google:gemini-2.5-flash, gpt-4.1-mini]\n---\nWork on.\n',
  );
  svc = await startService({
    model,
    dir,
    env: {
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      GOOGLE_BASE_URL: model.url,
      GOOGLE_GENERATIVE_AI_API_KEY: GOOGLE_KEY,
      PROVIDERS: JSON.stringify({ local: { type: 'openai-compatible', baseURL: model.url, apiKeyEnv: 'LOCAL_KEY' } }),
      LOCAL_KEY: 'local-secret-77',
    },
  });
});
afterAll(async () => {
  await svc?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (payload: object) => {
  const res = await svc.inject({ method: 'POST', url: '/tasks?wait=true', payload });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.parse(res.body.trim());
};
const requestsOf = (marker: string) => model.requests.filter((r) => JSON.stringify(r.body.messages).includes(marker));

/** Two steps: a tool call that reads a file, then `complete` reading back what the tool said. */
function toolThenComplete(marker: string, usage: Array<{ input: number; output: number; cached?: number; cacheWrite?: number; reasoning?: number }>) {
  const seen: string[] = [];
  model.script(marker, (ctx) => {
    if (ctx.turn === 0) return { text: 'Reading it.', toolCalls: [{ name: 'write_file', args: { path: `${marker}.txt`, content: 'hello' } }], usage: usage[0] };
    seen.push(ctx.toolResults[0]?.content ?? '');
    return { toolCalls: [{ name: 'complete', args: { summary: `done on ${ctx.model}`, paths: [] } }], usage: usage[1] };
  });
  return seen;
}

describe('a task on Anthropic', () => {
  it('runs to its end with tool calls, bills cache reads and writes at their prices, and marks cache breakpoints at every step', async () => {
    const seen = toolThenComplete('ANTH-RUN', [
      { input: 10_000, output: 200, cacheWrite: 8_000 },
      { input: 12_000, output: 100, cached: 8_000, cacheWrite: 3_000, reasoning: 40 },
    ]);
    const done = await run(taskBody({ subagent_type: 'claude', prompt: 'ANTH-RUN', context: { parentTaskId: 'T-anth', userId: 'u-anth' } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'done on claude-sonnet-4-5', model: 'anthropic:claude-sonnet-4-5', steps: 2 });
    expect(seen[0]).toContain('ANTH-RUN.txt');
    // Input counts cache reads and writes; output counts the thinking.
    expect(done.usage).toMatchObject({ inputTokens: 22_000, outputTokens: 300, cachedInputTokens: 8_000, reasoningTokens: 40 });
    // claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 cache write, $15 output per MTok.
    // Step 1: 2,000 × 3 + 8,000 × 3.75 + 200 × 15 = 6,000 + 30,000 + 3,000 = 39,000 µ$.
    // Step 2: 1,000 × 3 + 8,000 × 0.3 + 3,000 × 3.75 + 100 × 15 = 3,000 + 2,400 + 11,250 + 1,500 = 18,150 µ$.
    expect(done.usage.costMicroUsd).toBe(39_000 + 18_150);

    const sent = requestsOf('ANTH-RUN');
    expect(sent.map((r) => r.api)).toEqual(['anthropic', 'anthropic']);
    expect(sent[0].headers['x-api-key']).toBe(ANTHROPIC_KEY);
    for (const r of sent) {
      const body = r.body as unknown as { system: Array<{ cache_control?: unknown }>; messages: Array<{ content: Array<{ cache_control?: unknown }> }> };
      // The system prompt and the conversation so far (its last block) are cache breakpoints.
      expect(body.system.at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
      const raw = r.raw as { messages: Array<{ content: Array<{ cache_control?: unknown }> }> };
      expect(raw.messages.at(-1)!.content.at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
      // effort: low on claude-sonnet-4-5 is extended thinking with a budget, on top of the output limit.
      expect(r.body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 4000 + 2048 });
    }
  });

  it("sends a task's own topP and output limit, and no thinking without an effort", async () => {
    model.script('ANTH-TOPP', [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
    const options = { model: 'anthropic:claude-haiku-4-5', topP: 0.7, maxOutputTokens: 900 };
    const done = await run(taskBody({ prompt: 'ANTH-TOPP', options, context: { parentTaskId: 'T-anth-topp', userId: 'u-anth' } }));
    expect(done).toMatchObject({ status: 'completed', model: 'anthropic:claude-haiku-4-5' });
    const [sent] = requestsOf('ANTH-TOPP');
    expect(sent.body).toMatchObject({ model: 'claude-haiku-4-5', top_p: 0.7, max_tokens: 900 });
    expect(sent.body).not.toHaveProperty('thinking');
  });

  it("gives a fork child the parent's prefix byte for byte, with the breakpoints after it", async () => {
    model.script('ANTH-FORK-PARENT', (ctx) =>
      JSON.stringify(ctx.messages.at(-1)).includes('ANTH-FORK-CHILD')
        ? { text: 'child done', usage: { input: 2_000, cached: 1_800, output: 5 } }
        : { text: 'parent goes on', usage: { input: 1_900, cacheWrite: 1_800, output: 5 } },
    );
    const system = 'You are the orchestrator of ANTH-FORK. Plan, then delegate.';
    const messages: ModelMessage[] = [
      { role: 'user', content: 'ANTH-FORK-PARENT: sum up CHANGES.md' },
      { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }] },
      { role: 'user', content: 'Go on.' },
    ];
    // The parent: an orchestrator on Claude, its system prompt marked for the cache.
    const parent = createAnthropic({ baseURL: model.url, apiKey: ANTHROPIC_KEY })('claude-sonnet-4-5');
    await streamText({
      model: parent,
      system: { role: 'system', content: system, providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } },
      messages,
    }).consumeStream();
    const parentBody = model.requests.at(-1)!.raw as { system: unknown; messages: unknown[] };

    const child = await run({
      description: 'child',
      prompt: 'ANTH-FORK-CHILD: write the notes',
      context: { parentTaskId: 'T-anth-fork', userId: 'u' },
      fork: { system, messages },
      options: { model: 'anthropic:claude-sonnet-4-5' },
    });
    expect(child).toMatchObject({ status: 'completed', summary: 'child done', usage: { inputTokens: 2_000, cachedInputTokens: 1_800 } });
    const childBody = model.requests.at(-1)!.raw as { system: unknown; messages: Array<{ content: Array<{ cache_control?: unknown }> }> };
    expect(JSON.stringify(childBody.system)).toBe(JSON.stringify(parentBody.system));
    // Anthropic merges consecutive user turns: the parent's last one holds the child's prompt too.
    const prefix = parentBody.messages.length - 1;
    expect(JSON.stringify(childBody.messages.slice(0, prefix))).toBe(JSON.stringify(parentBody.messages.slice(0, prefix)));
    expect(childBody.messages.at(-1)!.content.at(-1)).toMatchObject({ text: 'ANTH-FORK-CHILD: write the notes', cache_control: { type: 'ephemeral' } });
  });

  it('takes an answer that ends without message_stop for a provider error, not for a finished task', async () => {
    model.script('ANTH-NOEND', [{ toolCalls: [{ name: 'list_files', args: {} }], usage: { input: 3_000, output: 10 }, fault: 'no-finish' }]);
    const done = await run(taskBody({ subagent_type: 'claude', prompt: 'ANTH-NOEND', context: { parentTaskId: 'T-anth-noend', userId: 'u-anth' } }));
    expect(done).toMatchObject({ status: 'error', error: { code: 'provider_error', message: expect.stringContaining('without a finish reason') }, steps: 0 });
    expect(done.usage).toMatchObject({ inputTokens: 3_000 });
  });

  it('bills an answer cut after message_start for its prompt', async () => {
    model.script('ANTH-CUT', [{ text: 'Half an answ', usage: { input: 5_000, output: 300, cached: 1_000 }, fault: 'cut-after-usage' }]);
    const done = await run(taskBody({ subagent_type: 'claude', prompt: 'ANTH-CUT', context: { parentTaskId: 'T-anth-cut', userId: 'u-anth' } }));
    expect(done).toMatchObject({ status: 'error', error: { code: 'provider_error' } });
    // The prompt's 5,000 tokens (1,000 from the cache) came with message_start, with its first
    // output token; the rest of the output never did.
    expect(done.usage).toMatchObject({ inputTokens: 5_000, cachedInputTokens: 1_000, outputTokens: 1 });
    expect(done.usage.costMicroUsd).toBe(4_000 * 3 + 1_000 * 0.3 + 15);
  });

  it('bills an answer cut after message_start, before any output, for its prompt (the failure comes while the SDK reads ahead)', async () => {
    model.script('ANTH-CUT-EARLY', [{ text: '', usage: { input: 5_000, output: 300, cached: 1_000 }, fault: 'cut-after-usage' }]);
    const done = await run(taskBody({ subagent_type: 'claude', prompt: 'ANTH-CUT-EARLY', context: { parentTaskId: 'T-anth-cut-early', userId: 'u-anth' } }));
    expect(done).toMatchObject({ status: 'error', error: { code: 'provider_error' } });
    // The SDK reads ahead before it hands the answer on; that read ends within message_start, so its usage is seen.
    expect(requestsOf('ANTH-CUT-EARLY')).toHaveLength(1);
    expect(done.usage).toMatchObject({ inputTokens: 5_000, cachedInputTokens: 1_000, outputTokens: 1 });
    expect(done.usage.costMicroUsd).toBe(4_000 * 3 + 1_000 * 0.3 + 15);
  });
});

describe('a task on Gemini', () => {
  it('runs to its end with tool calls, with exact tokens and cost, and its settings in thinkingConfig', async () => {
    const seen = toolThenComplete('GEM-RUN', [
      { input: 20_000, output: 500, reasoning: 300 },
      { input: 21_000, output: 100, cached: 20_000 },
    ]);
    const done = await run(taskBody({ subagent_type: 'gemini', prompt: 'GEM-RUN', context: { parentTaskId: 'T-gem', userId: 'u-gem' } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'done on gemini-2.5-flash', model: 'google:gemini-2.5-flash', steps: 2 });
    expect(seen[0]).toContain('GEM-RUN.txt');
    expect(done.usage).toMatchObject({ inputTokens: 41_000, outputTokens: 600, cachedInputTokens: 20_000, reasoningTokens: 300 });
    // gemini-2.5-flash: $0.30 input, $0.03 cached, $2.50 output per MTok.
    // 21,000 × 0.3 + 20,000 × 0.03 + 600 × 2.5 = 6,300 + 600 + 1,500 µ$.
    expect(done.usage.costMicroUsd).toBe(8_400);
    const sent = requestsOf('GEM-RUN');
    expect(sent.map((r) => r.api)).toEqual(['google', 'google']);
    expect(sent[0].headers['x-goog-api-key']).toBe(GOOGLE_KEY);
    for (const r of sent) {
      expect(r.body).toMatchObject({ generationConfig: { topP: 0.8, maxOutputTokens: 3000, thinkingConfig: { thinkingBudget: 8192 } } });
    }
  });

  it('bills an answer cut mid-answer from the usageMetadata Gemini already sent', async () => {
    model.script('GEM-CUT', [{ text: 'Half an answer, then nothing', usage: { input: 7_000, output: 300 }, fault: 'cut-after-usage' }]);
    const done = await run(taskBody({ subagent_type: 'gemini', prompt: 'GEM-CUT', context: { parentTaskId: 'T-gem-cut', userId: 'u-gem' } }));
    expect(done).toMatchObject({ status: 'error', error: { code: 'provider_error' } });
    expect(done.usage).toMatchObject({ inputTokens: 7_000, outputTokens: 0 });
    expect(done.usage.costMicroUsd).toBe(2_100);
  });
});

describe('compaction', () => {
  it('compacts a task on Claude with a compaction model on Gemini', async () => {
    model.script('XCOMPACT', (ctx) => {
      if (ctx.model === 'gemini-2.5-flash') return { text: 'SUMMARY: wrote three files.', usage: { input: 400, output: 20 } };
      if (JSON.stringify(ctx.messages).includes('SUMMARY:'))
        return { toolCalls: [{ name: 'complete', args: { summary: 'compacted', paths: [] } }], usage: { input: 300, output: 5 } };
      // The marker in the calls' inputs: the compaction call's excerpt carries it to this script.
      return { toolCalls: [{ name: 'write_file', args: { path: `XCOMPACT-${ctx.turn}.txt`, content: 'x' } }], usage: { input: 1_200, output: 5 } };
    });
    const done = await run(taskBody({ subagent_type: 'claude-compacting', prompt: 'XCOMPACT', context: { parentTaskId: 'T-xcompact', userId: 'u' } }));
    expect(done, JSON.stringify(done.error)).toMatchObject({
      status: 'completed',
      summary: 'compacted',
      usage: { compactions: 1, inputTokens: 3 * 1_200 + 400 + 300 },
    });
    expect(requestsOf('XCOMPACT').map((r) => r.api)).toEqual(['anthropic', 'anthropic', 'anthropic', 'google', 'anthropic']);
    const compacted = (await storedEvents(svc, done.id)).find((e) => e.type === 'context.compacted');
    expect(compacted?.data).toMatchObject({ model: 'google:gemini-2.5-flash' });
  });
});

describe('effort', () => {
  it('reaches each provider in its own terms, and is left out where a model takes none', async () => {
    const cases: Array<[string, string, (body: Record<string, unknown>) => void]> = [
      ['openai:gpt-5-mini', 'minimal', (b) => expect(b).toMatchObject({ reasoning_effort: 'minimal' })],
      ['gpt-4.1-mini', 'high', (b) => expect(b).not.toHaveProperty('reasoning_effort')],
      ['anthropic:claude-opus-4-5', 'medium', (b) => expect(b).toMatchObject({ output_config: { effort: 'medium' } })],
      ['anthropic:claude-3-5-haiku-latest', 'high', (b) => expect(b).not.toHaveProperty('thinking')],
      ['google:gemini-3-pro-preview', 'minimal', (b) => expect(b).toMatchObject({ generationConfig: { thinkingConfig: { thinkingLevel: 'low' } } })],
      ['google:gemini-2.0-flash', 'high', (b) => expect(b.generationConfig).not.toHaveProperty('thinkingConfig')],
    ];
    for (const [i, [id, effort, check]] of cases.entries()) {
      const marker = `EFFORT-${i}`;
      model.script(marker, [{ toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }] }]);
      const done = await run(taskBody({ prompt: marker, options: { model: id, effort }, context: { parentTaskId: `T-effort-${i}`, userId: 'u' } }));
      expect(done, id).toMatchObject({ status: 'completed', model: id });
      check(requestsOf(marker)[0].raw as Record<string, unknown>);
    }
  });
});

describe('model ids name their provider', () => {
  it('groups usage by provider:model, a bare id staying as it was', async () => {
    const res = await svc.inject({ method: 'GET', url: '/usage?groupBy=model' });
    expect(res.statusCode).toBe(200);
    const keys = (res.json().groups as Array<{ key: string }>).map((g) => g.key);
    expect(keys).toEqual(expect.arrayContaining(['anthropic:claude-sonnet-4-5', 'google:gemini-2.5-flash']));
    const agents = (await svc.inject({ method: 'GET', url: '/agents' })).json().agents as Array<{ type: string; model: string; effort?: string }>;
    expect(agents.find((a) => a.type === 'claude')).toMatchObject({ model: 'anthropic:claude-sonnet-4-5', effort: 'low' });
  });

  it('runs a task on a named PROVIDERS connection with its own key', async () => {
    model.script('NAMED-RUN', [{ toolCalls: [{ name: 'complete', args: { summary: 'local done', paths: [] } }], usage: { input: 50, output: 5 } }]);
    const done = await run(taskBody({ prompt: 'NAMED-RUN', options: { model: 'local:qwen3:8b' }, context: { parentTaskId: 'T-local', userId: 'u' } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'local done', model: 'local:qwen3:8b', usage: { inputTokens: 50, outputTokens: 5 } });
    const [sent] = requestsOf('NAMED-RUN');
    expect(sent).toMatchObject({ api: 'chat', authorization: 'Bearer local-secret-77', body: { model: 'qwen3:8b' } });
  });

  it('falls back across providers: Anthropic, then Gemini, then OpenAI', async () => {
    model.script('MIXED', (ctx) =>
      ctx.model === 'gpt-4.1-mini'
        ? { toolCalls: [{ name: 'complete', args: { summary: 'OpenAI answered', paths: [] } }], usage: { input: 100, output: 10 } }
        : { status: 529, errorMessage: `${ctx.model} overloaded` },
    );
    const done = await run(taskBody({ subagent_type: 'mixed', prompt: 'MIXED', context: { parentTaskId: 'T-mixed', userId: 'u' } }));
    expect(done).toMatchObject({ status: 'completed', summary: 'OpenAI answered', model: 'gpt-4.1-mini' });
    expect(requestsOf('MIXED').map((r) => `${r.api}:${r.body.model}`)).toEqual(['anthropic:claude-sonnet-4-5', 'google:gemini-2.5-flash', 'chat:gpt-4.1-mini']);
    const fallbacks = (await storedEvents(svc, done.id)).filter((e) => e.type === 'model.fallback').map((e) => e.data);
    expect(fallbacks).toMatchObject([
      { from: 'anthropic:claude-sonnet-4-5', to: 'google:gemini-2.5-flash' },
      { from: 'google:gemini-2.5-flash', to: 'gpt-4.1-mini' },
    ]);
  });
});

describe('an unknown provider', () => {
  // OpenAI's own API as the default: a prefix that names no provider is a mistake, not a model tag.
  const env = { OPENAI_BASE_URL: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/v1' };

  it('is refused in options.model with a 400 naming it', async () => {
    const own = await startService({ model, env });
    try {
      const payload = taskBody({ prompt: 'NOPE', options: { model: ['anthropic:claude-sonnet-4-5', 'antropic:claude-sonnet-4-5'] } });
      const res = await own.inject({ method: 'POST', url: '/tasks', payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('invalid_request');
      expect(res.json().error.details).toEqual([{ field: 'body.options.model.1', message: expect.stringContaining('unknown provider "antropic"') }]);
    } finally {
      await own.close();
    }
  });

  it('in a definition or a variable stops the start, naming it', async () => {
    const bad = mkdtempSync(path.join(tmpdir(), 'subagentd-providers-bad-'));
    // Each start in a folder (and so on a database) of its own: a start refused after its
    // database opened keeps it.
    const dirOf = (name: string) => {
      mkdirSync(path.join(bad, name, 'agents'), { recursive: true });
      return path.join(bad, name);
    };
    try {
      const typo = dirOf('a');
      writeFileSync(path.join(typo, 'agents', 'typo.md'), '---\nname: typo\ndescription: A typo\nmodel: antropic:claude-sonnet-4-5\n---\nWork.\n');
      await expect(startService({ model, dir: typo, env })).rejects.toThrow(
        /subagent definition "typo": model "antropic:claude-sonnet-4-5" names an unknown provider "antropic"/,
      );
      await expect(startService({ model, dir: dirOf('b'), env: { ...env, SMALL_MODEL: 'gogle:gemini-2.5-flash' } })).rejects.toThrow(
        /SMALL_MODEL: .*unknown provider "gogle"/,
      );
      await expect(startService({ model, dir: dirOf('c'), env: { ...env, DEFAULT_PROVIDER: 'antropic' } })).rejects.toThrow(
        /DEFAULT_PROVIDER: unknown provider "antropic"/,
      );
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
