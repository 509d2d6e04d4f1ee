/**
 * `npm run bench providers`: the service's per-step overhead on each provider (OpenAI, Anthropic,
 * Gemini), each against a bare ai-SDK loop on the same provider's package, in the same run, on the
 * scripted model server speaking that provider's protocol.
 */
import { startBareServer } from './bare.ts';
import { ROUNDS, WARMUP_TASKS, scriptCompare } from './compare.ts';
import { body, now, pct, startBenchService, warmUp } from './support.ts';

/** The steps of the compare task (write, read, list, complete). */
const STEPS = 4;

const MODELS = { openai: 'openai:gpt-4.1-mini', anthropic: 'anthropic:claude-sonnet-4-5', google: 'google:gemini-2.5-flash' } as const;

export async function benchProviders(sequential = 60) {
  const svc = await startBenchService({});
  scriptCompare(svc.model);
  await warmUp(svc.url);
  let index = 0;
  const once = async (model: string) => {
    const t = now();
    const i = index++;
    const res = await fetch(`${svc.url}/tasks?wait=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body(`COMPARE ${i}`, i), options: { model } }),
    });
    const out = JSON.parse(await res.text()) as { status: string };
    if (out.status !== 'completed') throw new Error(`task on ${model} ended ${out.status}`);
    return now() - t;
  };
  const results: Record<string, { service: number; bare: number; overheadPerStepMs: number }> = {};
  try {
    for (const [provider, model] of Object.entries(MODELS)) {
      for (let i = 1; i < WARMUP_TASKS; i++) await once(model);
      const bare = await startBareServer(svc.model.url, WARMUP_TASKS, ['--provider', provider]);
      const service: number[] = [];
      const loop: number[] = [];
      // Alternating rounds: a slow spell of this shared machine weighs on both sides alike.
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < sequential / ROUNDS; i++) service.push(await once(model));
        loop.push(...(await bare.run(sequential / ROUNDS)).latencies);
      }
      await bare.close();
      const s = pct(service, 50);
      const b = pct(loop, 50);
      results[provider] = { service: s, bare: b, overheadPerStepMs: (s - b) / STEPS };
    }
  } finally {
    await svc.close();
  }
  return results;
}
