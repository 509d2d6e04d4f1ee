import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from 'ai';
import { z } from 'zod';
import { startScriptedModel, type ScriptedModel, type ScriptedTurn } from '../../scripted-model/server.ts';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import { defineTool, type ToolContext } from '../tools/tool-types.ts';
import { openWorkspace } from '../workspace/workspace.ts';
import type { TaskHooks } from '../hooks/task-hooks.ts';
import { createCompleteTool } from '../tools/complete.ts';
import { guardModel } from './model-guard.ts';
import { createModelProvider } from './model-provider.ts';
import { runAgent, type AgentObserver } from './run-agent.ts';

// The loop alone, over the real provider and SDK, against the scripted model over real HTTP.
let model: ScriptedModel;
let dir: string;
beforeAll(async () => {
  model = await startScriptedModel();
  dir = mkdtempSync(path.join(tmpdir(), 'subagentd-loop-'));
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A read-only tool of no arguments that does `execute`. */
const testTool = (name: string, description: string, execute: () => Promise<string>) =>
  defineTool({ name, description, inputSchema: z.object({}), readOnly: true, execute });

const failing = testTool('explode', 'always fails', async () => {
  throw new Error('the tool broke');
});

/** A tool that ignores the abort signal and answers late. */
const stubborn = testTool('stubborn', 'answers after 400 ms whatever happens', async () => {
  await new Promise((r) => setTimeout(r, 400));
  return 'late';
});

/** A tool that counts its runs. */
let countedRuns = 0;
const counted = testTool('counted', 'counts its runs', async () => {
  countedRuns++;
  return 'ran';
});

let runs = 0;
async function run(
  turns: ScriptedTurn[],
  opts: {
    maxSteps?: number;
    signal?: AbortSignal;
    stallTimeoutMs?: number;
    takeMessages?: () => string[];
    messages?: ModelMessage[];
    stepStarted?: (step: number) => Promise<void> | undefined;
    hooks?: TaskHooks;
  } = {},
) {
  const marker = `LOOP-${++runs}`;
  model.script(marker, turns);
  const seen: string[] = [];
  const billed: Usage[] = [];
  const observer: AgentObserver = {
    stepStarted: (step) => {
      seen.push(`step ${step}`);
      return opts.stepStarted?.(step);
    },
    textDelta: () => {},
    toolCall: (step, c) => seen.push(`call ${c.toolName}`),
    toolResult: (step, r) => seen.push(`result ${r.toolName}${r.isError ? ` error: ${String(r.output)}` : ''}`),
    stepFinished: (step, reason) => seen.push(`finished ${step} ${reason}`),
    messageReceived: (step, text) => seen.push(`message ${text}`),
    compacted: (step, info) => seen.push(`compacted ${info.beforeTokens}`),
  };
  const signal = opts.signal ?? new AbortController().signal;
  const toolContext: ToolContext = {
    workspace: await openWorkspace(dir, marker),
    signal,
    limits: { bashTimeoutMs: 1000, bashMaxOutputBytes: 1000 },
    sandbox: { kind: 'none', wrap: (_ws, argv) => ({ argv, env: { PATH: '/usr/bin:/bin' } }), run: () => Promise.reject(new Error('no commands here')) },
  };
  const provider = createModelProvider({ connections: { openai: { type: 'openai', baseURL: model.url, api: 'chat' } }, defaultProvider: 'openai' });
  const result = await runAgent({
    model: guardModel(provider.model('m'), { onUsage: (u) => void billed.push(u), stallTimeoutMs: opts.stallTimeoutMs ?? 10_000, maxRetries: 0 }),
    system: 'test',
    messages: opts.messages ?? [{ role: 'user', content: marker }],
    tools: [createCompleteTool(undefined), failing, stubborn, counted],
    toolContext,
    maxSteps: opts.maxSteps ?? 10,
    maxRetries: 0,
    signal,
    observer,
    takeMessages: opts.takeMessages,
    ...(opts.hooks && { hooks: opts.hooks }),
  });
  return { result, seen, billed, marker };
}

const complete = (summary: string): ScriptedTurn => ({ toolCalls: [{ name: 'complete', args: { summary, paths: [] } }], usage: { input: 10, output: 2 } });

describe('runAgent', () => {
  it('stops with `complete` once complete succeeds, and reports each step in order', async () => {
    const { result, seen, billed } = await run([complete('all done')]);
    expect(result).toMatchObject({ stopReason: 'complete', complete: { summary: 'all done' }, aborted: false, stalled: false, error: null });
    expect(seen).toEqual(['step 1', 'call complete', 'result complete', 'finished 1 tool-calls']);
    expect(billed).toEqual([{ inputTokens: 10, outputTokens: 2, totalTokens: 12, cachedInputTokens: 0, reasoningTokens: 0 }]);
  });

  it('sends no call before what stepStarted answers (the step before, stored) has settled', async () => {
    const before = model.requests.length;
    let sentWhenStored = -1;
    const { result } = await run([{ toolCalls: [{ name: 'explode', args: {} }] }, complete('after the store')], {
      stepStarted: (step) =>
        step === 2
          ? new Promise<void>((resolve) =>
              setTimeout(() => {
                sentWhenStored = model.requests.length - before;
                resolve();
              }, 150),
            )
          : undefined,
    });
    expect(result).toMatchObject({ stopReason: 'complete', complete: { summary: 'after the store' } });
    // The first call only: the second waited for the store.
    expect(sentWhenStored).toBe(1);
    expect(model.requests.length - before).toBe(2);
  });

  it('stops with `text` when the model answers without a tool call, keeping that text', async () => {
    const { result } = await run([{ text: 'I found nothing.', usage: { input: 5, output: 4 } }]);
    expect(result).toMatchObject({ stopReason: 'text', complete: null, finalText: 'I found nothing.' });
  });

  it('stops with `max_steps` when the limit ends a run that still calls tools', async () => {
    const { result, seen } = await run([{ toolCalls: [{ name: 'explode', args: {} }] }, { toolCalls: [{ name: 'explode', args: {} }] }], { maxSteps: 2 });
    expect(result.stopReason).toBe('max_steps');
    expect(seen.filter((s) => s.startsWith('step'))).toEqual(['step 1', 'step 2']);
  });

  it('gives a tool error back to the model and goes on', async () => {
    const { result, seen } = await run([{ toolCalls: [{ name: 'explode', args: {} }] }, complete('recovered')]);
    expect(seen).toContain('result explode error: the tool broke');
    expect(result).toMatchObject({ stopReason: 'complete', complete: { summary: 'recovered' }, error: null });
  });

  it('tells an abort by the caller from a stall of the model', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const cancelled = await run([{ delayMs: 5_000, ...complete('never') }], { signal: controller.signal });
    expect(cancelled.result).toMatchObject({ aborted: true, stalled: false, complete: null });

    const stalled = await run([{ fault: 'keepalive-only', chunkDelayMs: 50 }], { stallTimeoutMs: 300 });
    expect(stalled.result).toMatchObject({ aborted: false, stalled: true, complete: null });
    expect(stalled.result.error).toBeTruthy();
  });

  it('gives an unknown tool and input that fails its schema back to the model as errors, in call order', async () => {
    const { result, seen, marker } = await run([
      {
        toolCalls: [
          { name: 'no_such_tool', args: {} },
          { name: 'complete', args: { summary: 5 } },
        ],
        usage: { input: 5, output: 1 },
      },
      complete('fixed'),
    ]);
    expect(seen.slice(0, 5)).toEqual([
      'step 1',
      'call no_such_tool',
      expect.stringMatching(
        /^result no_such_tool error: Model tried to call unavailable tool 'no_such_tool'\. Available tools: complete, explode, stubborn, counted\.$/,
      ),
      'call complete',
      expect.stringMatching(/^result complete error: Invalid input for tool complete: /),
    ]);
    expect(result).toMatchObject({ stopReason: 'complete', complete: { summary: 'fixed' } });
    // The second request carries the assistant's two calls and both errors, in call order.
    const second = model.requests.filter((r) => JSON.stringify(r.body.messages).includes(marker))[1].body.messages;
    const tools = second.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.tool_call_id)).toEqual((second.find((m) => m.role === 'assistant')!.tool_calls as Array<{ id: string }>).map((c) => c.id));
    expect(String(tools[0].content)).toContain('unavailable tool');
  });

  it('ends a run whose conversation the SDK refuses as a failed call, before any model call', async () => {
    const requests = model.requests.length;
    const { result, seen, billed } = await run([complete('never')], { messages: [{ role: 'user', content: 42 } as unknown as ModelMessage] });
    expect(result).toMatchObject({ complete: null, aborted: false, stopReason: 'text' });
    expect(result.error).toBeTruthy();
    expect(seen).toEqual([]);
    expect(billed).toEqual([]);
    expect(model.requests.length).toBe(requests);
  });

  it('ends at once when aborted during a tool that ignores the signal, reporting no result for it', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 150);
    const { result, seen } = await run([{ toolCalls: [{ name: 'stubborn', args: {} }] }, complete('never')], { signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(400);
    expect(result).toMatchObject({ aborted: true, complete: null });
    await new Promise((r) => setTimeout(r, 450));
    expect(seen).toEqual(['step 1', 'call stubborn']);
  });

  it('runs no call when the task is stopped while its PreToolUse hook decides', async () => {
    const controller = new AbortController();
    // A cancel kills the hook; a hook that failed never blocks, so the call is let through.
    const hooks: TaskHooks = {
      before: async () => {
        controller.abort();
        return { decision: null, reason: null };
      },
      after: async () => [],
      stop: async () => null,
    };
    const before = countedRuns;
    const { result, seen } = await run([{ toolCalls: [{ name: 'counted', args: {} }] }, complete('never')], { signal: controller.signal, hooks });
    expect(result).toMatchObject({ aborted: true, complete: null });
    expect(countedRuns).toBe(before);
    expect(seen).toEqual(['step 1', 'call counted']);
  });

  it('delivers steering messages before the next step, and gives a model that already answered one more step', async () => {
    const turns: ScriptedTurn[] = [{ text: 'first answer', usage: { input: 5, output: 1 } }, complete('after the steer')];
    // The message comes in while step 1 runs: the loop's first look (before step 1) finds none, its
    // second (once the model has answered) finds it. Counted, not timed: a loaded machine cannot
    // move it.
    let looks = 0;
    const { result, seen } = await run(turns, { takeMessages: () => (++looks === 2 ? ['also check the tests'] : []) });
    expect(seen).toEqual(['step 1', 'finished 1 stop', 'message also check the tests', 'step 2', 'call complete', 'result complete', 'finished 2 tool-calls']);
    expect(result).toMatchObject({ stopReason: 'complete', complete: { summary: 'after the steer' } });
  });
});
