/** What a hook's answer says: its exit code and output (a command) or its body (a URL), read as Claude Code reads them. */
import type { HookEvent } from './hook-spec.ts';

/**
 * `none`: it ran and said nothing that counts; `allow`, `deny`, `ask` (PreToolUse) and `block`
 * (any event) are decisions; `failed` and `timeout` are logged and never block.
 */
export type HookDecision = 'none' | 'allow' | 'deny' | 'ask' | 'block' | 'failed' | 'timeout';

export interface HookAnswer {
  decision: HookDecision;
  /** Why (a block's or a deny's reason, which the model reads; a failure's, which the log reads). */
  reason?: string;
  /** PreToolUse: the input the call runs with instead (checked against the tool's schema by the loop). */
  updatedInput?: Record<string, unknown>;
}

/** Longest reason the model is given (a hook's stderr can be long): its head is kept. */
export const MAX_REASON_CHARS = 8_000;

/** The exit code that blocks, as in Claude Code: the reason is the command's standard error. */
export const BLOCKING_EXIT_CODE = 2;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function boundReason(text: string): string {
  const t = text.trim();
  return t.length <= MAX_REASON_CHARS ? t : `${t.slice(0, MAX_REASON_CHARS)}… [${t.length - MAX_REASON_CHARS} more characters cut]`;
}

const PRE_DECISIONS: Record<string, HookDecision> = { allow: 'allow', approve: 'allow', deny: 'deny', ask: 'ask', block: 'block' };

/**
 * A JSON answer: `{ decision: "block", reason }` blocks (every event); a PreToolUse answer may say
 * `{ decision: "allow" | "deny" | "ask", reason?, updatedInput? }`, or the same in Claude Code's
 * `hookSpecificOutput: { permissionDecision, permissionDecisionReason, updatedInput }`. Text that is
 * not a JSON object says nothing (`none`), as Claude Code reads a hook's plain output; a JSON object
 * with a decision it cannot take, or an `updatedInput` that is not an object, is `failed`.
 */
export function readAnswer(event: HookEvent, text: string): HookAnswer {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return { decision: 'none' };
  let body: unknown;
  try {
    body = JSON.parse(trimmed);
  } catch {
    return { decision: 'none' };
  }
  if (!isObject(body)) return { decision: 'none' };
  const specific = isObject(body.hookSpecificOutput) ? body.hookSpecificOutput : {};
  const said = specific.permissionDecision ?? body.decision;
  const reasonOf = specific.permissionDecisionReason ?? body.reason;
  const reason = typeof reasonOf === 'string' && reasonOf.trim() !== '' ? boundReason(reasonOf) : undefined;
  const updated = specific.updatedInput ?? body.updatedInput;
  if (said === undefined || said === null) {
    if (event === 'PreToolUse' && updated !== undefined) return withInput({ decision: 'none' }, updated);
    return { decision: 'none' };
  }
  if (typeof said !== 'string') return { decision: 'failed', reason: 'its `decision` is not a string' };
  if (event !== 'PreToolUse') {
    // After a call, and at the end, only a block counts (Claude Code's "approve" and "undefined" say nothing).
    if (said === 'block') return { decision: 'block', ...(reason && { reason }) };
    return said === 'approve' || said === 'allow'
      ? { decision: 'none' }
      : { decision: 'failed', reason: `${event} takes only "block" as a decision, not "${said}"` };
  }
  const decision = PRE_DECISIONS[said];
  if (!decision) return { decision: 'failed', reason: `"${said}" is not a decision (allow, deny, ask or block)` };
  const answer: HookAnswer = { decision, ...(reason && { reason }) };
  return updated === undefined || decision === 'deny' || decision === 'block' ? answer : withInput(answer, updated);
}

function withInput(answer: HookAnswer, updated: unknown): HookAnswer {
  if (!isObject(updated)) return { decision: 'failed', reason: '`updatedInput` must be an object (the tool’s whole input)' };
  return { ...answer, updatedInput: updated };
}

/**
 * A command's outcome: exit 0 is read as its standard output says (`readAnswer`); exit 2 blocks
 * with its standard error as the reason; any other exit is a failure (logged, not blocking).
 */
export function commandAnswer(event: HookEvent, r: { exitCode: number; stdout: string; stderr: string; truncated: { stdout: boolean } }): HookAnswer {
  if (r.exitCode === BLOCKING_EXIT_CODE) return { decision: 'block', reason: boundReason(r.stderr) || 'blocked by a hook (exit code 2)' };
  if (r.exitCode !== 0) return { decision: 'failed', reason: `exit code ${r.exitCode}${r.stderr.trim() ? `: ${boundReason(r.stderr).slice(-500)}` : ''}` };
  if (r.truncated.stdout) return { decision: 'failed', reason: 'its output is over the size an answer may have' };
  return readAnswer(event, r.stdout);
}
