/** One step of the agent loop: one model call over the provider's own stream, then the tools it asked for. */
import type { LanguageModelV3StreamPart, SharedV3ProviderOptions as ProviderOptions } from '@ai-sdk/provider';
import { InvalidToolInputError, NoSuchToolError, TypeValidationError, type AssistantContent, type ModelMessage, type ToolResultPart } from 'ai';
import { asLanguageModelUsage, convertToLanguageModelPrompt, prepareCallSettings, prepareRetries } from 'ai/internal';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import type { WorkspaceTool } from '../tools/tool-types.ts';
import type { CompleteResult } from '../tools/complete.ts';
import { toUsage } from './usage.ts';
import type { CallRuling, DecidedCall, RunAgentOptions, RunSetup } from './agent-types.ts';
import { isWait, pullsOfResult } from '../util/pulled-stream.ts';
import { blockedBy, deniedBy, errorMessage, modelOutput, runCall, untilAborted } from './tool-calls.ts';

export interface StepOutcome {
  /** The step ran to its end (its answer and tool results are known). */
  finished: boolean;
  finishReason: string;
  usage: Usage;
  text: string;
  complete: CompleteResult | null;
  messages: ModelMessage[];
  error: unknown;
  /** Calls that wait on the caller: approvals the permission rules asked for, caller-run tools' calls (they did not run). */
  asking: DecidedCall[];
  /** Every call of the step that reached its tools, with the rules' answer. */
  decided: DecidedCall[];
}

/**
 * Parts of a provider stream that carry something the model sent. Not its end: that arrives after
 * the step's tool calls, which already put the task in its tool phase.
 */
const MODEL_CONTENT = new Set(['text-delta', 'reasoning-delta', 'tool-input-start', 'tool-input-delta', 'tool-call']);

type ProviderPart = LanguageModelV3StreamPart;
type AssistantPart = Exclude<AssistantContent, string>[number];

/**
 * One model call and the tools it asked for. The loop drives the provider model's own stream
 * (`doStream`) rather than the SDK's `streamText`: one reader over the provider's parts instead of
 * a dozen web-stream layers per chunk, with the same conversions the SDK makes (prompt, tools,
 * retries, usage, tool input validation, the step's response messages).
 */
export async function runStep<S>(step: number, conversation: ModelMessage[], setup: RunSetup, opts: RunAgentOptions<S>): Promise<StepOutcome> {
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
  const calls: Array<{ toolCallId: string; toolName: string; input: unknown; tool: WorkspaceTool; step: number; index: number }> = [];
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
    const answer = await retry(() =>
      setup.model.doStream({
        ...prepareCallSettings({ temperature: opts.temperature }),
        tools: setup.callTools.tools,
        toolChoice: setup.callTools.toolChoice,
        prompt,
        abortSignal: signal,
        includeRawChunks: false,
        ...(opts.promptCacheKey && { providerOptions: { openai: { promptCacheKey: opts.promptCacheKey } } }),
      }),
    );
    const reader = pullsOfResult(answer);
    let ended = false;
    try {
      for (;;) {
        // The parts the bytes already read make come by plain calls; a wait, only while none are there.
        const part = reader.next();
        if (isWait(part)) {
          await part;
          continue;
        }
        if (part === null) {
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
            if (call.tool) calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: call.input, tool: call.tool, step, index: calls.length });
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
      if (!ended) await reader.cancel();
      // The step's text is what its text parts hold, whatever ended the read.
      out.text = content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    }
    // As the SDK does: tools run once the answer is whole, and only for an answer that asks for them.
    if (!out.error && (out.finishReason === 'tool-calls' || out.finishReason === 'stop')) {
      // What the call cost is stored before its tools act on the world (a crash then bills it).
      if (calls.length > 0) await untilAborted(Promise.resolve(opts.beforeTools?.()), signal);
      // Stopped meanwhile (cancelled, or the task's lease lost): no tool acts on the world.
      if (signal.aborted) calls.length = 0;
      // The hooks, then the permission rules (on the input the hooks gave): a refused call is a tool
      // error naming why; an asked one waits. A caller-run tool's call waits for the caller's result
      // (unless refused).
      const rulings = await Promise.all(calls.map((c) => ruleOn(step, c, opts)));
      const allowed = calls.filter((c, i) => {
        const ruled = rulings[i];
        const decision: DecidedCall['decision'] = c.tool.caller && ruled.decision !== 'deny' ? 'client' : ruled.decision;
        const decided = { toolCallId: c.toolCallId, toolName: c.toolName, input: c.input, decision, rule: ruled.rule };
        out.decided.push(decided);
        if (decision === 'deny') record({ toolCallId: c.toolCallId, toolName: c.toolName, output: ruled.refusal ?? deniedBy(ruled.rule), isError: true });
        if (decision === 'ask' || decision === 'client') out.asking.push(decided);
        return decision === 'allow';
      });
      // Stopped while the hooks or the rules decided (a hook may take minutes): nothing runs.
      if (!signal.aborted) await untilAborted(Promise.all(allowed.map((c) => runCall({ ...c, step }, opts, record, (done) => (out.complete = done)))), signal);
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

/** A call as the hooks and the permission rules decided it; `refusal`: what the model reads of a refused one, when not a rule's. */
type Ruling = CallRuling & { refusal?: string };

/**
 * The PreToolUse hooks, then the permission rules, of one call. A hook's refusal stands; its
 * `updatedInput` replaces the call's input (`c.input`) once it fits the tool's schema (else the
 * call is refused, saying why), and the rules decide on that input; a hook's `ask` asks unless the
 * rules deny, and its `allow` never lifts a rule's `ask` or `deny`.
 */
async function ruleOn<S>(
  step: number,
  c: { toolCallId: string; toolName: string; input: unknown; tool: WorkspaceTool },
  opts: RunAgentOptions<S>,
): Promise<Ruling> {
  const hooked = await opts.hooks?.before({ step, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input });
  if (hooked?.decision === 'deny') return { decision: 'deny', rule: null, refusal: blockedBy(hooked.reason) };
  if (hooked?.input) {
    const parsed = c.tool.inputSchema.safeParse(hooked.input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
      return {
        decision: 'deny',
        rule: null,
        refusal: `the PreToolUse hook's updatedInput does not fit the ${c.toolName} tool (${problems}); the call did not run`,
      };
    }
    c.input = parsed.data;
  }
  const ruled = (await opts.decide?.({ toolName: c.toolName, input: c.input })) ?? { decision: 'allow' as const, rule: null };
  if (hooked?.decision === 'ask' && ruled.decision === 'allow') return { decision: 'ask', rule: HOOK_ASKED };
  return ruled;
}

/** The rule an approval asked by a PreToolUse hook names. */
const HOOK_ASKED = 'PreToolUse hook';

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
