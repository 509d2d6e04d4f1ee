/** The agent loop's shapes: its options, its result, what it reports, the calls the permission rules decide. */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LanguageModel, ModelMessage } from 'ai';
import type { prepareToolsAndToolChoice } from 'ai/internal';
import type { StopReason } from '../shapes/artifact.ts';
import type { TokenUsage as Usage } from '../shapes/usage.ts';
import type { ToolContext, WorkspaceTool } from '../tools/tool-types.ts';
import type { CompactionOptions } from './compaction.ts';
import type { CompleteResult } from '../tools/complete.ts';
import type { TaskHooks } from '../hooks/task-hooks.ts';

/** What the loop reports as it runs; the runner turns these into stored events. */
export interface AgentObserver {
  /**
   * A step is about to call the model. What it returns (the commit of the step before, most
   * often) is waited for before the call goes out.
   */
  stepStarted(step: number): void | Promise<void>;
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
  /** Step `step` failed on model `from` after its retries; it runs again on `to`. */
  modelFallback?(step: number, info: { from: string; to: string; reason: string }): void;
}

/** A call as the permission rules see it, with their answer. */
export interface DecidedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** `client`: a caller-run tool's call, which waits for the caller's result. */
  decision: 'allow' | 'ask' | 'deny' | 'client';
  rule: string | null;
}

/**
 * A call the caller answered while the task waited: run it (`allow`, with its input) or refuse it
 * with `message`; a caller-run tool's call carries the caller's `result` instead.
 */
export interface AnsweredCall {
  toolCallId: string;
  /** Its index among the calls of its step that reached their tools (as the step's run gave it). */
  index?: number;
  toolName: string;
  input: unknown;
  allow: boolean;
  message: string;
  result?: { output?: unknown; error?: string };
}

/** `S`: what `beforeCall` answers to stop a run (the runner's budget pause). */
export interface RunAgentOptions<S = unknown> {
  model: LanguageModel;
  /** `model`'s id, as a fallback names it. */
  modelId?: string;
  /** Models tried in turn when a step fails with a provider error its retries did not cure (429, 5xx, timeouts). */
  fallbacks?: Array<{ id: string; model: LanguageModel }>;
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
  /**
   * The definition's hooks: before a call (they may refuse it, ask, or replace its input, which the
   * permission rules then decide), after it, and at `complete`.
   */
  hooks?: TaskHooks;
  /**
   * A `complete` that succeeded, checked against the task's outcome: null accepts it (the run
   * ends); a string refuses it, and the model reads it as the tool's error (the run goes on).
   */
  checkComplete?: (done: CompleteResult) => Promise<string | null>;
  /** The permission rules' answer for one call (`allow` for every call without it). */
  decide?: (call: { toolName: string; input: unknown }) => CallRuling | Promise<CallRuling>;
  /**
   * Calls of a step wait on the caller (`decide` said `ask`, or a caller-run tool was called): the
   * others of the step ran (or were refused); this answers the pause the run stops with, after the
   * step is reported finished.
   */
  onAsk?: (step: number, calls: DecidedCall[]) => S;
  /** A resume after approval: the answered calls of step `doneSteps`, run (or refused) before the first model call. */
  answered?: AnsweredCall[];
  /**
   * Awaited before the answered calls `toolCallIds` run (the runner: stores them as started, so a
   * resume never runs them again). It throws, or aborts the signal, when they must not run.
   */
  beforeAnswered?: (toolCallIds: string[]) => Promise<void>;
  compaction?: CompactionOptions;
  /** Sent with every model call of the run as `prompt_cache_key` (the OpenAI provider's option). */
  promptCacheKey?: string;
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

/** What a run prepares once and every step uses. */
export interface RunSetup {
  model: LanguageModelV3;
  tools: Map<string, WorkspaceTool>;
  /** The tools as the provider is sent them (name, description, JSON Schema). */
  callTools: Awaited<ReturnType<typeof prepareToolsAndToolChoice>>;
  system: string;
}

/** What the permission rules say of one call, and the rule that said it. */
export interface CallRuling {
  decision: 'allow' | 'ask' | 'deny';
  rule: string | null;
}
