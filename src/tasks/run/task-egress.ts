import { ulid } from '../../util/ids.ts';
import { startEgressProxy } from '../../network/egress-proxy.ts';
import type { AllowedHosts } from '../../network/policy.ts';
import type { TaskRow } from '../../store/schema.ts';
import { createLiveApprovals } from './live-approval.ts';
import type { RunContext } from './run-context.ts';

/** The port the forwarder listens on inside a sandbox (its own network namespace: any port is free). */
const EGRESS_PORT = 3128;

/** A task's running egress proxy: what the sandbox binds in (`WrapExtra.egress`), and its end. */
export interface TaskEgress {
  inside: { dir: string; port: number };
  close(): Promise<void>;
}

/**
 * The proxy of a task whose commands may reach hosts (`network`), for as long as its run: its
 * connections are the task's `network.request` events, and with `ask` a host off the list is an
 * approval request the command's connection waits on. Null without a policy, or without a
 * network namespace of the commands' own (BASH_SANDBOX=none: nothing would make the proxy the only
 * way out). In bubblewrap each command has its own forwarder to it, in a container the run has one.
 */
export async function startTaskEgress(ctx: RunContext, row: TaskRow, signal: AbortSignal, network: AllowedHosts | null): Promise<TaskEgress | null> {
  const { deps } = ctx;
  if (!network || (deps.sandbox.kind !== 'bwrap' && deps.sandbox.kind !== 'container')) return null;
  const limits = deps.egress ?? { allowPrivate: false, maxConnections: 32, maxBytes: 1024 ** 3 };
  const approvals = network.ask ? createLiveApprovals(ctx, row, signal) : null;
  const proxy = await startEgressProxy({
    allow: network.allow,
    ...limits,
    ...(approvals && {
      ask: async (host: string, port: number, withdrawn: AbortSignal) => {
        const step = deps.liveness.snapshot(row.id)?.step ?? row.steps + 1;
        return (await approvals.ask(step, { toolCallId: `net_${ulid(deps.now())}`, toolName: 'network', input: { host, port } }, withdrawn)) === 'allow';
      },
    }),
    onRequest: (r) => deps.events.append(row, 'network.request', r),
  });
  return { inside: { dir: proxy.dir, port: EGRESS_PORT }, close: () => proxy.close() };
}
