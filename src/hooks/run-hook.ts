/** Running one hook: its command in the task's sandbox, or a signed POST to its URL. */
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { resolveTarget, WebhookTargetError } from '../network/safe-target.ts';
import { runTaskCommand } from '../tools/bash.ts';
import type { ToolContext } from '../tools/tool-types.ts';
import { ulid } from '../util/ids.ts';
import { commandAnswer, readAnswer, type HookAnswer } from './hook-answer.ts';
import { DEFAULT_HOOK_TIMEOUT_MS, type HookEvent, type HookSpec } from './hook-spec.ts';

/** Most bytes of a hook's answer read (a command's output, a URL's body): an `updatedInput` fits, a flood does not. */
export const MAX_HOOK_ANSWER_BYTES = 1024 * 1024;

/** Where a task's hooks run: its tools' context (commands as its bash runs them), and how URLs are reached. */
export interface HookPlace {
  /** The task's sandbox, workspace, egress (its network policy) and signal (a cancelled task kills its hooks). */
  tools: Pick<ToolContext, 'sandbox' | 'workspace' | 'egress' | 'signal'>;
  /** The Standard Webhooks secret URL hooks are signed with (HOOK_SECRET); null: none set. */
  secret: string | null;
  /** WEBHOOK_ALLOW_PRIVATE: a URL may resolve to a private or loopback address. */
  allowPrivate: boolean;
  now: () => number;
}

/**
 * Runs `hook` with `payload` (the event's JSON) and reads its answer. Never throws: what went wrong
 * (a command that cannot start, an address refused, a status, a timeout) is its answer's `failed`
 * or `timeout`, which the caller logs and which blocks nothing.
 */
export async function runHook(hook: HookSpec, event: HookEvent, payload: string, place: HookPlace): Promise<HookAnswer> {
  const timeoutMs = hook.timeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS;
  try {
    return hook.command !== undefined
      ? await runCommandHook(hook.command, event, payload, timeoutMs, place)
      : await postHook(hook.url!, event, payload, timeoutMs, place);
  } catch (err) {
    return { decision: 'failed', reason: (err as Error).message };
  }
}

async function runCommandHook(command: string, event: HookEvent, payload: string, timeoutMs: number, place: HookPlace): Promise<HookAnswer> {
  const { tools } = place;
  if (tools.sandbox.kind === 'unavailable') return { decision: 'failed', reason: `commands cannot run here: ${tools.sandbox.reason}` };
  // As bash runs (its sandbox, limits, clean environment, no start-up file, working folder, egress,
  // skills and memory), the event on standard input.
  const r = await runTaskCommand(tools, {
    command,
    cwd: tools.workspace.cwd,
    timeoutMs,
    maxOutputBytes: MAX_HOOK_ANSWER_BYTES,
    signal: tools.signal,
    input: payload,
  });
  if (r.timedOut) return { decision: 'timeout', reason: `no answer within ${timeoutMs} ms; its processes were killed` };
  if (r.aborted) return { decision: 'failed', reason: 'the task was stopped' };
  return commandAnswer(event, r);
}

/**
 * POSTs the event to a hook's URL as webhooks are sent: the address checked (no private, loopback
 * or link-local one unless WEBHOOK_ALLOW_PRIVATE) and connected to as checked, signed per the
 * Standard Webhooks specification, no redirect followed, at most MAX_HOOK_ANSWER_BYTES read. A 2xx
 * answer is read as a command's output is; any other status is a failure.
 */
async function postHook(href: string, event: HookEvent, payload: string, timeoutMs: number, place: HookPlace): Promise<HookAnswer> {
  if (!place.secret) return { decision: 'failed', reason: 'HOOK_SECRET is not set: a URL hook is never sent unsigned' };
  const url = new URL(href);
  let target: { address: string; family: number };
  try {
    target = await resolveTarget(url, place.allowPrivate);
  } catch (err) {
    if (err instanceof WebhookTargetError) return { decision: 'failed', reason: err.message };
    throw err;
  }
  const timeout = AbortSignal.timeout(timeoutMs);
  // The agent's own limits come a second after the hook's, so that running out of time reads as a timeout.
  const dispatcher = new Agent({
    connect: { lookup: (_host, _options, callback) => callback(null, [{ address: target.address, family: target.family }]), timeout: timeoutMs + 1000 },
    headersTimeout: timeoutMs + 1000,
    bodyTimeout: timeoutMs + 1000,
  });
  const at = new Date(place.now());
  const id = `hook_${ulid(at.getTime())}`;
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher,
      body: payload,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'subagentd-hooks',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(place.secret).sign(id, at, payload),
      },
      signal: AbortSignal.any([place.tools.signal, timeout]),
    });
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of res.body) {
      read += (chunk as Buffer).length;
      if (read > MAX_HOOK_ANSWER_BYTES) {
        res.body.destroy();
        return { decision: 'failed', reason: `its answer is over ${MAX_HOOK_ANSWER_BYTES} bytes` };
      }
      chunks.push(chunk as Buffer);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) return { decision: 'failed', reason: `the hook's URL answered ${res.statusCode}` };
    return readAnswer(event, Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    if (timeout.aborted) return { decision: 'timeout', reason: `no answer within ${timeoutMs} ms` };
    if (place.tools.signal.aborted) return { decision: 'failed', reason: 'the task was stopped' };
    return { decision: 'failed', reason: (err as Error).message };
  } finally {
    void dispatcher.close().catch(() => {});
  }
}
