/**
 * A task's hooks as the agent loop asks them: before a call (may refuse it, ask, or change its
 * input), after it (may add to its result), and at `complete` (may refuse it). Each event's
 * matching hooks run at once; their answers are combined, the strictest first.
 */
import type { HookAnswer, HookDecision } from './hook-answer.ts';
import { hooksFor, type HookEvent, type Hooks, type HookSpec } from './hook-spec.ts';
import { runHook, type HookPlace } from './run-hook.ts';

/** A tool call as the hooks are told of it. */
export interface HookedCall {
  step: number;
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** One hook that ran, as the `hook.ran` event says it. */
export interface HookRan {
  step: number;
  event: HookEvent;
  matcher: string;
  toolCallId: string;
  toolName: string;
  decision: HookDecision;
  reason?: string;
  /** PreToolUse: the input it gave the call instead. */
  updatedInput?: Record<string, unknown>;
  durationMs: number;
}

/** What the PreToolUse hooks say of a call: null when none decided; `input` when one replaced it. */
export interface BeforeCall {
  decision: 'allow' | 'ask' | 'deny' | null;
  reason: string | null;
  input?: Record<string, unknown>;
}

/** The hooks the loop runs, for one task run (`createTaskHooks`). */
export interface TaskHooks {
  /** PreToolUse: a `deny` (or a block) means the call does not run and the model reads `reason`. */
  before(call: HookedCall): Promise<BeforeCall>;
  /** PostToolUse, after a call that succeeded: the reasons to add to its result (empty: none). */
  after(call: HookedCall & { output: unknown }): Promise<string[]>;
  /** Stop, when `complete` succeeded: the reason it is refused, or null when it may end the task. */
  stop(call: HookedCall & { output: unknown }): Promise<string | null>;
}

export interface TaskHooksOptions {
  hooks: Hooks;
  place: HookPlace;
  task: { id: string; parentTaskId: string };
  /** Every hook that ran (the `hook.ran` event; a failure's log line). */
  onRan(ran: HookRan): void;
}

/** Joined reasons of several hooks that said the same. */
const joined = (answers: HookAnswer[], fallback: string) => answers.map((a) => a.reason ?? fallback).join('\n');

/**
 * The hooks of a task's definition. A call no hook matches costs nothing (no JSON is built). Pre
 * and post tool hooks are not told of `complete`: the Stop hooks are its.
 */
export function createTaskHooks(opts: TaskHooksOptions): TaskHooks {
  const { hooks, place, task } = opts;
  /** A Stop hook blocked once in this run (Claude Code's `stop_hook_active`: a hook can tell it is asked again). */
  let stopBlocked = false;

  async function runAll(event: HookEvent, matched: HookSpec[], call: HookedCall, extra: Record<string, unknown>): Promise<HookAnswer[]> {
    const payload = JSON.stringify({
      hook_event_name: event,
      task_id: task.id,
      parent_task_id: task.parentTaskId,
      tool_name: call.toolName,
      tool_use_id: call.toolCallId,
      tool_input: call.input,
      ...extra,
    });
    return Promise.all(
      matched.map(async (hook) => {
        const started = performance.now();
        const answer = await runHook(hook, event, payload, place);
        opts.onRan({
          step: call.step,
          event,
          matcher: hook.matcher ?? '*',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          decision: answer.decision,
          ...(answer.reason !== undefined && { reason: answer.reason }),
          ...(answer.updatedInput !== undefined && { updatedInput: answer.updatedInput }),
          durationMs: Math.round(performance.now() - started),
        });
        return answer;
      }),
    );
  }

  return {
    async before(call) {
      const matched = call.toolName === 'complete' ? [] : hooksFor(hooks, 'PreToolUse', call.toolName);
      if (matched.length === 0) return { decision: null, reason: null };
      const answers = await runAll('PreToolUse', matched, call, {});
      const refused = answers.filter((a) => a.decision === 'deny' || a.decision === 'block');
      if (refused.length > 0) return { decision: 'deny', reason: joined(refused, 'denied by a PreToolUse hook') };
      // Several hooks replacing the input: the first one's, in the definition's order.
      const input = answers.find((a) => a.updatedInput !== undefined)?.updatedInput;
      const asking = answers.filter((a) => a.decision === 'ask');
      const decision = asking.length > 0 ? 'ask' : answers.some((a) => a.decision === 'allow') ? 'allow' : null;
      return { decision, reason: asking.length > 0 ? joined(asking, 'asked by a PreToolUse hook') : null, ...(input && { input }) };
    },
    async after(call) {
      const matched = call.toolName === 'complete' ? [] : hooksFor(hooks, 'PostToolUse', call.toolName);
      if (matched.length === 0) return [];
      const answers = await runAll('PostToolUse', matched, call, { tool_response: call.output });
      return answers.filter((a) => a.decision === 'block').map((a) => a.reason ?? 'a PostToolUse hook objected to this result');
    },
    async stop(call) {
      // Claude Code's Stop hooks take no matcher: each is told of every `complete`.
      const matched = hooks.Stop ?? [];
      if (matched.length === 0) return null;
      const answers = await runAll('Stop', matched, call, { tool_response: call.output, stop_hook_active: stopBlocked });
      const blocked = answers.filter((a) => a.decision === 'block');
      if (blocked.length === 0) return null;
      stopBlocked = true;
      return joined(blocked, 'a Stop hook refused to let the task end');
    },
  };
}
