import type { LanguageModelV3, LanguageModelV3StreamPart, SharedV3ProviderOptions as ProviderOptions } from '@ai-sdk/provider';
import {
  InvalidToolInputError,
  NoSuchToolError,
  TypeValidationError,
  tool,
  zodSchema,
  type AssistantContent,
  type JSONValue,
  type LanguageModel,
  type ModelMessage,
  type ToolResultPart,
  type ToolSet,
} from 'ai';
import {
  asLanguageModelUsage,
  convertToLanguageModelPrompt,
  prepareCallSettings,
  prepareRetries,
  prepareToolsAndToolChoice,
  standardizePrompt,
} from 'ai/internal';
import type { z } from 'zod';
import type { StopReason } from '../shapes/artifact.ts';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import type { ToolContext, WorkspaceTool } from '../tools/tool-types.ts';
import { compact, type CompactionOptions } from './compaction.ts';
import { publicMessage } from '../errors/public-message.ts';
import { completeForModel, type CompleteResult } from './complete-tool.ts';
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
  /** The answered calls of step `step` ran (a resume after approval): their results, to be stored with that step. */
  answeredCallsRan?(step: number, added: ModelMessage[]): void;
}

/** A call as the permission rules see it, with their answer. */
export interface DecidedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  decision: 'allow' | 'ask' | 'deny';
  rule: string | null;
}

/** A call the caller answered while the task waited: run it (`allow`, with its input) or refuse it with `message`. */
export interface AnsweredCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  allow: boolean;
  message: string;
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
  takeMessages?: () => Promise<string[]> | string[];
  /** Asked before every model call: a reason to stop here (a budget reached), or null to go on. */
  beforeCall?: () => S | null | Promise<S | null>;
  /** Awaited once a call's answer is whole and before its tools run (the runner: its writes are stored). */
  beforeTools?: () => Promise<void>;
  /** The permission rules' answer for one call (`allow` for every call without it). */
  decide?: (call: { toolName: string; input: unknown }) => { decision: 'allow' | 'ask' | 'deny'; rule: string | null };
  /**
   * Calls of a step asked for approval (`decide` said `ask`): the others of the step ran (or were
   * refused); this answers the pause the run stops with, after the step is reported finished.
   */
  onAsk?: (step: number, calls: DecidedCall[]) => S;
  /** A resume after approval: the answered calls of step `doneSteps`, run (or refused) before the first model call. */
  answered?: AnsweredCall[];
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
 * The SDK converts a zod schema to JSON Schema unless it is handed a converted schema; conversion
 * costs milliseconds per tool, so each tool's is made once and kept.
 */
const converted = new WeakMap<z.ZodType, ReturnType<typeof zodSchema>>();
function toolSchema(schema: z.ZodType) {
  let s = converted.get(schema);
  if (!s) converted.set(schema, (s = zodSchema(schema)));
  return s;
}

/** The tools as the provider is sent them (name, description, JSON Schema), made once per run. */
async function providerTools(tools: WorkspaceTool[]) {
  const set: ToolSet = Object.fromEntries(tools.map((t) => [t.name, tool({ description: t.description, inputSchema: toolSchema(t.inputSchema) })]));
  return prepareToolsAndToolChoice({ tools: set, toolChoice: undefined, activeTools: undefined });
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
  // The conversation as given is checked once (the SDK's message schema); what the loop appends is
  // built here from the provider's parts and needs no checking. A conversation or a tool the SDK
  // refuses ends the run as a failed call would (streamText reported it the same way).
  let setup: RunSetup;
  let start: ModelMessage[];
  try {
    ({ messages: start } = await standardizePrompt({ system: opts.system, messages: opts.messages }));
    setup = {
      model: opts.model as LanguageModelV3,
      tools: new Map(opts.tools.map((t) => [t.name, t])),
      callTools: await providerTools(opts.tools),
      system: opts.system,
    };
  } catch (error) {
    return { finalText: '', complete: null, stopReason: 'text', error, aborted: false, stalled: false, stoppedBy: null };
  }
  const conversation = [...start];
  let step = opts.doneSteps ?? 0;
  let finalText = '';
  let complete: CompleteResult | null = null;
  let lastFinishReason = '';
  let lastInputTokens = 0;
  let error: unknown = null;
  const steering: string[] = [];
  let stoppedBy: S | null = null;

  if (opts.answered && opts.answered.length > 0 && !opts.signal.aborted) {
    const ran = await runAnswered(step, opts.answered, setup, opts);
    complete ??= ran.complete;
    conversation.push(...ran.messages);
    opts.observer.answeredCallsRan?.(step, ran.messages);
  }

  while (step < opts.maxSteps && !complete && !error && !opts.signal.aborted) {
    stoppedBy = (await opts.beforeCall?.()) ?? null;
    if (stoppedBy) break;
    if (opts.compaction && lastInputTokens >= opts.compaction.atTokens) {
      const compacted = await compact({
        conversation,
        compaction: opts.compaction,
        signal: opts.signal,
        maxRetries: opts.maxRetries,
        beforeTokens: lastInputTokens,
        onCall: () => observer.compactionStarted?.(),
      });
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
    for (const text of [...steering.splice(0), ...((await opts.takeMessages?.()) ?? [])]) {
      added.push({ role: 'user', content: text });
      observer.messageReceived(step, text);
    }
    conversation.push(...added);
    observer.stepStarted(step);
    const r = await runStep(step, conversation, setup, opts);
    if (r.text.trim()) finalText = r.text.trim();
    complete ??= r.complete;
    error ??= r.error;
    if (!r.finished) break;
    lastFinishReason = r.finishReason;
    lastInputTokens = r.usage.inputTokens;
    conversation.push(...r.messages);
    observer.stepFinished(step, r.finishReason, r.usage, [...added, ...r.messages]);
    if (r.asking.length > 0 && opts.onAsk && !complete) {
      stoppedBy = opts.onAsk(step, r.decided);
      break;
    }
    if (r.finishReason !== 'tool-calls') {
      // The model answered, but a steering message came in meanwhile: it gets one more step.
      steering.push(...((await opts.takeMessages?.()) ?? []));
      if (steering.length === 0) break;
    }
  }
  const aborted = opts.signal.aborted;
  const stalled = !aborted && isStall(error);
  const stopReason: StopReason = complete ? 'complete' : step >= opts.maxSteps && lastFinishReason === 'tool-calls' ? 'max_steps' : 'text';
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
  /** Calls the permission rules sent to the caller for approval (they did not run). */
  asking: DecidedCall[];
  /** Every call of the step that reached its tools, with the rules' answer. */
  decided: DecidedCall[];
}

/**
 * Parts of a provider stream that carry something the model sent. Not its end: that arrives after
 * the step's tool calls, which already put the task in its tool phase.
 */
const MODEL_CONTENT = new Set(['text-delta', 'reasoning-delta', 'tool-input-start', 'tool-input-delta', 'tool-call']);

/** What a run prepares once and every step uses. */
interface RunSetup {
  model: LanguageModelV3;
  tools: Map<string, WorkspaceTool>;
  callTools: Awaited<ReturnType<typeof providerTools>>;
  system: string;
}

type ProviderPart = LanguageModelV3StreamPart;
type AssistantPart = Exclude<AssistantContent, string>[number];

/**
 * One model call and the tools it asked for. The loop drives the provider model's own stream
 * (`doStream`) rather than the SDK's `streamText`: one reader over the provider's parts instead of
 * a dozen web-stream layers per chunk, with the same conversions the SDK makes (prompt, tools,
 * retries, usage, tool input validation, the step's response messages).
 */
async function runStep<S>(step: number, conversation: ModelMessage[], setup: RunSetup, opts: RunAgentOptions<S>): Promise<StepOutcome> {
  const { observer, signal } = opts;
  const out: StepOutcome = {
    finished: false,
    finishReason: '',
    usage: toUsage(undefined),
    text: '',
    complete: null,
    messages: [],
    error: null,
    asking: [],
    decided: [],
  };
  /** The assistant's content in the order it arrived; open text and reasoning parts by id. */
  const content: AssistantPart[] = [];
  type OpenPart = { type: 'text' | 'reasoning'; text: string; providerOptions?: ProviderOptions };
  const open = { text: new Map<string, OpenPart>(), reasoning: new Map<string, OpenPart>() };
  const calls: Array<{ toolCallId: string; toolName: string; input: unknown; tool: WorkspaceTool }> = [];
  const results: ToolResultPart[] = [];
  const record = (r: { toolCallId: string; toolName: string; output: unknown; isError: boolean }) => {
    // A tool that ends after the run was aborted reports to no one: the task has ended.
    if (signal.aborted) return;
    results.push({ type: 'tool-result', toolCallId: r.toolCallId, toolName: r.toolName, output: modelOutput(r.output, r.isError) });
    observer.toolResult(step, r);
  };
  const append = (type: 'text' | 'reasoning', id: string, delta: string, providerMetadata?: ProviderOptions) => {
    let part = open[type].get(id);
    if (!part) {
      part = { type, text: '', providerOptions: providerMetadata };
      open[type].set(id, part);
      content.push(part);
    }
    part.text += delta;
    if (providerMetadata) part.providerOptions = providerMetadata;
  };
  try {
    const prompt = await convertToLanguageModelPrompt({
      prompt: { system: setup.system, messages: conversation },
      supportedUrls: await setup.model.supportedUrls,
      download: undefined,
      abortSignal: signal,
    });
    const { retry } = prepareRetries({ maxRetries: opts.maxRetries, abortSignal: signal });
    const { stream } = await retry(() =>
      setup.model.doStream({
        ...prepareCallSettings({ temperature: opts.temperature }),
        tools: setup.callTools.tools,
        toolChoice: setup.callTools.toolChoice,
        prompt,
        abortSignal: signal,
        includeRawChunks: false,
      }),
    );
    const reader = stream.getReader();
    let ended = false;
    try {
      for (;;) {
        const { done, value: part } = await reader.read();
        if (done) {
          ended = true;
          break;
        }
        if (MODEL_CONTENT.has(part.type)) observer.modelActivity?.();
        switch (part.type) {
          case 'text-start':
          case 'reasoning-start':
            append(part.type === 'text-start' ? 'text' : 'reasoning', part.id, '', part.providerMetadata);
            break;
          case 'text-delta':
            if (part.delta.length === 0) break;
            append('text', part.id, part.delta, part.providerMetadata);
            observer.textDelta(step, part.delta);
            break;
          case 'reasoning-delta':
            append('reasoning', part.id, part.delta, part.providerMetadata);
            break;
          case 'text-end':
          case 'reasoning-end':
            if (part.providerMetadata) append(part.type === 'text-end' ? 'text' : 'reasoning', part.id, '', part.providerMetadata);
            break;
          case 'tool-call': {
            const call = parseToolCall(part, setup.tools);
            // As the SDK sends it back: a refused call's input only when it is an object.
            const input = call.tool || (typeof call.input === 'object' && call.input !== undefined) ? call.input : {};
            content.push({ type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input, providerOptions: part.providerMetadata });
            observer.toolCall(step, { toolCallId: part.toolCallId, toolName: part.toolName, input: call.input });
            if (call.tool) calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: call.input, tool: call.tool });
            else record({ toolCallId: part.toolCallId, toolName: part.toolName, output: errorMessage(call.error), isError: true });
            break;
          }
          case 'finish':
            out.finishReason = part.finishReason.unified;
            out.usage = toUsage(asLanguageModelUsage(part.usage));
            break;
          case 'error':
            out.error ??= part.error;
            break;
        }
      }
    } finally {
      // Left before the end (an observer threw): cancelling the call lets the guard bill what it
      // reported so far, as it does for an abort.
      if (!ended) await reader.cancel().catch(() => {});
      // The step's text is what its text parts hold, whatever ended the read.
      out.text = content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    }
    // As the SDK does: tools run once the answer is whole, and only for an answer that asks for them.
    if (!out.error && (out.finishReason === 'tool-calls' || out.finishReason === 'stop')) {
      // What the call cost is stored before its tools act on the world (a crash then bills it).
      if (calls.length > 0) await untilAborted(Promise.resolve(opts.beforeTools?.()), signal);
      // Stopped meanwhile (cancelled, or the task's lease lost): no tool acts on the world.
      if (signal.aborted) calls.length = 0;
      // The permission rules: a denied call is a tool error naming its rule; an asked one waits.
      const allowed = calls.filter((c) => {
        const { decision, rule } = opts.decide?.({ toolName: c.toolName, input: c.input }) ?? { decision: 'allow' as const, rule: null };
        const decided = { toolCallId: c.toolCallId, toolName: c.toolName, input: c.input, decision, rule };
        out.decided.push(decided);
        if (decision === 'deny') record({ toolCallId: c.toolCallId, toolName: c.toolName, output: deniedBy(rule), isError: true });
        if (decision === 'ask') out.asking.push(decided);
        return decision === 'allow';
      });
      await untilAborted(Promise.all(allowed.map((c) => runCall(c, opts, record, (done) => (out.complete = done)))), signal);
    }
    if (!out.error && !signal.aborted && out.finishReason) {
      out.messages = responseMessages(content, results);
      out.finished = true;
    }
  } catch (err) {
    if (!signal.aborted) out.error ??= err;
  }
  return out;
}

/** Runs one call of a tool and records its result (`onComplete`: `complete` succeeded). */
async function runCall<S>(
  c: { toolCallId: string; toolName: string; input: unknown; tool: WorkspaceTool },
  opts: RunAgentOptions<S>,
  record: (r: { toolCallId: string; toolName: string; output: unknown; isError: boolean }) => void,
  onComplete: (done: CompleteResult) => void,
): Promise<void> {
  try {
    const output = await c.tool.execute(c.input, opts.toolContext);
    const finished = c.toolName === 'complete' ? (output as CompleteResult) : null;
    if (finished && !opts.signal.aborted) onComplete(finished);
    record({ toolCallId: c.toolCallId, toolName: c.toolName, output: finished ? completeForModel(finished) : output, isError: false });
  } catch (err) {
    record({ toolCallId: c.toolCallId, toolName: c.toolName, output: errorMessage(err), isError: true });
  }
}

/** What the model reads of a call the permission rules refused. */
const deniedBy = (rule: string | null) => `denied by the permission rule "${rule ?? 'deny'}"`;

/**
 * A resume after approval: the answered calls of `step` run (allowed: with their input, the
 * permission rules asked again, so a deny still applies) or are refused with the caller's message.
 * Answers the tool message they add, and `complete`'s result if it was among them.
 */
async function runAnswered<S>(
  step: number,
  answered: AnsweredCall[],
  setup: RunSetup,
  opts: RunAgentOptions<S>,
): Promise<{ messages: ModelMessage[]; complete: CompleteResult | null }> {
  const results: ToolResultPart[] = [];
  let complete: CompleteResult | null = null;
  const record = (r: { toolCallId: string; toolName: string; output: unknown; isError: boolean }) => {
    if (opts.signal.aborted) return;
    results.push({ type: 'tool-result', toolCallId: r.toolCallId, toolName: r.toolName, output: modelOutput(r.output, r.isError) });
    opts.observer.toolResult(step, r);
  };
  await untilAborted(
    Promise.all(
      answered.map(async (a) => {
        const tool = setup.tools.get(a.toolName);
        const again = opts.decide?.({ toolName: a.toolName, input: a.input });
        if (!a.allow) return record({ toolCallId: a.toolCallId, toolName: a.toolName, output: a.message, isError: true });
        if (again?.decision === 'deny') return record({ toolCallId: a.toolCallId, toolName: a.toolName, output: deniedBy(again.rule), isError: true });
        if (!tool) return record({ toolCallId: a.toolCallId, toolName: a.toolName, output: `tool "${a.toolName}" is no longer offered`, isError: true });
        await runCall({ ...a, tool }, opts, record, (done) => (complete = done));
      }),
    ),
    opts.signal,
  );
  return { messages: results.length > 0 ? [{ role: 'tool', content: results }] : [], complete };
}

/**
 * A tool call's input checked against its tool's schema, the SDK's way: an unknown tool or input
 * that does not parse or validate becomes the error the model reads back; the input kept is the
 * parsed JSON when there is one.
 */
function parseToolCall(
  part: Extract<ProviderPart, { type: 'tool-call' }>,
  tools: Map<string, WorkspaceTool>,
): { input: unknown; tool?: WorkspaceTool; error?: unknown } {
  const text = part.input.trim() === '' ? '{}' : part.input;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return { input: {}, error: new InvalidToolInputError({ toolName: part.toolName, toolInput: part.input, cause }) };
  }
  const found = tools.get(part.toolName);
  if (!found) return { input: value, error: new NoSuchToolError({ toolName: part.toolName, availableTools: [...tools.keys()] }) };
  const parsed = found.inputSchema.safeParse(value);
  if (!parsed.success) {
    const cause = TypeValidationError.wrap({ value, cause: parsed.error });
    return {
      input: typeof value === 'object' && value !== null ? value : {},
      error: new InvalidToolInputError({ toolName: part.toolName, toolInput: part.input, cause }),
    };
  }
  return { input: parsed.data, tool: found };
}

/** What the model reads of a tool's outcome, as the SDK writes it: text, JSON, or an error's text. */
function modelOutput(output: unknown, isError: boolean): ToolResultPart['output'] {
  if (isError) return { type: 'error-text', value: errorMessage(output) };
  if (typeof output === 'string') return { type: 'text', value: output };
  return { type: 'json', value: (output ?? null) as JSONValue };
}

/** The messages a step adds: the assistant's answer, then the tool results in the order of the calls. */
function responseMessages(content: AssistantPart[], results: ToolResultPart[]): ModelMessage[] {
  const messages: ModelMessage[] = [];
  const said = content.filter((p) => !(p.type === 'text' && p.text.length === 0));
  if (said.length > 0) messages.push({ role: 'assistant', content: said });
  if (results.length > 0) {
    const order = new Map(said.flatMap((p, i) => (p.type === 'tool-call' ? [[p.toolCallId, i] as const] : [])));
    const sorted = [...results].sort((a, b) => (order.get(a.toolCallId) ?? Infinity) - (order.get(b.toolCallId) ?? Infinity));
    messages.push({ role: 'tool', content: sorted });
  }
  return messages;
}

/** Waits for `work`, or only until `signal` aborts (a tool that ignores the signal cannot hold the run). */
function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return publicMessage(err);
  return typeof err === 'string' ? err : JSON.stringify(err);
}
