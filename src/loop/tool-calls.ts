/** Running a step's tool calls: one call, the answered calls of a resume, and what the model reads back. */
import type { JSONValue, ModelMessage, ToolResultPart } from 'ai';
import type { WorkspaceTool } from '../tools/tool-types.ts';
import { publicMessage } from '../errors/public-message.ts';
import { completeForModel, type CompleteResult } from '../tools/complete.ts';
import type { AnsweredCall, RunAgentOptions, RunSetup } from './agent-types.ts';

/**
 * Runs one call of a tool and records its result (`onComplete`: `complete` succeeded, and the
 * outcome's check, when there is one, accepted it). The hooks after it may add to a result;
 * those of `complete` (Stop) may refuse it, and the run goes on.
 */
export async function runCall<S>(
  c: { step: number; toolCallId: string; toolName: string; input: unknown; tool: WorkspaceTool; index?: number },
  opts: RunAgentOptions<S>,
  record: (r: { toolCallId: string; toolName: string; output: unknown; isError: boolean }) => void,
  onComplete: (done: CompleteResult) => void,
): Promise<void> {
  try {
    let output = await c.tool.execute(c.input, opts.toolContext, { toolCallId: c.toolCallId, step: c.step, index: c.index });
    const finished = c.toolName === 'complete' ? (output as CompleteResult) : null;
    const hooked = { step: c.step, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input };
    if (finished && opts.hooks) {
      const refused = await opts.hooks.stop({ ...hooked, output: completeForModel(finished) });
      if (refused !== null) throw new Error(`${STOP_REFUSED}${refused}`);
    } else if (opts.hooks) {
      const reasons = await opts.hooks.after({ ...hooked, output });
      if (reasons.length > 0) output = withReasons(output, reasons);
    }
    // The task's outcome checks the work: not satisfied, `complete` is an error the model reads.
    const unmet = finished && opts.checkComplete && !opts.signal.aborted ? await opts.checkComplete(finished) : null;
    if (unmet !== null) throw new Error(unmet);
    if (finished && !opts.signal.aborted) onComplete(finished);
    record({ toolCallId: c.toolCallId, toolName: c.toolName, output: finished ? completeForModel(finished) : output, isError: false });
  } catch (err) {
    record({ toolCallId: c.toolCallId, toolName: c.toolName, output: errorMessage(err), isError: true });
  }
}

/** What the model reads before a Stop hook's reason. */
export const STOP_REFUSED = 'complete was refused by a Stop hook; the task goes on. ';

/** A result with what PostToolUse hooks said of it, as text the model reads after the result. */
function withReasons(output: unknown, reasons: string[]): string {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return `${text}\n\n${reasons.map((r) => `PostToolUse hook: ${r}`).join('\n')}`;
}

/** What the model reads of a call the permission rules refused. */
export const deniedBy = (rule: string | null) => `denied by the permission rule "${rule ?? 'deny'}"`;

/** What the model reads of a call a PreToolUse hook refused. */
export const blockedBy = (reason: string | null) => `blocked by a PreToolUse hook: ${reason ?? 'no reason given'}`;

/**
 * A resume after approval: the answered calls of `step` run (allowed: with their input, the
 * permission rules asked again, so a deny still applies; the PreToolUse hooks ran when the call was
 * made, and its input is the one they gave) or are refused with the caller's message;
 * a caller-run tool's call gets the caller's result.
 * Answers the tool message they add, and `complete`'s result if it was among them.
 */
export async function runAnswered<S>(
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
  const toRun: Array<AnsweredCall & { step: number; tool: WorkspaceTool }> = [];
  for (const a of answered) {
    // A caller-run tool's call (or a call a crash cut): the result given is what the model reads.
    if (a.result) {
      const isError = a.result.error !== undefined;
      record({ toolCallId: a.toolCallId, toolName: a.toolName, output: isError ? a.result.error : a.result.output, isError });
      continue;
    }
    const tool = setup.tools.get(a.toolName);
    const again = await opts.decide?.({ toolName: a.toolName, input: a.input });
    if (!a.allow) record({ toolCallId: a.toolCallId, toolName: a.toolName, output: a.message, isError: true });
    else if (again?.decision === 'deny') record({ toolCallId: a.toolCallId, toolName: a.toolName, output: deniedBy(again.rule), isError: true });
    else if (!tool) record({ toolCallId: a.toolCallId, toolName: a.toolName, output: `tool "${a.toolName}" is no longer offered`, isError: true });
    else toRun.push({ ...a, step, tool });
  }
  // Stored as started before any of them acts on the world: a run cut from here on (a crash, the
  // task taken over) never runs them again.
  if (toRun.length > 0) await untilAborted(Promise.resolve(opts.beforeAnswered?.(toRun.map((a) => a.toolCallId))), opts.signal);
  if (!opts.signal.aborted) {
    await untilAborted(Promise.all(toRun.map((a) => runCall({ ...a, step }, opts, record, (done) => (complete = done)))), opts.signal);
  }
  return { messages: results.length > 0 ? [{ role: 'tool', content: results }] : [], complete };
}

/** What the model reads of a tool's outcome, as the SDK writes it: text, JSON, or an error's text. */
export function modelOutput(output: unknown, isError: boolean): ToolResultPart['output'] {
  if (isError) return { type: 'error-text', value: errorMessage(output) };
  if (typeof output === 'string') return { type: 'text', value: output };
  return { type: 'json', value: (output ?? null) as JSONValue };
}

/** Waits for `work`, or only until `signal` aborts (a tool that ignores the signal cannot hold the run). */
export function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
  // Not waited for, but its failure is still observed: an owned write that finds the task taken
  // over after the run was stopped must not become the process's unhandled rejection.
  if (signal.aborted) {
    work.catch(noop);
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const noop = () => undefined;

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return publicMessage(err);
  return typeof err === 'string' ? err : JSON.stringify(err);
}
