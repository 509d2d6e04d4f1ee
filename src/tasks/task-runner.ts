import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Logger } from 'pino';
import type { AgentDefinition } from '../definitions/agent-definition.ts';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { createCompleteTool } from '../loop/complete-tool.ts';
import { createDeltaCoalescer } from '../loop/delta-coalescer.ts';
import type { ModelProvider } from '../loop/model-provider.ts';
import { guardModel } from '../loop/model-guard.ts';
import { errorMessage, runAgent, type AgentObserver } from '../loop/run-agent.ts';
import { buildSystemPrompt } from '../loop/system-prompt.ts';
import { forStorage } from '../loop/transcript.ts';
import { capPayload } from '../events/cap-payload.ts';
import type { Append, EventLog } from '../events/event-log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { TaskRow } from '../store/schema.ts';
import { createTaskStore, TaskTakenOver, type TaskStore } from '../store/task-store.ts';
import { runCommand } from '../sandbox/run-command.ts';
import { checkArtifacts } from '../workspace/artifacts.ts';
import { runAcp } from '../acp/run-acp.ts';
import { storageFaultOf, type StorageGuard } from '../store/storage-guard.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { ToolContext } from '../tools/tool-types.ts';
import type { Workspace } from '../workspace/workspace.ts';
import { openWorkspace, type WorkspacesDirOf } from '../workspace/workspace.ts';
import { workspaceTools } from '../tools/workspace-tools.ts';
import { endingOfAbort, failed, finishTask, type Ending } from './finish-task.ts';
import { abortCode } from './task-abort.ts';
import { usageOf, type CreateTaskBody, type Pause, type TokenUsage } from '../shapes/task.ts';
import { costMicroUsd, type PriceTable } from '../money/prices.ts';
import type { Budgets } from '../money/budgets.ts';
import type { Liveness } from './liveness.ts';
import type { TaskTrace, Tracing } from '../telemetry/tracing.ts';

export interface RunOptions {
  takeMessages?: () => Promise<string[]>;
  /** Why a `running` task is run again. */
  resumeReason?: 'restart' | 'budget';
  /** Called once the task is stored as started (or could not be). */
  onStarted?: () => void;
  /**
   * PostgreSQL: resolves while this instance still holds the task's lease, and otherwise stops the
   * task and rejects; asked before every model call and before a call's tools run, so an owner
   * that was deposed (paused past its lease) starts nothing more.
   */
  confirmLease?: () => Promise<void>;
}

export interface RunnerDeps {
  store: TaskStore;
  events: EventLog;
  registry: AgentRegistry;
  modelProvider: ModelProvider;
  metrics: Metrics;
  logger: Logger;
  now: () => number;
  /** Folder holding the workspaces of a tenant. */
  workspacesDirOf: WorkspacesDirOf;
  limits: { bashTimeoutMs: number; bashMaxOutputBytes: number; modelMaxRetries: number; modelStallTimeoutMs: number };
  sandbox: Sandbox;
  /** Writes that must survive a full disk go through it (usage, step and end states). */
  storage: StorageGuard;
  /** Prices of the models, for what each call costs. */
  prices: PriceTable;
  budgets: Budgets;
  liveness: Liveness;
  tracing: Tracing;
  /** Strings that must never reach a task's error message (provider keys). */
  secrets: string[];
  /** Where an ACP definition's allowed variables are read from. */
  serviceEnv: Record<string, string | undefined>;
  /** PostgreSQL: this instance; a task's end is written only while it owns the task. */
  instanceId?: string | null;
}

/** What every kind of run gets: the task, its body and definition, its workspace, its abort signal. */
interface TaskRun {
  row: TaskRow;
  body: CreateTaskBody;
  def: AgentDefinition;
  workspace: Workspace;
  signal: AbortSignal;
}

/** A model run also gets its model, the steering messages, its trace and the lease check. */
interface ModelRun extends TaskRun {
  model: string;
  takeMessages: () => Promise<string[]>;
  trace: TaskTrace;
  confirmLease?: () => Promise<void>;
}

/**
 * Runs one task from `queued` to its end: marks it started (opening its usage record), runs the
 * shell command or the agent loop, and writes the end state, the record and `task.finished` together.
 * It never throws: whatever happens becomes the task's status.
 */
export function createTaskRunner(deps: RunnerDeps) {
  const { store, events, logger } = deps;
  /** PostgreSQL: a task's steps are stored only while this instance owns it. */
  const owner = deps.instanceId ?? null;

  /**
   * Runs a queued task, or resumes one (`row.status` is then `running`: after a restart, or after
   * a budget pause): it keeps its start, its record and its stream, and continues after its last
   * finished step. `takeMessages` hands over the steering messages waiting for the next step.
   * Returns the task as it is now: ended, or `paused` at a budget (or left `running` at shutdown).
   */
  async function run(row: TaskRow, signal: AbortSignal, opts: RunOptions = {}): Promise<TaskRow> {
    const takeMessages = opts.takeMessages ?? (() => store.takeMessages(row.id));
    const body = row.request;
    const def = deps.registry.get(row.subagentType);
    const model = def && def.kind === 'model' ? (body.options?.model ?? def.model) : null;
    const resumed = row.status === 'running';
    const startedAt = resumed ? (row.startedAt ?? deps.now()) : deps.now();
    const log = logger.child({ taskId: row.id });
    const trace = deps.tracing.startTask(row, model);
    let ending: Ending;
    try {
      try {
        if (!resumed) await store.markStarted(row, model, startedAt, owner);
      } finally {
        opts.onStarted?.();
      }
      log.info(
        { subagentType: row.subagentType, parentTaskId: row.parentTaskId, userId: row.userId, model, ...(resumed && { resumedAfterStep: row.steps }) },
        resumed ? 'task resumed' : 'task started',
      );
      if (!def) throw new Error(`subagent type "${row.subagentType}" is no longer defined`);
      const workspace = await openWorkspace(deps.workspacesDirOf(row.tenant), row.parentTaskId);
      if (resumed) events.append(row, 'task.resumed', { fromStep: row.steps + 1, attempt: row.resumes, reason: opts.resumeReason ?? 'restart' });
      else events.append(row, 'task.started', { subagent_type: row.subagentType, model, workspace: workspace.root });
      const taskRun: TaskRun = { row, body, def, workspace, signal };
      const outcome =
        def.kind === 'shell'
          ? await runShell(taskRun)
          : def.kind === 'acp'
            ? await runExternal(taskRun)
            : await runModel({ ...taskRun, model: model!, takeMessages, trace, confirmLease: opts.confirmLease });
      if ('pause' in outcome) {
        const paused = await pause(row, outcome.pause, log);
        trace.end(paused, null);
        return paused;
      }
      ending = outcome;
    } catch (err) {
      // Another instance owns the task now: nothing more of it is written here.
      if (err instanceof TaskTakenOver) {
        deps.liveness.forget(row.id);
        trace.end(row, null);
        throw err;
      }
      const fault = storageFaultOf(err);
      if (fault) deps.storage.report(err);
      // Stopped (cancelled, timed out, its lease lost): expected, and said once the task ends.
      if (signal.aborted) log.info({ reason: abortCode(signal).code }, 'task stopped');
      else log.error({ err }, 'task failed');
      ending = fault ? failed(fault, 'the database could not be written') : failed('internal_error', scrub(errorMessage(err)));
    }

    deps.liveness.forget(row.id);
    const left = signal.aborted ? abortCode(signal).code : null;
    if (left === 'handed_over' || left === 'taken_over') {
      // The service is stopping (the task stays `running`, its record open, for the next start),
      // or another instance runs the task now: nothing more of it is written here.
      const now = (await store.getById(row.id).catch(() => undefined)) ?? row;
      log.info({ steps: now.steps }, left === 'handed_over' ? 'task left running for the next start to resume' : 'task taken over by another instance');
      trace.end(now, null);
      return now;
    }
    const completedAt = deps.now();
    // Waits (holding the task's slot) while the database cannot be written, then writes in order.
    const finished = await finishTask(deps, row, ending, completedAt);
    trace.end(finished, finished.errorMessage);
    deps.metrics.taskFinished(finished, completedAt - startedAt);
    log.info(
      {
        subagentType: finished.subagentType,
        status: finished.status,
        stopReason: finished.stopReason,
        errorCode: finished.errorCode,
        steps: finished.steps,
        ...usageOf(finished),
        durationMs: completedAt - startedAt,
      },
      'task finished',
    );
    return finished;
  }

  async function runShell({ row, body, workspace: ws, signal }: TaskRun): Promise<Ending> {
    if (deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
    const r = await runCommand({
      command: body.command!,
      cwd: ws.root,
      // The task's own timeout aborts the signal; this only guards against a lost timer.
      timeoutMs: 24 * 3600_000,
      maxOutputBytes: deps.limits.bashMaxOutputBytes,
      signal,
      launch: (argv) => deps.sandbox.wrap(ws.root, argv),
      limiter: deps.sandbox.limiter,
    });
    const output = { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, truncated: r.truncated };
    if (signal.aborted) return { ...endingOfAbort(abortCode(signal)), output };
    return {
      status: 'completed',
      summary: `command exited with code ${r.exitCode}`,
      artifacts: [],
      skipped: [],
      output,
      stopReason: null,
      errorCode: null,
      errorMessage: null,
    };
  }

  /**
   * A task of an external ACP agent: one prompt turn is its one step. Its updates become events as
   * they come; its usage (when it reports any) is billed once at the end, else the record says
   * the usage is unknown; the files it wrote are checked into artifacts.
   */
  async function runExternal({ row, body, def, workspace, signal }: TaskRun): Promise<Ending> {
    if (!def.acp) return failed('internal_error', `definition "${def.type}" has no ACP command`);
    if (deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
    const step = 1;
    const deltas = createDeltaCoalescer((s, text) => events.append(row, 'text.delta', { step: s, text }));
    deps.liveness.model(row.id, step);
    events.append(row, 'step.started', { step });
    const out = await runAcp({
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
      },
    });
    deltas.close();
    const model = def.model ?? `acp:${def.type}`;
    const usage = out.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
    const cost = out.usage ? costOf(model, out.usage) : null;
    // Fixed outside the transaction: written again after a lost COMMIT answer, it bills once.
    const callKey = randomUUID();
    const billedAt = deps.now();
    await ownedTransaction(row, async (s, append) => {
      if (out.usage) await s.addUsage(row.id, step, out.usage, { model, costMicroUsd: cost }, billedAt, callKey);
      else await s.usageUnreported(row.id);
      await s.countStep(row.id);
      append(row, 'step.finished', { step, finishReason: out.stopReason ?? 'error', usage: { ...usage, costMicroUsd: cost } });
    });
    if (out.usage) deps.metrics.callBilled(out.usage, cost);
    const checked = await checkArtifacts(workspace, out.written);
    const delivered = { summary: out.summary || null, ...checked, output: null };
    if (signal.aborted) return { ...endingOfAbort(abortCode(signal)), ...delivered };
    if (out.failure) return { ...failed(out.failure.code, scrub(out.failure.message)), ...delivered };
    return { status: 'completed', ...delivered, stopReason: out.stopReason === 'end_turn' ? 'text' : 'max_steps', errorCode: null, errorMessage: null };
  }

  async function runModel(run: ModelRun): Promise<Ending | { pause: Pause }> {
    const { row, body, def, model, workspace, signal, takeMessages, trace, confirmLease = async () => {} } = run;
    const toolNames = def.tools;
    const tools = toolNames
      .map((name) => (name === 'complete' ? createCompleteTool(body.options?.outputSchema) : workspaceTools[name]))
      .filter((t) => t !== undefined);
    const toolContext: ToolContext = {
      workspace,
      signal,
      limits: deps.limits,
      sandbox: deps.sandbox,
      onActivity: () => deps.liveness.activity(row.id),
    };
    const compactionModel = def.compactionModel === 'inherit' ? model : def.compactionModel;
    const observer = createObserver(row, model, trace, compactionModel);
    // Every call is billed the moment it ends, before the loop runs its tools.
    const guarded = (id: string) =>
      guardModel(deps.modelProvider(id), {
        onUsage: (usage) => observer.modelUsage(usage, id),
        stallTimeoutMs: deps.limits.modelStallTimeoutMs,
        maxRetries: deps.limits.modelMaxRetries,
      });
    const result = await runAgent({
      model: guarded(model),
      system: buildSystemPrompt(def, {
        now: new Date(deps.now()),
        timezone: body.context.timezone,
        tools: toolNames,
      }),
      messages: await conversationOf(row, body),
      beforeCall: async (): Promise<Pause | null> => {
        await confirmLease();
        // What the last calls cost is billed before it is compared with the budgets.
        await deps.storage.settled();
        const now = (await store.getById(row.id))!;
        return deps.budgets.reached(now, now.budget ?? undefined, deps.now());
      },
      beforeTools: async () => {
        await deps.storage.settled();
        await confirmLease();
      },
      doneSteps: row.steps,
      takeMessages,
      compaction: { atTokens: def.compactAtTokens, model: guarded(compactionModel), modelId: compactionModel },
      tools,
      toolContext,
      maxSteps: Math.min(body.options?.maxSteps ?? def.maxSteps, def.maxSteps),
      maxRetries: deps.limits.modelMaxRetries,
      temperature: def.temperature,
      signal,
      observer,
    });
    observer.close();

    if (result.stoppedBy && !signal.aborted) return { pause: result.stoppedBy };
    const delivered = {
      summary: result.complete?.summary ?? (result.finalText || null),
      artifacts: result.complete?.artifacts ?? [],
      skipped: result.complete?.skipped ?? [],
      output: result.complete?.output ?? null,
    };
    if (result.aborted) return { ...endingOfAbort(abortCode(signal)), ...delivered };
    if (result.stalled) {
      return { ...failed('provider_timeout', `the model sent nothing for ${deps.limits.modelStallTimeoutMs} ms; the request was cut`), ...delivered };
    }
    if (result.error) {
      return { ...failed('provider_error', scrub(errorMessage(result.error))), ...delivered };
    }
    return { status: 'completed', ...delivered, stopReason: result.stopReason, errorCode: null, errorMessage: null };
  }

  /**
   * A transaction over the task's store and events that writes only while this instance owns the
   * task (fencing: `TaskTakenOver` otherwise, and nothing is written); events appended in it are
   * published once it commits.
   */
  function ownedTransaction(row: TaskRow, body: (s: TaskStore, append: Append) => Promise<void>): Promise<void> {
    return events.transaction(row.id, async (tx, append) => {
      const s = createTaskStore(tx);
      await s.assertOwned(row.id, owner);
      await body(s, append);
    });
  }

  /** A budget was reached: `running → paused` with `task.paused`, in one transaction; the slot is freed. */
  async function pause(row: TaskRow, why: Pause, log: Logger): Promise<TaskRow> {
    await ownedTransaction(row, async (s, append) => {
      await s.pause(row.id, why, deps.now());
      append(row, 'task.paused', why);
    });
    log.info({ pause: why }, 'task paused at a budget');
    return (await store.getById(row.id))!;
  }

  /**
   * The conversation a task continues from: its own stored one when it is resumed; else what it
   * starts with (the earlier task's conversation for a follow-up, then the prompt), stored as its step 0.
   */
  async function conversationOf(row: TaskRow, body: CreateTaskBody): Promise<ModelMessage[]> {
    const stored = await store.messages(row.id);
    if (stored.length > 0) return stored;
    const earlier = row.previousTaskId ? await store.messages(row.previousTaskId) : [];
    const start: ModelMessage[] = [...earlier, { role: 'user', content: body.prompt! }];
    await ownedTransaction(row, (s) => s.appendMessages(row.id, 0, start));
    return start;
  }

  /** What a call to `model` with `usage` cost now, in micro-dollars; null when the model has no price. */
  function costOf(model: string, usage: TokenUsage): number | null {
    const rates = deps.prices.ratesOf(model, deps.now(), usage.inputTokens);
    return rates ? costMicroUsd(usage, rates) : null;
  }

  function createObserver(row: TaskRow, model: string, trace: TaskTrace, compactionModel: string): AgentObserver & { close(): void; modelUsage(usage: TokenUsage, model: string): void } {
    const deltas = createDeltaCoalescer((step, text) => events.append(row, 'text.delta', { step, text }));
    const log = logger.child({ taskId: row.id });
    let current = 0;
    return {
      close: deltas.close,
      stepStarted(step) {
        current = step;
        trace.modelCallStarted(model);
        deps.liveness.model(row.id, step);
        deltas.flush();
        events.append(row, 'step.started', { step });
      },
      modelUsage(usage, calledModel) {
        trace.modelCallEnded(calledModel, usage);
        // Events appended before stay before it in the store (the write queue keeps the order).
        void events.flush(row.id).catch(() => undefined);
        const step = Math.max(current, 1);
        const at = deps.now();
        const cost = costOf(calledModel, usage);
        // One key per call: the write may be repeated (a COMMIT whose answer the connection lost).
        const callKey = randomUUID();
        const billed = deps.storage.write(() => store.addUsage(row.id, step, usage, { model: calledModel, costMicroUsd: cost }, at, callKey));
        if (deps.storage.fault !== null) {
          // The only copy is in memory until the database takes it: say so where operators look.
          logger.warn({ taskId: row.id, step, usage }, 'usage kept in memory until the database can be written');
        }
        void billed.catch((err) => logger.error({ err, taskId: row.id, step, usage }, 'usage could not be stored'));
        deps.metrics.callBilled(usage, cost);
      },
      textDelta: deltas.push,
      modelActivity: () => deps.liveness.activity(row.id),
      compactionStarted: () => trace.modelCallStarted(compactionModel),
      toolCall(step, call) {
        deltas.flush();
        deps.liveness.tool(row.id, step, call.toolName);
        trace.toolStarted(call.toolCallId, call.toolName);
        events.append(row, 'tool.call', { step, ...call, input: capPayload(call.input) });
      },
      toolResult(step, result) {
        deltas.flush();
        deps.liveness.activity(row.id);
        trace.toolEnded(result.toolCallId, result.isError ? String(result.output) : null);
        events.append(row, 'tool.result', { step, ...result, output: capPayload(result.output) });
      },
      stepFinished(step, finishReason, usage, added) {
        deltas.flush();
        // The step count, what the step added to the conversation and the event that reports the
        // step commit together: a resume continues exactly after the last step that has all three.
        const messages = forStorage(added);
        ownedTransaction(row, async (s, append) => {
          await s.countStep(row.id);
          await s.appendMessages(row.id, step, messages);
          append(row, 'step.finished', { step, finishReason, usage: { ...usage, costMicroUsd: costOf(model, usage) } });
        }).catch((err) => log.error({ err, step }, 'could not store the finished step'));
      },
      messageReceived(_step, text) {
        deltas.flush();
        events.append(row, 'message.received', { text });
      },
      compacted(step, info, conversation) {
        deltas.flush();
        const messages = forStorage(conversation);
        ownedTransaction(row, async (s, append) => {
          await s.replaceMessages(row.id, step - 1, messages);
          append(row, 'context.compacted', info);
        }).catch((err) => log.error({ err, step }, 'could not store the compacted conversation'));
      },
    };
  }

  function scrub(message: string): string {
    let out = message;
    for (const s of deps.secrets) if (s) out = out.split(s).join('[redacted]');
    return out;
  }

  return { run };
}

export type TaskRunner = ReturnType<typeof createTaskRunner>;
