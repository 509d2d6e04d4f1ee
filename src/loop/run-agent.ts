import type { LanguageModelV3 } from '@ai-sdk/provider';
import { jsonSchema, tool, zodSchema, type JSONSchema7, type ModelMessage, type ToolSet } from 'ai';
import { prepareToolsAndToolChoice, standardizePrompt } from 'ai/internal';
import type { z } from 'zod';
import type { StopReason } from '../shapes/artifact.ts';
import type { WorkspaceTool } from '../tools/tool-types.ts';
import { compact } from './compaction.ts';
import type { CompleteResult } from '../tools/complete.ts';
import { isStall, worthFallingBack } from './stall-guard.ts';
import type { AgentRunResult, RunAgentOptions, RunSetup } from './agent-types.ts';
import { runStep } from './run-step.ts';
import { errorMessage, runAnswered, untilAborted } from './tool-calls.ts';

export type { AgentObserver, AgentRunResult, AnsweredCall, DecidedCall, RunAgentOptions } from './agent-types.ts';
export { errorMessage } from './tool-calls.ts';

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
  const set: ToolSet = Object.fromEntries(
    tools.map((t) => [
      t.name,
      tool({ description: t.description, inputSchema: t.jsonSchema ? jsonSchema(t.jsonSchema as JSONSchema7) : toolSchema(t.inputSchema) }),
    ]),
  );
  const prepared = await prepareToolsAndToolChoice({ tools: set, toolChoice: undefined, activeTools: undefined });
  // Without the `$schema` line the SDK puts atop each schema: 52 bytes a tool on every request,
  // which no provider reads.
  for (const t of prepared.tools ?? []) {
    if (t.type === 'function' && typeof t.inputSchema === 'object' && '$schema' in t.inputSchema) {
      const { $schema: _unread, ...schema } = t.inputSchema;
      t.inputSchema = schema;
    }
  }
  return prepared;
}

/** One user message whose content is a string: the conversation of a task that starts from its prompt. */
function isPlainPrompt(messages: ModelMessage[]): boolean {
  return messages.length === 1 && messages[0].role === 'user' && typeof messages[0].content === 'string';
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
    // A task's first prompt alone (a string from the checked request) needs no checking: 0.2 ms
    // of the SDK's message schema a task, spared.
    start = isPlainPrompt(opts.messages) ? opts.messages : (await standardizePrompt({ system: opts.system, messages: opts.messages })).messages;
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
  const fallbacks = [...(opts.fallbacks ?? [])];
  let modelId = opts.modelId ?? 'model';
  const carried: ModelMessage[] = [];
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
    // Stopped while they ran (a shutdown, a lost lease): not recorded as acted on, so that the
    // next run tells the model its started calls were cut rather than leave them without a result.
    if (!opts.signal.aborted) opts.observer.answeredCallsRan?.(step, ran.messages);
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
    // Steering messages of a step that failed over to another model are in the conversation already.
    const added: ModelMessage[] = carried.splice(0);
    for (const text of [...steering.splice(0), ...((await opts.takeMessages?.()) ?? [])]) {
      const message: ModelMessage = { role: 'user', content: text };
      added.push(message);
      conversation.push(message);
      observer.messageReceived(step, text);
    }
    // The step before is stored before this one's call goes out: a process that dies during the
    // call then resumes after it, and does not run its tools again.
    await untilAborted(Promise.resolve(observer.stepStarted(step)), opts.signal);
    const r = await runStep(step, conversation, setup, opts);
    if (r.text.trim()) finalText = r.text.trim();
    complete ??= r.complete;
    const next = fallbacks[0];
    if (!r.finished && r.error && next && !opts.signal.aborted && worthFallingBack(r.error)) {
      // The provider failed the step past its retries: the same step again on the next model.
      fallbacks.shift();
      observer.modelFallback?.(step, { from: modelId, to: next.id, reason: errorMessage(r.error).slice(0, 500) });
      setup = { ...setup, model: next.model as LanguageModelV3 };
      modelId = next.id;
      carried.push(...added);
      step -= 1;
      continue;
    }
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
