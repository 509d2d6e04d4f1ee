import { isDeepStrictEqual } from 'node:util';
import type { StoredEvent } from '../../events/event-types.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { WorkspaceTool } from '../../tools/tool-types.ts';
import type { RunContext } from './run-context.ts';

/** One call of the original, in the order its model made them, with what it read back. */
export interface RecordedCall {
  step: number;
  toolName: string;
  input: unknown;
  output: unknown;
  isError: boolean;
}

/** A call's result as the original's `tool.result` event holds it (a long one cut, and saying so). */
type Result = { output: unknown; isError: boolean };

/** Calls that are never answered from the record: `complete` ends the replay's own run. */
const LIVE_ALWAYS = new Set(['complete']);

/** The calls of a task's events, in order: each `tool.call` (but `complete`) with its `tool.result`. */
export function recordedCallsOf(events: Iterable<Event>): RecordedCall[] {
  const calls: Array<{ id: string; step: number; toolName: string; input: unknown }> = [];
  const results = new Map<string, Result>();
  for (const e of events) {
    const d = e.data as { step?: number; toolCallId?: string; toolName?: string; input?: unknown; output?: unknown; isError?: boolean };
    if (e.type === 'tool.call' && !LIVE_ALWAYS.has(String(d.toolName))) {
      calls.push({ id: String(d.toolCallId), step: Number(d.step), toolName: String(d.toolName), input: d.input ?? null });
    } else if (e.type === 'tool.result') {
      results.set(String(d.toolCallId), { output: d.output ?? null, isError: d.isError === true });
    }
  }
  // A call with no result (its run was cut) has nothing to answer with: the replay diverges there.
  const out: RecordedCall[] = [];
  for (const c of calls) {
    const r = results.get(c.id);
    if (!r) break;
    out.push({ step: c.step, toolName: c.toolName, input: c.input, ...r });
  }
  return out;
}

/** An event's type and data, as stored. */
type Event = { type: StoredEvent['type']; data: unknown };

/** Reads every stored event of a task, in order (paged). */
async function eventsOf(ctx: RunContext, taskId: string): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of ctx.deps.events.replay(taskId)) out.push({ type: e.type, data: (JSON.parse(e.json) as { data: unknown }).data });
  return out;
}

/**
 * A replay's tools: with `tools: recorded`, a call equal (name and input) to the original's call
 * at the same position is answered with the original's result and not run (`tool.replayed`); the
 * first that differs is reported (`replay.diverged`) and from then on every call runs, in the
 * replay's worktree copy. A resumed replay finds its place again from its own events: the calls of
 * the steps it finished, and whether it diverged.
 */
export async function createReplayer(ctx: RunContext, row: TaskRow) {
  const replay = row.replay!;
  // A caller-run tool's call is the caller's to answer again: not part of the record.
  const callers = new Set((row.request.options?.clientTools ?? []).map((t) => t.name));
  const recorded = replay.tools === 'recorded' ? recordedCallsOf(await eventsOf(ctx, replay.of)).filter((c) => !callers.has(c.toolName)) : [];
  const own = row.steps > 0 ? await eventsOf(ctx, row.id) : [];
  const answerable = (name: unknown) => !LIVE_ALWAYS.has(String(name)) && !callers.has(String(name));
  // Resumed: the calls of the steps it finished are behind it (those of the step cut are made again).
  let position = own.filter((e) => {
    const d = e.data as { step: number; toolName: string };
    return e.type === 'tool.call' && answerable(d.toolName) && d.step <= row.steps;
  }).length;
  // Diverged in a step it finished: live from the start; in the step cut, that step is made again.
  const diverged = own.find((e) => e.type === 'replay.diverged' && (e.data as { step: number }).step <= row.steps);
  let divergedAt: number | null = replay.tools === 'live' ? null : ((diverged?.data as { step: number } | undefined)?.step ?? null);
  let live = replay.tools === 'live' || divergedAt !== null;
  /** The step of each call the model made, by its id (its `tool.call` comes before it runs). */
  const stepOf = new Map<string, number>();

  function answer(tool: WorkspaceTool, input: unknown, toolCallId: string): Result | null {
    if (live || LIVE_ALWAYS.has(tool.name)) return null;
    const step = stepOf.get(toolCallId) ?? row.steps + 1;
    const expected = recorded[position];
    if (expected && expected.toolName === tool.name && isDeepStrictEqual(expected.input, input)) {
      position++;
      ctx.deps.events.append(row, 'tool.replayed', { step, toolCallId, toolName: tool.name });
      return expected;
    }
    live = true;
    divergedAt = step;
    ctx.deps.events.append(row, 'replay.diverged', {
      step,
      expected: expected ? { toolName: expected.toolName, input: expected.input } : null,
      got: { toolName: tool.name, input },
    });
    return null;
  }

  return {
    /** The step of the first call that differed from the record (null: none did, or it ran live from the start). */
    divergedAtStep: () => divergedAt,

    /** The model made call `toolCallId` at `step` (the observer's `toolCall`). */
    saw(step: number, toolCallId: string): void {
      stepOf.set(toolCallId, step);
    },

    /** `tool`, answered from the record while the replay follows it. */
    wrap(tool: WorkspaceTool): WorkspaceTool {
      if (LIVE_ALWAYS.has(tool.name)) return tool;
      return {
        ...tool,
        execute: async (input, context, call) => {
          const recordedResult = call ? answer(tool, input, call.toolCallId) : null;
          if (!recordedResult) return tool.execute(input, context, call);
          if (recordedResult.isError)
            throw new Error(typeof recordedResult.output === 'string' ? recordedResult.output : JSON.stringify(recordedResult.output));
          return recordedResult.output;
        },
      };
    },
  };
}

export type Replayer = Awaited<ReturnType<typeof createReplayer>>;
