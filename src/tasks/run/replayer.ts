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
  /** Each call the model made, by its id: its step and its input as the model wrote it (before any hook rewrote it). */
  const made = new Map<string, { step: number; input: unknown }>();
  const answered = new Set<string>();
  for (const e of own) {
    const d = e.data as { step: number; toolCallId: string; input?: unknown };
    if (e.type === 'tool.call') made.set(d.toolCallId, { step: d.step, input: d.input ?? null });
    else if (e.type === 'tool.result') answered.add(d.toolCallId);
  }
  // Resumed: the calls of the steps it finished that have their result are behind it; those of the
  // step cut are made again, and those a pause left waiting (an approval) are answered now.
  let position = own.filter((e) => {
    const d = e.data as { step: number; toolName: string; toolCallId: string };
    return e.type === 'tool.call' && answerable(d.toolName) && d.step <= row.steps && answered.has(d.toolCallId);
  }).length;
  // Diverged in a step it finished: live from the start; in the step cut, that step is made again.
  const diverged = own.find((e) => e.type === 'replay.diverged' && (e.data as { step: number }).step <= row.steps);
  let divergedAt: number | null = replay.tools === 'live' ? null : ((diverged?.data as { step: number } | undefined)?.step ?? null);
  let live = replay.tools === 'live' || divergedAt !== null;

  /** What each call the model made gets: the record's answer, or to run (decided as any call). */
  const verdicts = new Map<string, Result | 'run'>();

  /**
   * Judges a call the model made, in the order it made them: equal (name and the input the model
   * wrote, before any hook rewrote it) to the record's next call, it is answered from the record;
   * else the replay diverges and every call from then on runs. A call the original was refused
   * or that failed there (a permission rule, an approval denied, a hook's block, a tool error) is
   * decided and run again: its refusal was the original's rules', not a result to serve; the
   * replay still follows the record. A call refused again here never runs, as in any task.
   */
  function judge(toolCallId: string, toolName: string, input: unknown, step: number): Result | 'run' {
    const known = verdicts.get(toolCallId);
    if (known) return known;
    let verdict: Result | 'run' = 'run';
    if (!live && answerable(toolName)) {
      const expected = recorded[position];
      if (expected && expected.toolName === toolName && isDeepStrictEqual(expected.input, input)) {
        position++;
        if (!expected.isError) verdict = expected;
      } else {
        live = true;
        divergedAt = step;
        ctx.deps.events.append(row, 'replay.diverged', {
          step,
          expected: expected ? { toolName: expected.toolName, input: expected.input } : null,
          got: { toolName, input },
        });
      }
    }
    verdicts.set(toolCallId, verdict);
    return verdict;
  }

  return {
    /** The step of the first call that differed from the record (null: none did, or it ran live from the start). */
    divergedAtStep: () => divergedAt,

    /** The model made call `toolCallId` at `step` (the observer's `toolCall`, after its `tool.call` event). */
    saw(step: number, call: { toolCallId: string; toolName: string; input: unknown }): void {
      made.set(call.toolCallId, { step, input: call.input });
      judge(call.toolCallId, call.toolName, call.input, step);
    },

    /** `tool`, answered from the record while the replay follows it. */
    wrap(tool: WorkspaceTool): WorkspaceTool {
      if (LIVE_ALWAYS.has(tool.name)) return tool;
      return {
        ...tool,
        execute: async (input, context, call) => {
          // A call answered after a pause was made before it: judged now, from its stored `tool.call`.
          const earlier = call ? made.get(call.toolCallId) : undefined;
          const verdict = call ? judge(call.toolCallId, tool.name, earlier ? earlier.input : input, earlier?.step ?? row.steps + 1) : 'run';
          if (verdict === 'run') return tool.execute(input, context, call);
          ctx.deps.events.append(row, 'tool.replayed', { step: earlier?.step ?? row.steps + 1, toolCallId: call!.toolCallId, toolName: tool.name });
          return verdict.output;
        },
      };
    },
  };
}

export type Replayer = Awaited<ReturnType<typeof createReplayer>>;
