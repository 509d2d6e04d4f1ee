import { iso } from '../../shapes/time.ts';
import type { Progress } from '../../shapes/task.ts';
import type { Activity, TaskRow } from '../../store/schema.ts';
import { pricedUsageOf } from '../../shapes/usage.ts';

type State = Activity;

/**
 * What each running task is doing now, in memory: its phase (waiting for the model, or running a
 * tool), since when, and when it last showed a sign of life (a byte of the model's answer, a line
 * of a command's output). An orchestrator tells a busy subagent from a stuck one by it. A task
 * running on another instance is answered as that instance last stored it (every lease renewal).
 */
export function createLiveness(now: () => number) {
  const states = new Map<string, State>();
  const touch = (id: string) => {
    const s = states.get(id);
    if (s) s.lastActivityAt = now();
  };
  return {
    model(id: string, step: number) {
      const t = now();
      states.set(id, { phase: 'model', step, phaseSince: t, lastActivityAt: t });
    },
    tool(id: string, step: number, tool: string) {
      const t = now();
      states.set(id, { phase: 'tool', step, tool, phaseSince: t, lastActivityAt: t });
    },
    activity: touch,
    forget(id: string) {
      states.delete(id);
    },
    /** What a task running here is doing (for the other instances: stored with its lease). */
    snapshot(id: string): Activity | null {
      return states.get(id) ?? null;
    },
    /** The progress of a task that has not ended (null once it has). */
    of(row: TaskRow): Progress | null {
      const usage = pricedUsageOf(row);
      if (row.status === 'queued') return { phase: 'queued', step: row.steps, phaseSince: iso(row.createdAt), lastActivityAt: iso(row.createdAt), usage };
      if (row.status === 'paused') {
        const since = iso(row.pausedAt ?? now());
        const pause = row.pause;
        // Paused on the caller: what it waits for, so a client that reconnects sees it in a heartbeat.
        const pending = pause && pause.reason !== 'budget' ? pause.pending.filter((p) => p.answer === null).map(({ answer: _a, ...p }) => p) : undefined;
        return {
          phase: 'paused',
          step: row.steps,
          ...(pause && { reason: pause.reason }),
          ...(pending && { pending }),
          phaseSince: since,
          lastActivityAt: since,
          usage,
        };
      }
      if (row.status !== 'running') return null;
      // An ACP agent that waits for the caller's answer to its permission request, running on.
      const live = row.waitingCalls?.live ? row.waitingCalls.calls.filter((c) => c.decision === 'ask' && c.answer === null) : [];
      const waiting = live.length > 0 && {
        reason: 'approval' as const,
        pending: live.map((c) => ({ kind: 'approval' as const, requestId: c.requestId, toolCallId: c.toolCallId, toolName: c.toolName, input: c.input })),
      };
      // Running on another instance (PostgreSQL): as its owner last stored it with its lease.
      const s = states.get(row.id) ?? row.activity;
      const started = iso(row.startedAt ?? row.createdAt);
      if (!s) return { phase: 'model', step: row.steps + 1, ...waiting, phaseSince: started, lastActivityAt: started, usage };
      const phase = { phase: s.phase, step: s.step, ...(s.tool && { tool: s.tool }), ...waiting };
      return { ...phase, phaseSince: iso(s.phaseSince), lastActivityAt: iso(s.lastActivityAt), usage };
    },
  };
}

export type Liveness = ReturnType<typeof createLiveness>;
