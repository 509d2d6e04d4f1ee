import { stepCountIs, streamText, tool, zodSchema, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import type { z } from 'zod';
import type { StopReason } from '../shapes/artifact.ts';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import type { ToolContext, WorkspaceTool } from '../tools/tool-types.ts';
import { compact } from './compaction.ts';
import type { CompleteResult } from './complete-tool.ts';
import { isStall } from './stall-guard.ts';
import { toUsage } from './usage.ts';

/** What the loop reports as it runs; the runner turns these into stored events. */
export interface AgentObserver {
  stepStarted(step: number): void;
  textDelta(step: number, text: string): void;
  toolCall(step: number, call: { toolCallId: string; toolName: string; input: unknown }): void;
  toolResult(step: number, result: { toolCallId: string; toolName: string; output: unknown; isError: boolean }): void;
  /** A compaction call to the compaction model is about to start. */
  compactionStarted?(): void;
  /** Any part of the model's answer arrived (liveness). */
  modelActivity?(): void;
  /** A steering message goes to the model with the step about to start. */
  messageReceived(step: number, text: string): void;
  /**
   * Once per finished step: the usage the SDK gives for it (billing is done by the model guard) and
   * the messages the step added to the conversation (steering messages delivered before it, the
   * model's answer, the tool results), to be stored with the step.
   */
  stepFinished(step: number, finishReason: string, usage: Usage, added: ModelMessage[]): void;
  /** The conversation was compacted before `step`: it now is `conversation`. */
  compacted(step: number, info: { beforeTokens: number; afterTokens: number; model: string }, conversation: ModelMessage[]): void;
}

export interface CompactionOptions {
  /** Compact before a step once the previous step's input tokens reached this. */
  atTokens: number;
  model: LanguageModel;
  modelId: string;
}

/** `S`: what `beforeCall` answers to stop a run (the runner's budget pause). */
export interface RunAgentOptions<S = unknown> {
  model: LanguageModel;
  system: string;
  /** The conversation so far: the kickoff prompt, and for a follow-up or a resume what came after. */
  messages: ModelMessage[];
  /** Steps the task already finished (a resumed task); the next one is `doneSteps + 1`. */
  doneSteps?: number;
  tools: WorkspaceTool[];
  toolContext: ToolContext;
  /** The task's step limit, counting steps done before a resume. */
  maxSteps: number;
  maxRetries: number;
  temperature?: number;
  signal: AbortSignal;
  observer: AgentObserver;
  /** Steering messages waiting for the next step (each is taken once). */
  takeMessages?: () => string[];
  /** Asked before every model call: a reason to stop here (a budget reached), or null to go on. */
  beforeCall?: () => S | null;
  compaction?: CompactionOptions;
}

export interface AgentRunResult<S = unknown> {
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
  /** What `beforeCall` answered when it stopped the run. */
  stoppedBy: S | null;
}

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
 * Runs one subagent, one model call per step, over a conversation this loop owns: before each step
 * it delivers waiting steering messages and compacts a conversation grown past its threshold; after
 * each it hands the step's messages to the observer. It ends when `complete` succeeds, the model
 * answers without a tool call, or the step limit is reached. The model is expected to be wrapped by
 * `guardModel`, which bills each call as it ends.
 */
export async function runAgent<S>(opts: RunAgentOptions<S>): Promise<AgentRunResult<S>> {
  const { observer } = opts;
  const tools = toToolSet(opts.tools, opts.toolContext);
  const conversation = [...opts.messages];
  let step = opts.doneSteps ?? 0;
  let finalText = '';
  let complete: CompleteResult | null = null;
  let lastFinishReason = '';
  let lastInputTokens = 0;
  let error: unknown = null;
  const steering: string[] = [];
  let stoppedBy: S | null = null;

  while (step < opts.maxSteps && !complete && !error && !opts.signal.aborted) {
    stoppedBy = opts.beforeCall?.() ?? null;
    if (stoppedBy) break;
    if (opts.compaction && lastInputTokens >= opts.compaction.atTokens) {
      const compacted = await compact(conversation, opts.compaction, opts, lastInputTokens, () => observer.compactionStarted?.());
      if (compacted.error) {
        error = compacted.error;
        break;
      }
      if (compacted.changed) {
        conversation.splice(0, conversation.length, ...compacted.conversation);
        observer.compacted(step + 1, compacted.info, conversation);
      }
    }
    step += 1;
    const added: ModelMessage[] = [];
    for (const text of [...steering.splice(0), ...(opts.takeMessages?.() ?? [])]) {
      added.push({ role: 'user', content: text });
      observer.messageReceived(step, text);
    }
    conversation.push(...added);
    observer.stepStarted(step);
    const r = await runStep(step, conversation, tools, opts);
    if (r.text.trim()) finalText = r.text.trim();
    complete ??= r.complete;
    error ??= r.error;
    if (!r.finished) break;
    lastFinishReason = r.finishReason;
    lastInputTokens = r.usage.inputTokens;
    conversation.push(...r.messages);
    observer.stepFinished(step, r.finishReason, r.usage, [...added, ...r.messages]);
    if (r.finishReason !== 'tool-calls') {
      // The model answered, but a steering message came in meanwhile: it gets one more step.
      steering.push(...(opts.takeMessages?.() ?? []));
      if (steering.length === 0) break;
    }
  }
  const aborted = opts.signal.aborted;
  const stalled = !aborted && isStall(error);
  const stopReason: StopReason = complete
    ? 'complete'
    : step >= opts.maxSteps && lastFinishReason === 'tool-calls'
      ? 'max_steps'
      : 'text';
  return { finalText, complete, stopReason, error: aborted ? null : error, aborted, stalled, stoppedBy };
}

interface StepOutcome {
  /** The step ran to its end (its answer and tool results are known). */
  finished: boolean;
  finishReason: string;
  usage: Usage;
  text: string;
  complete: CompleteResult | null;
  messages: ModelMessage[];
  error: unknown;
}

/** Parts that carry something the model sent (the others are the SDK's own bookkeeping). */
const MODEL_CONTENT = new Set(['text-delta', 'reasoning-delta', 'tool-input-start', 'tool-input-delta', 'tool-call', 'finish-step']);

/** One model call and the tools it asked for. */
async function runStep<S>(step: number, conversation: ModelMessage[], tools: ToolSet, opts: RunAgentOptions<S>): Promise<StepOutcome> {
  const { observer } = opts;
  const out: StepOutcome = { finished: false, finishReason: '', usage: toUsage(undefined), text: '', complete: null, messages: [], error: null };
  const result = streamText({
    model: opts.model,
    system: opts.system,
    messages: conversation,
    tools,
    stopWhen: stepCountIs(1),
    maxRetries: opts.maxRetries,
    temperature: opts.temperature,
    abortSignal: opts.signal,
    // Errors arrive as `error` parts below; the default handler would only log them to stderr.
    onError: () => {},
  });
  try {
    for await (const part of result.fullStream) {
      if (MODEL_CONTENT.has(part.type)) observer.modelActivity?.();
      switch (part.type) {
        case 'text-delta':
          out.text += part.text;
          observer.textDelta(step, part.text);
          break;
        case 'tool-call':
          observer.toolCall(step, { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
          break;
        case 'tool-result':
          if (part.toolName === 'complete') out.complete = part.output as CompleteResult;
          observer.toolResult(step, { toolCallId: part.toolCallId, toolName: part.toolName, output: part.output, isError: false });
          break;
        case 'tool-error':
          observer.toolResult(step, { toolCallId: part.toolCallId, toolName: part.toolName, output: errorMessage(part.error), isError: true });
          break;
        case 'finish-step':
          out.finishReason = part.finishReason;
          out.usage = toUsage(part.usage);
          break;
        case 'error':
          out.error ??= part.error;
          break;
      }
    }
    if (!out.error && !opts.signal.aborted && out.finishReason) {
      out.messages = (await result.response).messages;
      out.finished = true;
    }
  } catch (err) {
    if (!opts.signal.aborted) out.error ??= err;
  }
  return out;
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : JSON.stringify(err);
}
