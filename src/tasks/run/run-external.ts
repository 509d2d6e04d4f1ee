import { randomUUID } from 'node:crypto';
import { capPayload } from '../../events/cap-payload.ts';
import { createDeltaCoalescer } from '../../loop/delta-coalescer.ts';
import { checkArtifacts } from '../../workspace/artifacts.ts';
import { endingOfAbort, failed, type Ending } from '../writes/finish-task.ts';
import type { RunContext, TaskRun } from './run-context.ts';
import { abortCode } from './task-abort.ts';
import { createLiveApprovals } from './live-approval.ts';
import { startTaskEgress } from './task-egress.ts';
import { allowedHosts } from '../../network/policy.ts';
import { taskLimits } from './task-limits.ts';

/**
 * A task of an external ACP agent: one prompt turn is its one step. Its updates become events as
 * they come; its usage (when it reports any) is billed once at the end, else the record says
 * the usage is unknown; the files it wrote are checked into artifacts.
 */
export async function runExternal(ctx: RunContext, { row, body, def, workspace, signal }: TaskRun): Promise<Ending> {
  const { deps } = ctx;
  const { events } = deps;
  if (!def.acp) return failed('internal_error', `definition "${def.type}" has no ACP command`);
  if (deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
  const step = 1;
  const approvals = createLiveApprovals(ctx, row, signal);
  const deltas = createDeltaCoalescer((s, text) => events.append(row, 'text.delta', { step: s, text }));
  deps.liveness.model(row.id, step);
  events.append(row, 'step.started', { step });
  // A definition that says nothing of `network` keeps the host's network for its agent's own model
  // (as before v1.2); one that does confines the agent and its terminals to its hosts, through the
  // task's proxy (its provider's host on the list), or to nothing. In a container (SANDBOX=container)
  // there is no host network to keep: such an agent reaches nothing.
  // A child (nesting) reaches no more than its ancestors' network: theirs, narrowed down its chain.
  const confined = def.network !== undefined || row.parentTask !== null;
  const hosts = row.parentTask !== null ? (await taskLimits(deps, row, def, body)).network : allowedHosts(def.network, body.options?.network);
  const egress = confined ? await startTaskEgress(ctx, row, signal, hosts) : null;
  // The ACP SDK is loaded by the first ACP task: a process without ACP agents never holds it.
  const { runAcp } = await import('../../acp/run-acp.ts');
  const out = await runAcp({
    network: confined ? (egress?.inside ?? 'none') : 'host',
    def: { ...def, acp: def.acp },
    prompt: body.prompt!,
    workspace,
    sandbox: deps.sandbox,
    signal,
    stallTimeoutMs: deps.limits.modelStallTimeoutMs,
    commandTimeoutMs: deps.limits.bashTimeoutMs,
    maxOutputBytes: deps.limits.bashMaxOutputBytes,
    serviceEnv: deps.serviceEnv,
    observer: {
      text: (text) => deltas.push(step, text),
      toolCall: (call) => {
        deltas.flush();
        deps.liveness.tool(row.id, step, call.toolName);
        events.append(row, 'tool.call', { step, ...call, input: capPayload(call.input) });
      },
      toolResult: (result) => {
        deltas.flush();
        deps.liveness.model(row.id, step);
        events.append(row, 'tool.result', { step, ...result, output: capPayload(result.output) });
      },
      plan: (entries) => {
        deltas.flush();
        // An agent's plan is its own data: kept to 100 entries of 2,000 characters.
        events.append(row, 'plan', { step, entries: entries.slice(0, 100).map((e) => ({ ...e, content: e.content.slice(0, 2000) })) });
      },
      activity: () => deps.liveness.activity(row.id),
      askPermission: async (request) => {
        deltas.flush();
        deps.liveness.tool(row.id, step, request.toolName);
        try {
          return await approvals.ask(step, request);
        } finally {
          deps.liveness.model(row.id, step);
        }
      },
    },
  }).finally(() => egress?.close());
  deltas.close();
  const model = def.model ?? `acp:${def.type}`;
  const usage = out.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
  const cost = out.usage ? ctx.costOf(model, out.usage) : null;
  // Fixed outside the transaction: written again after a lost COMMIT answer, it bills once.
  const callKey = randomUUID();
  const billedAt = deps.now();
  await ctx.writes.owned(row, async (s, append) => {
    if (out.usage) await s.addUsage(row.id, step, out.usage, { model, costMicroUsd: cost }, billedAt, callKey);
    else await s.usageUnreported(row.id);
    await s.countStep(row.id);
    append(row, 'step.finished', { step, finishReason: out.stopReason ?? 'error', usage: { ...usage, costMicroUsd: cost } });
  });
  if (out.usage) deps.metrics.callBilled(out.usage, cost);
  const checked = await checkArtifacts(workspace, out.written);
  const delivered = { summary: out.summary || null, ...checked, output: null };
  if (signal.aborted) return { ...endingOfAbort(abortCode(signal)), ...delivered };
  if (out.failure) return { ...failed(out.failure.code, ctx.scrub(out.failure.message)), ...delivered };
  return { status: 'completed', ...delivered, stopReason: out.stopReason === 'end_turn' ? 'text' : 'max_steps', errorCode: null, errorMessage: null };
}
