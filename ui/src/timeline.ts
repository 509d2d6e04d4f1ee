import type { StreamMessage } from './api.ts';

/** One line of a task's story, as people read it: a step's text, a tool call with its result, a plan, a note. */
export type Item =
  | { kind: 'step'; step: number; usage?: any; finishReason?: string }
  | { kind: 'text'; step: number; text: string }
  | {
      kind: 'tool';
      step: number;
      toolCallId: string;
      toolName: string;
      input: unknown;
      output?: unknown;
      isError?: boolean;
      /** Not running: its approval, or a caller-run tool's result, is awaited. */
      waiting?: 'approval' | 'caller';
      /** What the definition's hooks said of it (before, after, and for `complete` at the end). */
      hooks?: Hook[];
    }
  | { kind: 'plan'; entries: Array<{ content: string; status: string; priority?: string }> }
  | { kind: 'note'; type: string; text: string };

/** One hook that ran for a call (`hook.ran`). */
export interface Hook {
  event: string;
  matcher: string;
  decision: string;
  reason?: string;
  durationMs: number;
}

/** What a hook's decision reads as, beside its call. */
export const hookSays = (h: Hook) => `${h.event} hook (${h.matcher}): ${h.decision}${h.reason ? ` — ${h.reason}` : ''} in ${h.durationMs} ms`;

/**
 * The task's events folded into items, one message at a time (a task of 5,000 events is folded
 * once, not re-read on each): text deltas of a step join one block, a tool result joins its call.
 */
export function createTimeline() {
  const items: Item[] = [];
  const calls = new Map<string, Extract<Item, { kind: 'tool' }>>();
  /** Requests (approvals, caller-run tools) by id, to the calls they hold. */
  const requests = new Map<string, string>();
  const waitOn = (requestId: string, toolCallId: string, what: 'approval' | 'caller' | undefined) => {
    requests.set(requestId, toolCallId);
    const call = calls.get(toolCallId);
    if (call) call.waiting = what;
  };
  let lastSeq = 0;
  const note = (type: string, text: string) => items.push({ kind: 'note', type, text });

  function add(m: StreamMessage): void {
    if (typeof m.seq === 'number') {
      if (m.seq <= lastSeq) return;
      lastSeq = m.seq;
    }
    const d = m.data ?? {};
    switch (m.type) {
      case 'step.started':
        items.push({ kind: 'step', step: d.step });
        break;
      case 'text.delta': {
        const last = items.at(-1);
        if (last?.kind === 'text' && last.step === d.step) last.text += d.text;
        else items.push({ kind: 'text', step: d.step, text: d.text });
        break;
      }
      case 'tool.call': {
        const call = { kind: 'tool' as const, step: d.step, toolCallId: d.toolCallId, toolName: d.toolName, input: d.input };
        calls.set(d.toolCallId, call);
        items.push(call);
        break;
      }
      case 'tool.result': {
        const call = calls.get(d.toolCallId);
        if (call) Object.assign(call, { output: d.output, isError: d.isError, waiting: undefined });
        else items.push({ kind: 'tool', step: d.step, toolCallId: d.toolCallId, toolName: d.toolName, input: null, output: d.output, isError: d.isError });
        break;
      }
      case 'step.finished': {
        const started = [...items].reverse().find((i): i is Extract<Item, { kind: 'step' }> => i.kind === 'step' && i.step === d.step);
        if (started) Object.assign(started, { usage: d.usage, finishReason: d.finishReason });
        break;
      }
      case 'plan':
        items.push({ kind: 'plan', entries: d.entries ?? [] });
        break;
      case 'task.started':
        note(m.type, `started as ${d.subagent_type}${d.model ? ` on ${d.model}` : ''}`);
        break;
      case 'task.finished':
        note(m.type, `finished: ${d.status}${d.error ? ` (${d.error.code}: ${d.error.message})` : ''}`);
        break;
      case 'approval.requested':
        waitOn(d.requestId, d.toolCallId, 'approval');
        note(m.type, `asks approval for ${d.toolName} ${JSON.stringify(d.input)}`);
        break;
      case 'approval.answered':
        waitOn(d.requestId, requests.get(d.requestId) ?? '', undefined);
        note(m.type, `approval ${d.decision} (by ${d.by})`);
        break;
      case 'tool.requested':
        waitOn(d.requestId, d.toolCallId, 'caller');
        note(m.type, `waits for the caller's result of ${d.toolName} ${JSON.stringify(d.input)}`);
        break;
      case 'tool.answered':
        waitOn(d.requestId, requests.get(d.requestId) ?? '', undefined);
        note(m.type, `caller's result ${d.isError ? 'failed' : 'received'} (by ${d.by})`);
        break;
      case 'hook.ran': {
        const hook: Hook = { event: d.event, matcher: d.matcher, decision: d.decision, reason: d.reason, durationMs: d.durationMs };
        const call = calls.get(d.toolCallId);
        if (call) (call.hooks ??= []).push(hook);
        else note(m.type, `${d.toolName}: ${hookSays(hook)}`);
        break;
      }
      case 'network.request':
        note(
          m.type,
          `${d.allowed ? 'reached' : 'refused'} ${d.host}:${d.port}${d.allowed ? ` (${d.bytesIn} B in, ${d.bytesOut} B out)` : ''}${d.reason ? ` — ${d.reason}` : ''}`,
        );
        break;
      case 'task.paused':
        note(m.type, `paused (${d.reason})${d.reason === 'budget' ? `: ${d.budget} budget of ${d.limit} ${d.measure} reached` : ''}`);
        break;
      case 'task.resumed':
        note(m.type, `resumed from step ${d.fromStep}${d.reason ? ` (${d.reason})` : ''}`);
        break;
      case 'message.received':
        note(m.type, `steering message delivered: ${d.text}`);
        break;
      case 'outcome.evaluated':
        note(m.type, `check ${d.iteration} (${d.by}): ${d.satisfied ? 'satisfied' : 'not satisfied'}`);
        break;
      case 'candidate.started':
        note(m.type, `attempt ${d.index + 1} started on ${d.model ?? 'the default model'}: ${d.taskId}`);
        break;
      case 'candidate.finished':
        note(m.type, `attempt ${d.taskId} ${d.status}${d.outcome ? `, outcome ${d.outcome.status}` : ''}`);
        break;
      case 'candidate.selected':
        note(m.type, `kept ${d.taskId}: ${d.reason}`);
        break;
      case 'heartbeat':
        break;
      default:
        note(m.type, m.type.replace('.', ' ') + (d && Object.keys(d).length ? ` ${JSON.stringify(d).slice(0, 300)}` : ''));
    }
  }
  return { items, add, lastSeq: () => lastSeq };
}
