import path from 'node:path';
import type { ModelMessage } from 'ai';
import { guardModel } from '../../loop/model-guard.ts';
import { errorMessage, runAgent, type AgentRunResult, type AnsweredCall, type DecidedCall } from '../../loop/run-agent.ts';
import { buildSystemPrompt } from '../../loop/system-prompt.ts';
import { readProjectInstructions } from '../../workspace/project-instructions.ts';
import { readMemoryIndex } from '../../workspace/memory.ts';
import type { ApprovalPause, CreateTaskBody, Fork, Pause } from '../../shapes/task.ts';
import { iso } from '../../shapes/time.ts';
import { loadShellParser } from '../../definitions/shell-commands.ts';
import { callDecider, childTypeOffered, mcpToolsOffered, needsSubjects, pathChecker, toolsOf } from '../../definitions/tool-set.ts';
import { taskLimits } from './task-limits.ts';
import { ulid } from '../../util/ids.ts';
import type { TaskRow, WaitingCalls } from '../../store/schema.ts';
import type { ToolContext } from '../../tools/tool-types.ts';
import { endingOfAbort, failed, type Ending } from '../writes/finish-task.ts';
import type { ModelRun, RunContext } from './run-context.ts';
import { abortCode, abortGraceFor } from './task-abort.ts';
import { whileStorageFails } from './storage-wait.ts';
import { childTaskTool } from './child-tool.ts';
import { leadTools } from './lead-tools.ts';
import type { McpSession } from '../../mcp/mcp-tools.ts';
import { startTaskEgress, type TaskEgress } from './task-egress.ts';
import { TaskTakenOver } from '../../store/task-store.ts';

import { createTaskObserver, type TaskObserver } from './task-observer.ts';
import { createReplayer } from './replayer.ts';
import { hasCommandHooks } from '../../hooks/hook-spec.ts';
import { createTaskHooks } from '../../hooks/task-hooks.ts';
import { createOutcomeCheck, outcomeOf } from './task-outcome.ts';

/**
 * A task of a model agent: the agent loop over the definition's tools, from the task's stored
 * conversation (a resume) or its prompt; before each call its lease and budgets are checked (a
 * reached budget pauses it: `{ pause }`), and every call is billed the moment it ends.
 */
export async function runModel(ctx: RunContext, run: ModelRun): Promise<Ending | { pause: Pause; waiting?: WaitingCalls }> {
  const { deps } = ctx;
  const { row, body, def, model, fallbackModels = [], workspace, signal, takeMessages, trace, confirmLease = async () => {} } = run;
  // The definition's rules and tools, narrowed by the task's own and every ancestor's: a tool
  // denied whole is not offered; a call is decided when the model makes it (tool-set.ts).
  const limits = await taskLimits(deps, row, def, body);
  // Nesting: the root's definition said how deep; every task of the tree keeps the tool, if its
  // limits do; the kinds of child it may start are those its limits can hold (tool-set.ts).
  const types = deps.registry.list().filter((t) => childTypeOffered(limits, t));
  const children = row.maxDepth > 0 ? deps.children : undefined;
  // A replay answers the calls that follow its original's record from it (replayer.ts).
  const replayer = row.replay ? await createReplayer(ctx, row) : null;
  const reach = children && { row, store: deps.store, children, now: deps.now };
  const tools = toolsOf(limits, def, {
    outputSchema: body.options?.outputSchema,
    clientTools: body.options?.clientTools,
    ...(reach && {
      lead: {
        task: (canWait) =>
          childTaskTool(row, types, reach.children, {
            background: canWait ? (def.background ?? false) : null,
            waitForStorage: (stop, start) => whileStorageFails(deps, row.id, stop, 'a subagent waits: the service cannot store it now', start),
          }),
        ...leadTools(reach),
      },
    }),
  });
  const shellTypes = new Set(types.filter((t) => t.kind === 'shell').map((t) => t.type));
  const base = { root: workspace.root, cwd: workspace.cwd, folders: workspace.folders };
  const decide = callDecider(limits, { shell: needsSubjects(limits.permissions, 'bash') ? await loadShellParser(row.tenant, signal) : null, shellTypes, base });
  const checkPath = pathChecker(limits, base);
  // The definition's MCP servers and the commands' proxy live as long as this run, whatever ends it.
  let mcp: McpSession | null = null;
  let egress: TaskEgress | null = null;
  const compactionModel = def.compactionModel === 'inherit' ? model : def.compactionModel;
  // Created first: its `close` (below, whatever ends the run) writes what it holds.
  const watch = createTaskObserver(ctx, { row, model, compactionModel, trace });
  let result: AgentRunResult<Pause>;
  /** Set when a step's calls asked for approval: the pause and the calls it waits on. */
  const asked: { waiting?: WaitingCalls } = {};
  let outcome: ReturnType<typeof createOutcomeCheck> | null | undefined;
  try {
    const network = limits.network;
    // Servers and a proxy to start first: the task's start event is not held that long.
    if (network || (def.mcpServers && Object.keys(def.mcpServers).length > 0)) watch.release();
    egress = await startTaskEgress(ctx, row, signal, network);
    // The definition's MCP servers, started for this run, their tools filtered as the others are.
    if (def.mcpServers && Object.keys(def.mcpServers).length > 0) {
      const commands = Object.values(def.mcpServers).some((s) => 'command' in s);
      if (commands && deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
      // The MCP SDK is loaded by the first task that needs it: a process without MCP servers never holds it.
      const { McpServerFailed, openMcpServers } = await import('../../mcp/mcp-tools.ts');
      try {
        mcp = await openMcpServers(def.mcpServers, {
          workspace,
          sandbox: deps.sandbox,
          serviceEnv: deps.serviceEnv,
          timeoutMs: deps.limits.bashTimeoutMs,
          maxOutputBytes: deps.limits.bashMaxOutputBytes,
          ...(egress && { egress: egress.inside }),
          // A definition that says what it reaches says it for its URL servers too (none: not one).
          ...(def.network !== undefined && { urlPolicy: { allow: network?.allow ?? [], allowPrivate: deps.egress?.allowPrivate ?? false } }),
        });
      } catch (err) {
        if (err instanceof McpServerFailed) return failed(err.code, ctx.scrub(err.message));
        throw err;
      }
      tools.push(...mcpToolsOffered(limits, def, mcp.tools));
    }
    const toolContext: ToolContext = {
      workspace,
      signal,
      limits: deps.limits,
      sandbox: deps.sandbox,
      onActivity: () => deps.liveness.activity(row.id),
      ...(checkPath && { checkPath }),
    };
    // Hosts its commands may reach: a proxy of its own, which only the sandbox's network namespace
    // makes the one way out (BASH_SANDBOX=none has no namespace: commands have the host's network).
    if (egress) toolContext.egress = egress.inside;
    // Its definition's hooks: commands run where its bash runs (a task that cannot run them does not
    // run without them); URLs are sent as webhooks are.
    if (hasCommandHooks(def.hooks) && deps.sandbox.kind === 'unavailable') return failed('sandbox_unavailable', deps.sandbox.reason ?? 'no sandbox');
    const hooks =
      def.hooks &&
      createTaskHooks({
        hooks: def.hooks,
        place: {
          tools: toolContext,
          secret: deps.hooks?.secret ?? null,
          allowPrivate: deps.hooks?.allowPrivate ?? false,
          now: deps.now,
        },
        task: { id: row.id, parentTaskId: row.request.context.parentTaskId },
        // A hook cut by the task's end reports to no one: the task has ended (its last event is written).
        onRan: (ran) => {
          if (!signal.aborted) watch.hookRan(ran);
        },
      });
    // Every call is billed the moment it ends, before the loop runs its tools.
    // The definition's model settings, the task's own replacing them, in each provider's own terms.
    const o = body.options;
    const settings = { effort: o?.effort ?? def.effort, topP: o?.topP ?? def.topP, maxOutputTokens: o?.maxOutputTokens ?? def.maxOutputTokens };
    const guarded = (id: string) =>
      guardModel(deps.modelProvider.model(id, settings), {
        onUsage: (usage) => watch.modelUsage(usage, id),
        stallTimeoutMs: deps.limits.modelStallTimeoutMs,
        maxRetries: deps.limits.modelMaxRetries,
        abortGraceMs: abortGraceFor,
        readOns: deps.readOns,
        reader: () => deps.modelProvider.reader(id),
      });
    // The outcome's checks of `complete`: its grader is billed to the task at the grader's price.
    const spec = outcomeOf(def, body);
    outcome = spec && createOutcomeCheck(ctx, { row, spec, grader: guarded(spec.graderModel ?? model), toolContext });
    // A fork speaks with its parent's system prompt, exactly (the provider's prompt cache applies).
    const forked = row.subagentType === 'fork' ? await forkOf(ctx, row, body) : null;
    /** Whether steering messages waited at the last check before a call (undefined: not checked since the last take). */
    let inbox: boolean | undefined;
    result = await runAgent({
      model: guarded(model),
      modelId: model,
      fallbacks: fallbackModels.map((id) => ({ id, model: guarded(id) })),
      system:
        forked?.system ??
        buildSystemPrompt(def, {
          now: new Date(deps.now()),
          timezone: body.context.timezone,
          tools: tools.map((t) => t.name),
          ...(workspace.cwd !== workspace.root && { cwd: path.relative(workspace.root, workspace.cwd) }),
          project: def.omitProjectInstructions ? null : await readProjectInstructions(workspace),
          skills: run.folders?.skills,
          memory: run.folders?.memory && { scope: run.folders.memory.scope, index: await readMemoryIndex(workspace) },
        }),
      messages: await conversationOf(ctx, row, body, watch),
      beforeCall: async (): Promise<Pause | null> => {
        await confirmLease();
        // What the last calls cost is billed before it is compared with the budgets.
        await deps.storage.settled();
        const check = (await deps.store.beforeCall(row.id))!;
        inbox = check.inbox;
        return deps.budgets.reached(check.row, check.row.budget ?? undefined, deps.now(), check.standing);
      },
      beforeTools: async () => {
        await deps.storage.settled();
        await confirmLease();
      },
      doneSteps: row.steps,
      ...(outcome && { checkComplete: outcome.check }),
      decide,
      ...(hooks && { hooks }),
      onAsk: (step, calls) => {
        const approval = approvalOf(ctx, row, step, calls);
        asked.waiting = approval.waiting;
        return approval.pause;
      },
      answered: answeredCalls(row),
      beforeAnswered: async (toolCallIds) => {
        await confirmLease();
        await startAnswered(ctx, row, toolCallIds);
      },
      // Right after the check above, an empty inbox is not asked again (one statement less per
      // step); a message that arrives meanwhile waits for the next step, as one after the take does.
      takeMessages: () => {
        const seen = inbox;
        inbox = undefined;
        return seen === false ? [] : takeMessages();
      },
      compaction: { atTokens: def.compactAtTokens, model: guarded(compactionModel), modelId: compactionModel },
      // One key for a task and its follow-ups: the provider keeps their common prefix cached.
      ...(deps.promptCacheKey && { promptCacheKey: row.sessionId ?? row.id }),
      tools: replayer ? tools.map((t) => replayer.wrap(t)) : tools,
      toolContext,
      maxSteps: Math.min(body.options?.maxSteps ?? def.maxSteps, def.maxSteps),
      maxRetries: deps.limits.modelMaxRetries,
      temperature: def.temperature,
      signal,
      observer: replayer ? { ...watch, toolCall: (step, call) => (watch.toolCall(step, call), replayer.saw(step, call)) } : watch,
    });
  } finally {
    watch.close();
    await Promise.allSettled([mcp?.close(), egress?.close()]);
  }

  if (result.stoppedBy && !signal.aborted) return { pause: result.stoppedBy, waiting: asked.waiting };
  // Not stored when the task was taken over: its new owner ends it.
  if (outcome && !signal.aborted) await outcome.ended();
  const delivered = {
    summary: result.complete?.summary ?? (result.finalText || null),
    artifacts: result.complete?.artifacts ?? [],
    skipped: result.complete?.skipped ?? [],
    output: result.complete?.output ?? null,
    ...(replayer && { replay: { ...row.replay!, divergedAtStep: replayer.divergedAtStep() } }),
  };
  if (result.aborted) return { ...endingOfAbort(abortCode(signal)), ...delivered };
  if (result.stalled) {
    return { ...failed('provider_timeout', `the model sent nothing for ${deps.limits.modelStallTimeoutMs} ms; the request was cut`), ...delivered };
  }
  if (result.error) {
    return { ...failed('provider_error', ctx.scrub(errorMessage(result.error))), ...delivered };
  }
  return { status: 'completed', ...delivered, stopReason: result.stopReason, errorCode: null, errorMessage: null };
}

/**
 * The conversation a task continues from: its own stored one when it is resumed; else what it
 * starts with (the earlier task's conversation for a follow-up, then the prompt), stored as its step 0.
 */
async function conversationOf(ctx: RunContext, row: TaskRow, body: CreateTaskBody, observer: TaskObserver): Promise<ModelMessage[]> {
  const { store } = ctx.deps;
  // A task that starts now (it was queued when claimed) has stored nothing yet: not read.
  const stored = row.status === 'queued' ? [] : await store.messages(row.id);
  if (stored.length > 0) return stored;
  const earlier = row.previousTaskId ? await store.messages(row.previousTaskId) : [];
  // A fork starts from its parent's conversation, as given.
  const inherited = (body.fork?.messages ?? []) as ModelMessage[];
  const start: ModelMessage[] = [...earlier, ...inherited, { role: 'user', content: body.prompt! }];
  // Stored with the first step's start (one commit), or when the run ends before it.
  observer.hold((s) => s.appendMessages(row.id, 0, start));
  return start;
}

/**
 * The fork a task speaks as: its own (`fork` in its body), or for a follow-up of a fork the first
 * task of its session's.
 */
async function forkOf(ctx: RunContext, row: TaskRow, body: CreateTaskBody): Promise<Fork | null> {
  if (body.fork) return body.fork;
  const first = row.sessionId ? await ctx.deps.store.getById(row.sessionId) : undefined;
  return first?.request.fork ?? null;
}

/** Request ids: `apr_` for an approval, `tlr_` for a caller-run tool's call, then a ULID. */
const requestIdOf = (decision: DecidedCall['decision'], now: number) =>
  decision === 'ask' ? `apr_${ulid(now)}` : decision === 'client' ? `tlr_${ulid(now)}` : '';

/**
 * The pause a step's waiting calls put the task in (its reason the first request's kind), and the
 * calls it waits on (each asked one with a request id).
 */
function approvalOf(ctx: RunContext, row: TaskRow, step: number, calls: DecidedCall[]): { pause: ApprovalPause; waiting: WaitingCalls } {
  const now = ctx.deps.now();
  const waiting: WaitingCalls = { step, calls: calls.map((c) => ({ ...c, requestId: requestIdOf(c.decision, now), answer: null })), ran: false };
  const pending = waiting.calls
    .filter((c) => c.decision === 'ask' || c.decision === 'client')
    .map((c) => ({
      requestId: c.requestId,
      toolCallId: c.toolCallId,
      toolName: c.toolName,
      input: c.input,
      kind: c.decision === 'ask' ? ('approval' as const) : ('tool' as const),
      answer: null,
    }));
  const timeoutMs = row.request.options?.approvalTimeoutMs ?? ctx.deps.approvalTimeoutMs;
  const { kind, answer: _none, ...first } = pending[0];
  return { pause: { reason: kind, ...first, since: iso(now), expiresAt: iso(now + timeoutMs), pending }, waiting };
}

/** What the model reads of an approved call that started in a run cut before its result was stored. */
export const INTERRUPTED_CALL =
  'This call was interrupted (the service restarted or the task moved to another instance) after it started; its effects are unknown. ' +
  'Check the workspace before repeating it.';

/** A resume after approval: the calls the caller (or the timeout) answered, not yet acted on. */
function answeredCalls(row: TaskRow): AnsweredCall[] | undefined {
  const stored = row.waitingCalls;
  // A live wait's (a command's host) was answered while its command ran: nothing to act on, but
  // the approved calls it came during (a run cut while it waited).
  const waiting = stored?.live ? stored.behind : stored;
  if (!stored || stored.ran || !waiting || waiting.ran || waiting.step !== row.steps) return undefined;
  // A call keeps its index among the step's calls (the waiting calls are all of them, in order).
  return waiting.calls.flatMap((c, index): AnsweredCall[] => {
    // Started by a run that was cut (a crash, a takeover): it may have done all, some or none of
    // its work, and is never run a second time.
    if (c.startedAt !== undefined) {
      return [{ toolCallId: c.toolCallId, index, toolName: c.toolName, input: c.input, allow: true, message: '', result: { error: INTERRUPTED_CALL } }];
    }
    if (c.decision === 'client' && c.answer) {
      const result = c.answer.by === 'timeout' ? { error: 'no result came from the caller within the timeout' } : c.answer;
      return [{ toolCallId: c.toolCallId, index, toolName: c.toolName, input: c.input, allow: true, message: '', result }];
    }
    if (c.decision !== 'ask' || !c.answer) return [];
    const a = c.answer;
    const message = a.message ?? (a.by === 'timeout' ? 'denied: no answer came within the approval timeout' : 'denied by the caller');
    return [{ toolCallId: c.toolCallId, index, toolName: c.toolName, input: a.input ?? c.input, allow: a.decision === 'allow', message }];
  });
}

/**
 * Stores the answered calls `toolCallIds` as started before they run, in one write that also
 * confirms (on PostgreSQL) that this instance still owns the task and its lease holds; else the
 * task is another instance's now (`TaskTakenOver`) and they do not run here.
 */
async function startAnswered(ctx: RunContext, row: TaskRow, toolCallIds: string[]): Promise<void> {
  const { deps } = ctx;
  const waiting = row.waitingCalls!;
  const now = deps.now();
  const started: WaitingCalls = { ...waiting, calls: waiting.calls.map((c) => (toolCallIds.includes(c.toolCallId) ? { ...c, startedAt: now } : c)) };
  const lease = deps.instanceId ? { owner: deps.instanceId, now } : null;
  await ctx.writes.owned(row, async (s) => {
    if (!(await s.startAnswered(row.id, started, lease))) throw new TaskTakenOver(row.id);
  });
}
