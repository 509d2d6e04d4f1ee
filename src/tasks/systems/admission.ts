import path from 'node:path';
import { allowedHosts } from '../../network/policy.ts';
import { modelMessageSchema as aiModelMessageSchema } from 'ai';
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import { LEAD_TOOLS, type AgentRegistry } from '../../definitions/agent-registry.ts';
import { pathGlobProblem } from '../../definitions/permissions.ts';
import { offeredTools } from '../../definitions/tool-set.ts';
import { isInside } from '../../workspace/path-guard.ts';
import { FOLDER_NAMES } from '../../workspace/task-folders.ts';
import { AppError, notFound } from '../../errors/app-error.ts';
import { checkClientTools } from '../../tools/client-tool.ts';
import { compileOutputSchema } from '../../tools/complete.ts';
import { UnknownProviderError, type ModelProvider } from '../../loop/model-provider.ts';
import { workspaceToolNames } from '../../tools/workspace-tools.ts';
import type { CreateTaskBody } from '../../shapes/task.ts';
import type { ReplayState } from '../../shapes/replay.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { StorageFault } from '../../store/storage-guard.ts';
import type { QueueRoom, TaskStore } from '../../store/task-store.ts';
import type { Scheduler } from './scheduler.ts';
import { outcomeOf } from '../run/task-outcome.ts';

/** How long an Idempotency-Key answers with its first task. */
const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;

/** Names a caller-run tool may not take: the service's tools, and those kept for nested subagents (`task`, `wait`, ...). */
const SERVICE_TOOL_NAMES: ReadonlySet<string> = new Set([...workspaceToolNames, 'complete', ...LEAD_TOOLS]);

/**
 * What the definition allows that the body's schema cannot say: the type exists, `maxSteps`
 * only lowers the definition's limit, `outputSchema` compiles (within its bounds). Every
 * problem is reported at once, in the contract's 400 shape.
 */
export function checkAgainstDefinition(registry: AgentRegistry, body: CreateTaskBody, workspaceDir?: string, models?: Pick<ModelProvider, 'resolve'>): void {
  const def = registry.get(body.subagent_type);
  if (!def) {
    throw new AppError(400, 'unknown_subagent_type', `unknown subagent_type "${body.subagent_type}"; available types: ${registry.types().join(', ')}`, {
      available: registry.types(),
    });
  }
  const invalid: Array<{ field: string; message: string }> = [];
  const given = body.options?.model;
  for (const [i, id] of (Array.isArray(given) ? given : given === undefined ? [] : [given]).entries()) {
    try {
      models?.resolve(id);
    } catch (err) {
      if (!(err instanceof UnknownProviderError)) throw err;
      invalid.push({ field: Array.isArray(given) ? `body.options.model.${i}` : 'body.options.model', message: err.message });
    }
  }
  if (body.options?.maxSteps !== undefined && body.options.maxSteps > def.maxSteps) {
    invalid.push({ field: 'body.options.maxSteps', message: `may only lower the limit of "${def.type}" (${def.maxSteps})` });
  }
  if (def.kind === 'acp') {
    // An external agent keeps no conversation here and has no `complete` to fill `output` with.
    if (body.task_id) invalid.push({ field: 'body.task_id', message: `"${def.type}" runs an external ACP agent, whose conversation cannot be continued` });
    if (body.options?.outputSchema)
      invalid.push({ field: 'body.options.outputSchema', message: `"${def.type}" runs an external ACP agent, which cannot return a structured output` });
  }
  if (body.fork) {
    // The SDK's own message schema: what the loop will hand to the provider, checked before anything runs.
    const bad = body.fork.messages.findIndex((m) => !aiModelMessageSchema.safeParse(m).success);
    if (bad >= 0) invalid.push({ field: `body.fork.messages.${bad}`, message: 'not a ModelMessage of the ai SDK (role and content parts)' });
  }
  if (body.options?.tools) {
    if (def.kind !== 'model') invalid.push({ field: 'body.options.tools', message: `"${def.type}" has no tools of the service to choose from` });
    else if (
      offeredTools(def.tools, body.options.tools).length === 0 &&
      // A root that may start children keeps its lead tools (`task`, `wait`, ...).
      !(def.maxDepth && body.options.tools.some((t) => (LEAD_TOOLS as readonly string[]).includes(t))) &&
      !body.options.clientTools?.length &&
      // An MCP server's tools are known once it runs: naming one of a server it has keeps the list.
      !(def.mcpServers && body.options.tools.some((t) => Object.keys(def.mcpServers!).some((s) => t === `mcp__${s}` || t.startsWith(`mcp__${s}__`))))
    ) {
      throw new AppError(
        400,
        'no_tools',
        `none of ${JSON.stringify(body.options.tools)} is a tool of "${def.type}" (${def.tools.join(', ')}): only complete would be left`,
        {
          available: def.tools.filter((t) => t !== 'complete'),
        },
      );
    }
  }
  const cwd = body.options?.cwd;
  if (cwd !== undefined && workspaceDir !== undefined) {
    // What the path says; links are followed (and refused when they lead out) when the task starts.
    const problem =
      /[\0\\]/.test(cwd) || cwd.startsWith('~')
        ? 'not a workspace path'
        : isInside(workspaceDir, path.resolve(workspaceDir, cwd))
          ? null
          : 'outside the workspace';
    if (problem) invalid.push({ field: 'body.options.cwd', message: `"${cwd.slice(0, 200)}" is ${problem}: name a folder relative to the workspace root` });
  }
  // The task's own folders (task-folders.ts) are no place to work in.
  if (cwd !== undefined && FOLDER_NAMES.has(path.posix.normalize(cwd).split('/')[0])) {
    invalid.push({
      field: 'body.options.cwd',
      message: `"${cwd.slice(0, 200)}" is inside .memory or .skills, the task's own folders: name a folder of the workspace`,
    });
  }
  for (const [i, name] of (body.options?.skills ?? []).entries()) {
    // Only narrowing: a skill the definition does not preload is no skill of the task.
    if (!def.skills?.includes(name)) {
      invalid.push({
        field: `body.options.skills.${i}`,
        message: `"${name.slice(0, 64)}" is not a skill of "${def.type}" (its skills: ${def.skills?.join(', ') || 'none'})`,
      });
    }
  }
  for (const key of Object.keys(body.options?.permissions ?? {})) {
    const problem = pathGlobProblem(key);
    if (problem) invalid.push({ field: `body.options.permissions.${key}`, message: problem });
  }
  const network = body.options?.network;
  if (network && network !== 'none' && allowedHosts(def.network, undefined) === null) {
    invalid.push({ field: 'body.options.network', message: `"${def.type}" lets its commands reach no network; a task can only narrow its definition's list` });
  }
  if (body.options?.clientTools?.length) {
    if (def.kind !== 'model')
      invalid.push({ field: 'body.options.clientTools', message: `"${def.type}" has no model of the service to offer caller-run tools to` });
    else invalid.push(...checkClientTools(body.options.clientTools, SERVICE_TOOL_NAMES));
  }
  invalid.push(...outcomeProblems(def, body, models));
  invalid.push(...candidatesProblems(def, body, models));
  if (body.options?.outputSchema !== undefined) {
    const compiled = compileOutputSchema(body.options.outputSchema);
    if ('error' in compiled) invalid.push({ field: 'body.options.outputSchema', message: `not a valid JSON Schema: ${compiled.error}` });
  }
  if (invalid.length > 0) {
    throw new AppError(400, 'invalid_request', `invalid request: ${invalid.map((i) => i.field).join(', ')}`, invalid);
  }
}

/** What is wrong with a task's `options.outcome` against its definition (the schema checked its fields). */
function outcomeProblems(def: AgentDefinition, body: CreateTaskBody, models?: Pick<ModelProvider, 'resolve'>): Array<{ field: string; message: string }> {
  const given = body.options?.outcome;
  if (!given) return [];
  const field = 'body.options.outcome';
  if (def.kind !== 'model') return [{ field, message: `"${def.type}" runs no model of the service: it calls no complete to check` }];
  const problems: Array<{ field: string; message: string }> = [];
  if (given.graderModel !== undefined) {
    if (given.rubric === undefined && def.outcome?.rubric === undefined) {
      problems.push({ field: `${field}.graderModel`, message: 'a grader model grades a rubric: give outcome.rubric too' });
    }
    try {
      models?.resolve(given.graderModel);
    } catch (err) {
      if (!(err instanceof UnknownProviderError)) throw err;
      problems.push({ field: `${field}.graderModel`, message: err.message });
    }
  }
  return problems;
}

/**
 * What is wrong with a task's `options.candidates`: attempts run on worktrees of one snapshot and
 * are compared by their outcome, so both are required; a follow-up continues one conversation.
 */
function candidatesProblems(def: AgentDefinition, body: CreateTaskBody, models?: Pick<ModelProvider, 'resolve'>): Array<{ field: string; message: string }> {
  const given = body.options?.candidates;
  if (!given) return [];
  const field = 'body.options.candidates';
  if (def.kind !== 'model') return [{ field, message: `"${def.type}" runs no model of the service: its attempts could not be checked by an outcome` }];
  const problems: Array<{ field: string; message: string }> = [];
  if (body.options?.isolation !== 'worktree') {
    problems.push({ field, message: 'candidates need options.isolation "worktree": each attempt works on its own copy of the workspace' });
  }
  if (!outcomeOf(def, body)) {
    problems.push({ field, message: `candidates need an outcome (options.outcome, or one of "${def.type}"): it is what the attempts are compared by` });
  }
  if (body.task_id) problems.push({ field: 'body.task_id', message: 'a follow-up continues one conversation: candidates start fresh attempts' });
  if (given.models && given.models.length > given.n) {
    problems.push({ field: `${field}.models`, message: `${given.models.length} models for ${given.n} attempts: each attempt runs on one, give at most n` });
  }
  for (const [i, id] of (given.models ?? []).entries()) {
    if (!id.trim()) {
      problems.push({ field: `${field}.models.${i}`, message: 'a model id is not blank' });
      continue;
    }
    try {
      models?.resolve(id);
    } catch (err) {
      if (!(err instanceof UnknownProviderError)) throw err;
      problems.push({ field: `${field}.models.${i}`, message: err.message });
    }
  }
  return problems;
}

/**
 * The task an earlier request with this Idempotency-Key created, if the key is still in its
 * window and the body is the same (a different body is a 409). A key past its window is freed.
 */
export async function earlierTask(store: TaskStore, tenant: string, key: string, requestHash: string, now: number): Promise<TaskRow | null> {
  const earlier = await store.findByIdempotencyKey(tenant, key);
  if (!earlier) return null;
  if (now - earlier.createdAt >= IDEMPOTENCY_WINDOW_MS) {
    await store.clearIdempotencyKey(earlier.id);
    return null;
  }
  if (earlier.requestHash !== requestHash) {
    throw new AppError(409, 'idempotency_conflict', 'this Idempotency-Key was used with a different body');
  }
  return earlier;
}

/** Where a follow-up sits in its chain. */
export interface SessionLink {
  sessionId: string;
  previousTaskId: string;
}

/**
 * The chain a follow-up (`task_id`) continues: the earlier task must be this tenant's (else 404),
 * finished (else 409 task_not_finished), of the same type and parent (else 400 session_mismatch).
 */
export async function sessionOf(store: TaskStore, tenant: string, body: CreateTaskBody): Promise<SessionLink | null> {
  if (!body.task_id) return null;
  const earlier = await store.get(tenant, body.task_id);
  if (!earlier) throw notFound(`task ${body.task_id}`);
  if (earlier.status === 'queued' || earlier.status === 'running' || earlier.status === 'paused') {
    throw new AppError(
      409,
      'task_not_finished',
      `task ${earlier.id} is ${earlier.status}; continue it once it has ended, or steer it with POST /tasks/${earlier.id}/messages`,
    );
  }
  if (earlier.purgedAt !== null) {
    throw new AppError(409, 'task_purged', `task ${earlier.id} was purged: its conversation is gone, so it cannot be continued (start a fresh task)`);
  }
  if (earlier.candidates) {
    // Its conversation is its kept attempt's: that one is continued, by its own id.
    const kept = earlier.candidates.find((c) => c.selected);
    throw new AppError(400, 'invalid_request', `invalid request: body.task_id`, [
      {
        field: 'body.task_id',
        message: kept
          ? `task ${earlier.id} ran candidates: its conversation is its kept attempt's, continue that one (task_id "${kept.taskId}")`
          : `task ${earlier.id} ran candidates and kept none: it has no conversation to continue`,
      },
    ]);
  }
  if (body.fork && earlier.subagentType === 'fork') {
    throw new AppError(400, 'fork_in_fork', `task ${earlier.id} is a fork; a fork cannot fork again (continue it without fork instead)`);
  }
  const mismatched = [
    ...(earlier.subagentType !== body.subagent_type
      ? [{ field: 'body.subagent_type', message: `must be "${earlier.subagentType}", the type of ${earlier.id}` }]
      : []),
    ...(earlier.parentTaskId !== body.context.parentTaskId
      ? [{ field: 'body.context.parentTaskId', message: `must be "${earlier.parentTaskId}", the parent of ${earlier.id}` }]
      : []),
  ];
  if (mismatched.length > 0) {
    throw new AppError(400, 'session_mismatch', `task_id ${earlier.id} belongs to another session: ${mismatched.map((m) => m.message).join('; ')}`, mismatched);
  }
  return { sessionId: earlier.sessionId ?? earlier.id, previousTaskId: earlier.id };
}

/** How a task is admitted, beside its body: see task-service.ts's `submit`. */
export interface SubmitOptions {
  /** A repeated key with the same body answers the first task (409 with another body). */
  idempotencyKey?: string;
  /** W3C traceparent of the caller's span. */
  traceParent?: string;
  /** Stores what must exist before the new task can start (an A2A push config). */
  beforeQueue?: (row: TaskRow) => Promise<unknown>;
  /** A child task (nesting): its depth, the task that starts it, the root's limit. */
  lineage?: Lineage;
  /** A replay (replay-system.ts): the task it replays, and how. */
  replay?: ReplayState;
  /**
   * The caller waits for the task's end: a new task is answered as admitted, with `ended`, a wait
   * that listens from before the task is stored, so it never reads the task (two reads less, two
   * round trips on PostgreSQL).
   */
  waiting?: boolean;
}

/** A new task as stored before it is queued. */
export function newTaskRow(
  id: string,
  tenant: string,
  body: CreateTaskBody,
  now: number,
  idempotency: { key: string; requestHash: string } | null,
  session: SessionLink | null,
  traceParent: string | null = null,
  lineage: Lineage = { depth: 0, parentTask: null, maxDepth: 0 },
): TaskRow {
  return {
    id,
    tenant,
    parentTaskId: body.context.parentTaskId,
    userId: body.context.userId,
    toolCallId: body.context.toolCallId ?? null,
    subagentType: body.subagent_type,
    description: body.description,
    request: body,
    model: null,
    status: 'queued',
    summary: null,
    artifacts: null,
    skipped: null,
    output: null,
    steps: 0,
    stopReason: null,
    inputTokens: 0,
    outputTokens: 0,
    totalTokens: 0,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    errorCode: null,
    errorMessage: null,
    idempotencyKey: idempotency?.key ?? null,
    requestHash: idempotency?.requestHash ?? null,
    createdAt: now,
    startedAt: null,
    completedAt: null,
    sessionId: session?.sessionId ?? id,
    previousTaskId: session?.previousTaskId ?? null,
    resumes: 0,
    compactions: 0,
    costMicroUsd: 0,
    unpricedTokens: 0,
    pause: null,
    budget: body.options?.budget ?? null,
    traceParent,
    pausedAt: null,
    pausedMs: 0,
    pauseUntil: null,
    waitingCalls: null,
    owner: null,
    leaseUntil: null,
    resumeReason: null,
    activity: null,
    waitingOnChild: 0,
    worktree: null,
    replay: null,
    outcome: null,
    candidates: null,
    purgedAt: null,
    background: false,
    ...lineage,
  };
}

/** Where a task stands in a tree of nested tasks: its depth, the task that started it, the root's limit. */
export interface Lineage {
  depth: number;
  parentTask: string | null;
  maxDepth: number;
  /** Started in the background by its lead (`run_in_background`): it ends when its lead does. */
  background?: boolean;
}

export interface QueueBounds {
  maxQueued: number;
  maxQueuedPerTenant: number;
}

/**
 * The queue's bounds: the whole queue's, and each tenant's own so one cannot refuse the others
 * (across the cluster on PostgreSQL, where tasks being admitted elsewhere that moment are not
 * counted). `admitting`: tasks admitted here and being stored (id → tenant), counted too.
 */
export async function checkQueueRoom(scheduler: Scheduler, admitting: Map<string, string>, bounds: QueueBounds, tenant: string, attempts = 0): Promise<void> {
  const waiting = await scheduler.waiting(tenant);
  const more = attempts > 0 ? ` and the ${attempts} attempts of this one` : '';
  const queued = waiting.all + admitting.size;
  if (queued + attempts >= bounds.maxQueued) throw queueFull(`too many queued tasks (${queued}${more})`);
  const queuedIn = waiting.tenant + admittingIn(admitting, tenant);
  if (queuedIn + attempts >= bounds.maxQueuedPerTenant) throw queueFull(`this tenant has ${queuedIn} queued tasks${more}, its limit (MAX_QUEUED_PER_TENANT)`);
}

/**
 * A task with candidates queues its `n` attempts beside itself: 400 when they could never fit
 * (the checks of checkQueueRoom and queueRoom count them while others wait).
 */
export function checkAttemptsFit(bounds: QueueBounds, attempts: number): void {
  const limit = Math.min(bounds.maxQueued, bounds.maxQueuedPerTenant);
  if (attempts > 0 && attempts + 1 > limit) {
    throw new AppError(400, 'invalid_request', 'invalid request: body.options.candidates.n', [
      {
        field: 'body.options.candidates.n',
        message: `the task and its ${attempts} attempts are more than the ${limit} tasks a tenant may queue (MAX_QUEUED_PER_TENANT)`,
      },
    ]);
  }
}

/** 429 `queue_full`: `why`, and when to retry. */
export function queueFull(why: string): AppError {
  return new AppError(429, 'queue_full', `${why}; retry later`, undefined, { 'retry-after': '5' });
}

const admittingIn = (admitting: Map<string, string>, tenant: string) => [...admitting.values()].filter((t) => t === tenant).length;

/**
 * The cluster's queue bounds as the statement that stores a task checks them (task-store.ts
 * `insert`): the room left in all and for `tenant` once the tasks being admitted here count.
 */
export function queueRoom(admitting: Map<string, string>, bounds: QueueBounds, tenant: string, attempts = 0): QueueRoom {
  return { all: bounds.maxQueued - admitting.size - attempts, tenant: bounds.maxQueuedPerTenant - admittingIn(admitting, tenant) - attempts };
}

/** The answer to a new task while the database cannot be written. */
export function storageRefusal(fault: StorageFault): AppError {
  return fault === 'storage_full'
    ? new AppError(507, 'storage_full', 'the service cannot store new tasks: its disk is full; retry later', undefined, { 'retry-after': '30' })
    : new AppError(503, 'storage_unavailable', 'the service cannot write its database; retry later', undefined, { 'retry-after': '30' });
}
