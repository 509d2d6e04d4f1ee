import { randomUUID } from 'node:crypto';
import { capPayload } from '../../events/cap-payload.ts';
import { createDeltaCoalescer } from '../../loop/delta-coalescer.ts';
import type { AgentObserver } from '../../loop/run-agent.ts';
import { forStorage } from '../../loop/transcript.ts';
import { usageOf, type TokenUsage } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import { TaskTakenOver, type TaskStore } from '../../store/task-store.ts';
import type { Append } from '../../events/event-log.ts';
import type { TaskTrace } from '../../telemetry/tracing.ts';
import type { RunContext } from './run-context.ts';
import type { HookRan } from '../../hooks/task-hooks.ts';

export interface TaskObserverOptions {
  row: TaskRow;
  /** The task's model, and the one its compactions call. */
  model: string;
  compactionModel: string;
  trace: TaskTrace;
}

export type TaskObserver = AgentObserver & {
  /**
   * The run is over: the writes still held (see `hold`) wait for the task's next transaction (its
   * end or its pause), or its `events.flush`.
   */
  close(): void;
  /**
   * Holds `write` until the task's next write, to commit with it: most often the next step's
   * start, so a step's end and the next one's start are one commit, not two. Every other write
   * of the observer starts it first, in order.
   */
  hold(write: HeldWrite): void;
  /** Starts the held writes now. */
  release(): void;
  /** A model call ended with `usage`: billed now, before the loop runs its tools. */
  /** Bills a call; settles once the bill is stored (or could not be). */
  modelUsage(usage: TokenUsage, model: string): Promise<void>;
  /** A hook of the definition ran: its event; a failure or a timeout is logged too. */
  hookRan(ran: HookRan): void;
};

type HeldWrite = (s: TaskStore, append: Append) => Promise<void>;

/**
 * What a model run reports, turned into the task's record: every call billed the moment it ends
 * (once: a key per call, in one commit with the step's events so far), the step's count,
 * conversation and event committed together (with the next step's start), liveness, the trace's
 * spans, and the events of the stream.
 */
export function createTaskObserver(ctx: RunContext, opts: TaskObserverOptions): TaskObserver {
  const { row, compactionModel, trace } = opts;
  /** The model the steps run on now (a fallback changes it). */
  let model = opts.model;
  const { deps } = ctx;
  const { events, logger } = deps;
  const deltas = createDeltaCoalescer((step, text) => events.append(row, 'text.delta', { step, text }));
  const log = logger.child({ taskId: row.id });
  let current = 0;
  /** Writes waiting for the task's next one (`hold`), in order. */
  let held: HeldWrite[] = [];
  const stored = (p: Promise<void>, what: string) =>
    p.catch((err) => {
      if (err instanceof TaskTakenOver) throw err;
      log.error({ err, step: current }, `could not store ${what}`);
    });
  /**
   * Starts the held writes' transaction, ahead of whatever the task writes next. Answers its
   * commit, which fails only with `TaskTakenOver` (another instance runs the task now); any other
   * failure is logged.
   */
  const commitHeld = (): Promise<void> | undefined => {
    if (held.length === 0) {
      // Events held for this task's next write (its start event: task-runner.ts) go in now.
      if (events.held(row.id)) return stored(events.flush(row.id), 'the events of the task');
      return undefined;
    }
    const writes = held;
    held = [];
    return stored(
      ctx.writes.owned(row, async (s, append) => {
        for (const w of writes) await w(s, append);
      }),
      'the finished step',
    );
  };
  /** The same, not waited for: a task taken over finds out at its next owned write. */
  const release = () => void commitHeld()?.catch(() => {});
  return {
    close: () => {
      deltas.close();
      if (held.length === 0) return release();
      // The run's last writes (its last step's end, most often) go in with the task's next
      // transaction, its end or its pause: one commit instead of two (task-runner.ts flushes
      // them when the task ends without one).
      const writes = held;
      held = [];
      ctx.writes.holdOwned(row, async (s, append) => {
        for (const w of writes) await w(s, append);
      });
    },
    hold: (write) => void held.push(write),
    release,
    stepStarted(step) {
      current = step;
      trace.modelCallStarted(model);
      deps.liveness.model(row.id, step);
      deltas.flush();
      if (held.length === 0 && !events.held(row.id)) {
        events.append(row, 'step.started', { step });
        return;
      }
      held.push(async (_s, append) => append(row, 'step.started', { step }));
      return commitHeld();
    },
    modelUsage(usage, calledModel) {
      trace.modelCallEnded(calledModel, usage);
      release();
      deltas.flush();
      const step = Math.max(current, 1);
      const at = deps.now();
      const cost = ctx.costOf(calledModel, usage);
      // One key per call: the write may be repeated (a COMMIT whose answer the connection lost).
      const callKey = randomUUID();
      // The step's events still waiting to be written go in the same commit, before it.
      const billed = ctx.writes.bill(row, { step, usage, model: calledModel, costMicroUsd: cost, at, callKey });
      if (deps.storage.fault !== null) {
        // The only copy is in memory until the database takes it: say so where operators look.
        logger.warn({ taskId: row.id, step, usage }, 'usage kept in memory until the database can be written');
      }
      deps.metrics.callBilled(usage, cost);
      return billed.then(
        () => {},
        (err: unknown) => logger.error({ err, taskId: row.id, step, usage }, 'usage could not be stored'),
      );
    },
    textDelta: (step, text) => {
      release();
      deltas.push(step, text);
    },
    modelActivity: () => deps.liveness.activity(row.id),
    compactionStarted: () => trace.modelCallStarted(compactionModel),
    toolCall(step, call) {
      release();
      deltas.flush();
      deps.liveness.tool(row.id, step, call.toolName);
      trace.toolStarted(call.toolCallId, call.toolName);
      events.append(row, 'tool.call', { step, ...call, input: capPayload(call.input) });
    },
    toolResult(step, result) {
      release();
      deltas.flush();
      deps.liveness.activity(row.id);
      trace.toolEnded(result.toolCallId, result.isError ? String(result.output) : null);
      events.append(row, 'tool.result', { step, ...result, output: capPayload(result.output) });
    },
    stepFinished(step, finishReason, usage, added) {
      release();
      deltas.flush();
      // The step count, what the step added to the conversation and the event that reports the
      // step commit together: a resume continues exactly after the last step that has all three.
      // Held until the task's next write (the next step's start, most often: one commit).
      const messages = forStorage(added);
      const cost = ctx.costOf(model, usage);
      // Its last events (the tools' results) wait for that commit too.
      events.hold(row.id);
      held.push(async (s, append) => {
        await s.finishStep(row.id, step, messages);
        append(row, 'step.finished', { step, finishReason, usage: { ...usageOf(usage), costMicroUsd: cost } });
      });
    },
    answeredCallsRan(step, added) {
      release();
      deltas.flush();
      // The results join the step that asked for them; the answers are marked acted on with them.
      const messages = forStorage(added);
      const waiting = row.waitingCalls;
      ctx.writes
        .owned(row, async (s) => {
          await s.appendMessages(row.id, step, messages);
          if (waiting) await s.waitingCallsRan(row.id, waiting);
        })
        .catch((err) => log.error({ err, step }, 'could not store the results of the answered calls'));
    },
    modelFallback(step, info) {
      release();
      deltas.flush();
      model = info.to;
      // The task and its record name the model it runs on now; calls are billed by their own model.
      ctx.writes
        .owned(row, async (s, append) => {
          await s.setModel(row.id, info.to);
          append(row, 'model.fallback', { step, ...info, reason: ctx.scrub(info.reason) });
        })
        .catch((err) => log.error({ err, step }, 'could not store the model fallback'));
    },
    hookRan(ran) {
      release();
      deltas.flush();
      const reason = ran.reason === undefined ? undefined : ctx.scrub(ran.reason);
      if (ran.decision === 'failed' || ran.decision === 'timeout') {
        log.warn(
          { step: ran.step, event: ran.event, matcher: ran.matcher, toolName: ran.toolName, decision: ran.decision, reason },
          'a hook failed; nothing was blocked',
        );
      }
      const { updatedInput, ...rest } = ran;
      events.append(row, 'hook.ran', {
        ...rest,
        ...(reason !== undefined && { reason }),
        ...(updatedInput !== undefined && { updatedInput: capPayload(updatedInput) }),
      });
    },
    messageReceived(_step, text) {
      release();
      deltas.flush();
      events.append(row, 'message.received', { text });
    },
    compacted(step, info, conversation) {
      release();
      deltas.flush();
      const messages = forStorage(conversation);
      ctx.writes
        .owned(row, async (s, append) => {
          await s.replaceMessages(row.id, step - 1, messages);
          append(row, 'context.compacted', info);
        })
        .catch((err) => log.error({ err, step }, 'could not store the compacted conversation'));
    },
  };
}
