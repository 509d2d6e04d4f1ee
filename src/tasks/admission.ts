import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { AppError } from '../errors/app-error.ts';
import { compileOutputSchema } from '../loop/complete-tool.ts';
import type { CreateTaskBody } from '../shapes/task.ts';
import type { TaskRow } from '../store/schema.ts';
import type { TaskStore } from '../store/task-store.ts';

/** How long an Idempotency-Key answers with its first task. */
const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;

/**
 * What the definition allows that the body's schema cannot say: the type exists, `maxSteps`
 * only lowers the definition's limit, `outputSchema` compiles (within its bounds). Every
 * problem is reported at once, in the contract's 400 shape.
 */
export function checkAgainstDefinition(registry: AgentRegistry, body: CreateTaskBody): void {
  const def = registry.get(body.subagent_type);
  if (!def) {
    throw new AppError(
      400,
      'unknown_subagent_type',
      `unknown subagent_type "${body.subagent_type}"; available types: ${registry.types().join(', ')}`,
      { available: registry.types() },
    );
  }
  const invalid: Array<{ field: string; message: string }> = [];
  if (body.options?.maxSteps !== undefined && body.options.maxSteps > def.maxSteps) {
    invalid.push({ field: 'body.options.maxSteps', message: `may only lower the limit of "${def.type}" (${def.maxSteps})` });
  }
  if (body.options?.outputSchema !== undefined) {
    const compiled = compileOutputSchema(body.options.outputSchema);
    if ('error' in compiled) invalid.push({ field: 'body.options.outputSchema', message: `not a valid JSON Schema: ${compiled.error}` });
  }
  if (invalid.length > 0) {
    throw new AppError(400, 'invalid_request', `invalid request: ${invalid.map((i) => i.field).join(', ')}`, invalid);
  }
}

/**
 * The task an earlier request with this Idempotency-Key created, if the key is still in its
 * window and the body is the same (a different body is a 409). A key past its window is freed.
 */
export function earlierTask(store: TaskStore, tenant: string, key: string, requestHash: string, now: number): TaskRow | null {
  const earlier = store.findByIdempotencyKey(tenant, key);
  if (!earlier) return null;
  if (now - earlier.createdAt >= IDEMPOTENCY_WINDOW_MS) {
    store.clearIdempotencyKey(earlier.id);
    return null;
  }
  if (earlier.requestHash !== requestHash) {
    throw new AppError(409, 'idempotency_conflict', 'this Idempotency-Key was used with a different body');
  }
  return earlier;
}

/** A new task as stored before it is queued. */
export function newTaskRow(
  id: string,
  tenant: string,
  body: CreateTaskBody,
  now: number,
  idempotency: { key: string; requestHash: string } | null,
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
  };
}

