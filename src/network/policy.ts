import type { NetworkPolicy } from '../shapes/task.ts';
import { hostAllowed } from './egress-proxy.ts';

/** What a task's commands may reach: these hosts, and with `ask` any other the caller allows. */
export interface AllowedHosts {
  allow: string[];
  ask: boolean;
}

/**
 * The hosts a task's commands may reach: its definition's allow-list, narrowed by the task's own
 * `options.network` (a pattern the definition's list does not cover is dropped; `ask` only where
 * the definition asks too, and as the definition says when the task does not say); null for no
 * network at all (the default).
 */
export function allowedHosts(def: NetworkPolicy | undefined, task: NetworkPolicy | undefined): AllowedHosts | null {
  if (!def || def === 'none' || task === 'none') return null;
  const ask = def.ask === true && task?.ask !== false;
  if (task === undefined) return { allow: def.allow, ask };
  return { allow: task.allow.filter((p) => covered(def.allow, p)), ask };
}

/**
 * A child's hosts within its parent's: only the patterns the parent's list covers, `ask` only
 * where the parent asks too; null (no network) when either has none.
 */
export function narrowHosts(own: AllowedHosts | null, parent: AllowedHosts | null): AllowedHosts | null {
  if (!own || !parent) return null;
  return { allow: own.allow.filter((p) => covered(parent.allow, p)), ask: own.ask && parent.ask };
}

/** Does the list `base` allow everything pattern `p` allows? */
function covered(base: string[], p: string): boolean {
  if (base.includes(p)) return true;
  const m = /^(.*?)(?::(\d+))?$/.exec(p)!;
  const port = m[2] ? Number(m[2]) : -1; // no port: any port, which only a port-less entry covers
  if (m[1].startsWith('*.'))
    return (
      hostAllowed(
        base.filter((b) => b.startsWith('*.')),
        `x${m[1].slice(1)}`,
        port,
      ) !== null
    );
  return hostAllowed(base, m[1], port) !== null;
}
