import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, taskBody, taskEnd, type TestService } from './support/harness';

let svc: TestService;
beforeAll(async () => {
  // The test waits for 40 tasks by polling each: far past a client's rate limit on a slow machine.
  svc = await startService({ env: { MAX_CONCURRENT_TASKS: '6', RATE_LIMIT_PER_MINUTE: '1000000' } });
});
afterAll(() => svc.close());

/** A deterministic pseudo-random sequence, so a failure can be replayed. */
function random(seed: number) {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** Every groupBy, with and without the filters the roll-ups answer, and some they do not. */
function queries(day: string, nextDay: string): string[] {
  const groupBys = ['', 'user', 'parentTask', 'subagentType', 'model', 'day'];
  const filters = [
    '',
    'userId=u-1',
    'parentTaskId=P-2',
    'subagent_type=explore',
    'model=gpt-4.1',
    `from=${day}&to=${nextDay}`,
    'userId=u-0&model=gpt-4.1-mini',
    `from=${day}T06:00:00Z`,
  ];
  return filters.flatMap((f) => groupBys.map((g) => [f, g && `groupBy=${g}`].filter(Boolean).join('&')));
}

describe('usage roll-ups', () => {
  it('always equal the sums of the raw records, after a random workload with cancels, shells and unpriced models', async () => {
    const rnd = random(42);
    const models = ['gpt-4.1-mini', 'gpt-4.1', 'my-unpriced-model'];
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const marker = `ROLLUP-${i}`;
      const steps = 1 + Math.floor(rnd() * 3);
      const slow = rnd() < 0.2;
      svc.model.script(marker, (ctx) =>
        ctx.turn < steps
          ? {
              delayMs: slow ? 300 : 0,
              toolCalls: [{ name: 'list_files', args: {} }],
              usage: { input: 50 + Math.floor(rnd() * 500), output: 5 + Math.floor(rnd() * 50), cached: Math.floor(rnd() * 40) },
            }
          : { toolCalls: [{ name: 'complete', args: { summary: 'ok', paths: [] } }], usage: { input: 20, output: 2 } },
      );
      const shell = rnd() < 0.15;
      const body = shell
        ? taskBody({ subagent_type: 'shell', prompt: undefined, command: 'true', context: { parentTaskId: `P-${i % 4}`, userId: `u-${i % 3}` } })
        : taskBody({
            subagent_type: rnd() < 0.5 ? 'general' : 'explore',
            prompt: marker,
            options: { model: models[Math.floor(rnd() * models.length)] },
            context: { parentTaskId: `P-${i % 4}`, userId: `u-${i % 3}` },
          });
      const res = await svc.inject({ method: 'POST', url: '/tasks', payload: body });
      expect(res.statusCode).toBe(202);
      ids.push(res.json().id);
      if (slow && rnd() < 0.7) {
        await new Promise((r) => setTimeout(r, 50 + rnd() * 200));
        await svc.inject({ method: 'POST', url: `/tasks/${res.json().id}/cancel` });
      }
    }
    const ended = await Promise.all(ids.map((id) => taskEnd(svc, id)));
    expect(new Set(ended.map((t) => t.status))).toContain('aborted');

    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    for (const q of queries(today, tomorrow)) {
      const fast = await svc.inject({ url: `/usage?${q}` });
      const raw = await svc.inject({ url: `/usage?${q}${q ? '&' : ''}source=records` });
      // Two refusals would be equal too: both must be answers.
      expect([q, fast.statusCode, raw.statusCode]).toEqual([q, 200, 200]);
      expect({ q, ...fast.json() }).toEqual({ q, ...raw.json() });
    }
    const all = (await svc.inject({ url: '/usage' })).json().totals;
    // A task cancelled before it started has no record.
    expect(all.tasks).toBe(ended.filter((t) => t.startedAt !== null).length);
    expect(all.unpricedTokens).toBeGreaterThan(0);
  });
});
