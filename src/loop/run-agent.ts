import { stepCountIs, streamText, tool, zodSchema, type LanguageModel, type StopCondition, type ToolSet } from 'ai';
import type { z } from 'zod';
import type { StopReason } from '../shapes/artifact.ts';
import type { Usage } from '../shapes/usage.ts';
import type { ToolContext, WorkspaceTool } from '../tools/tool-types.ts';
import type { CompleteResult } from './complete-tool.ts';
import { isStall } from './stall-guard.ts';
import { toUsage } from './usage.ts';

/** What the loop reports as it runs; the runner turns these into stored events. */
export interface AgentObserver {
  stepStarted(step: number): void;
  textDelta(step: number, text: string): void;
  toolCall(step: number, call: { toolCallId: string; toolName: string; input: unknown }): void;
  toolResult(step: number, result: { toolCallId: string; toolName: string; output: unknown; isError: boolean }): void;
  /** Called once per finished step with the usage the SDK gives for it (billing is done by the model guard). */
  stepFinished(step: number, finishReason: string, usage: Usage): void;
}

export interface RunAgentOptions {
  model: LanguageModel;
  system: string;
  prompt: string;
  tools: WorkspaceTool[];
  toolContext: ToolContext;
  maxSteps: number;
  maxRetries: number;
  temperature?: number;
  signal: AbortSignal;
  observer: AgentObserver;
}

export interface AgentRunResult {
  /** The last non-empty text the model wrote: the summary when `complete` was never called. */
  finalText: string;
  complete: CompleteResult | null;
  stopReason: StopReason;
  /** Set when the provider failed (after the SDK's retries). */
  error: unknown;
  /** The caller's signal aborted the run. */
  aborted: boolean;
  /** The provider error was a stall (see stall-guard). */
  stalled: boolean;
}

/** Stops the loop once `complete` has succeeded (a failed `complete` goes back to the model). */
const completeSucceeded: StopCondition<ToolSet> = ({ steps }) =>
  steps[steps.length - 1]?.toolResults.some((r) => r.toolName === 'complete') ?? false;

/**
 * The SDK converts a zod schema to JSON Schema on every step unless it is handed a converted
 * schema; conversion costs milliseconds per tool, so each tool's is made once and kept.
 */
const converted = new WeakMap<z.ZodType, ReturnType<typeof zodSchema>>();
function toolSchema(schema: z.ZodType) {
  let s = converted.get(schema);
  if (!s) converted.set(schema, (s = zodSchema(schema)));
  return s;
}

/** Turns our workspace tools into the SDK's tool set, bound to one task's context. */
function toToolSet(tools: WorkspaceTool[], ctx: ToolContext): ToolSet {
  return Object.fromEntries(
    tools.map((t) => [
      t.name,
      tool({
        description: t.description,
        inputSchema: toolSchema(t.inputSchema),
        execute: (input: unknown) => t.execute(input, ctx),
      }),
    ]),
  );
}

/**
 * Runs one subagent: a fresh conversation whose only user message is the prompt, until `complete`
 * succeeds, the model answers without a tool call, or the step limit is reached. The model is
 * expected to be wrapped by `guardModel`, which bills each call as it ends.
 */
export async function runAgent(opts: RunAgentOptions): Promise<AgentRunResult> {
  const { observer } = opts;
  let step = 0;
  let finalText = '';
  let stepText = '';
  let complete: CompleteResult | null = null;
  let lastFinishReason = '';
  let error: unknown = null;
  let aborted = false;

  const result = streamText({
    model: opts.model,
    system: opts.system,
    prompt: opts.prompt,
    tools: toToolSet(opts.tools, opts.toolContext),
    stopWhen: [stepCountIs(opts.maxSteps), completeSucceeded],
    maxRetries: opts.maxRetries,
    temperature: opts.temperature,
    abortSignal: opts.signal,
    // Errors arrive as `error` parts below; the default handler would only log them to stderr.
    onError: () => {},
  });

  try {
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'start-step':
          step += 1;
          stepText = '';
          observer.stepStarted(step);
          break;
        case 'text-delta':
          stepText += part.text;
          observer.textDelta(step, part.text);
          break;
        case 'tool-call':
          observer.toolCall(step, { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
          break;
        case 'tool-result':
          if (part.toolName === 'complete') complete = part.output as CompleteResult;
          observer.toolResult(step, {
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            output: part.output,
            isError: false,
          });
          break;
        case 'tool-error':
          observer.toolResult(step, {
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            output: errorMessage(part.error),
            isError: true,
          });
          break;
        case 'finish-step': {
          const stepUsage = toUsage(part.usage);
          lastFinishReason = part.finishReason;
          if (stepText.trim()) finalText = stepText.trim();
          observer.stepFinished(step, part.finishReason, stepUsage);
          break;
        }
        case 'abort':
          aborted = true;
          break;
        case 'error':
          error ??= part.error;
          break;
      }
    }
  } catch (err) {
    if (opts.signal.aborted) aborted = true;
    else error ??= err;
  }
  if (opts.signal.aborted) aborted = true;
  const stalled = !aborted && isStall(error);

  const stopReason: StopReason = complete
    ? 'complete'
    : step >= opts.maxSteps && lastFinishReason === 'tool-calls'
      ? 'max_steps'
      : 'text';
  return { finalText, complete, stopReason, error, aborted, stalled };
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : JSON.stringify(err);
}
