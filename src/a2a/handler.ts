import { randomUUID } from 'node:crypto';
import {
  Role,
  TaskState,
  type AgentCard,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTaskPushNotificationConfigsResponse,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  JsonRpcRequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { AppError } from '../errors/app-error.ts';
import type { EventLog } from '../events/event-log.ts';
import { followTask } from '../events/follow.ts';
import { createTaskBodySchema, type TaskOutput } from '../shapes/task.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { resolveTarget, WebhookTargetError } from '../network/safe-target.ts';
import type { PushConfig } from '../store/webhook-store.ts';
import type { Webhooks } from '../webhooks/webhooks.ts';
import type { TaskRow } from '../store/schema.ts';
import { artifactsOf, FINAL_STATES, stateOf, statusUpdate, textPart, toA2aTask } from './mapping.ts';

/** What the HTTP route puts in each call's context (`ServerCallContext.state`). */
export const CALL_STATE = 'subagentd';
export interface CallState {
  tenant: string;
  /** `https://host:port` as the caller reached the service: download URLs of artifacts. */
  origin: string;
  /** Fires when the caller goes away (a blocking send stops waiting). */
  signal: AbortSignal;
}

export interface A2aHandlerDeps {
  tasks: TaskService;
  events: EventLog;
  webhooks: Webhooks;
  allowPrivateTargets: boolean;
  card: () => AgentCard;
  now: () => number;
}

const stateOfCall = (ctx: ServerCallContext) => ctx.state.get(CALL_STATE) as CallState;

/** The contract's errors as A2A errors (JSON-RPC codes). */
function a2aError(err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  if (err.statusCode === 404) return new TaskNotFoundError({ message: err.message });
  if (err.statusCode === 400) return new JsonRpcRequestMalformedError({ message: `${err.code}: ${err.message}`, envelopeCode: -32602 });
  if (err.statusCode === 409) return new UnsupportedOperationError({ message: `${err.code}: ${err.message}` });
  return new Error(`${err.code}: ${err.message}`);
}

async function mapped<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw a2aError(err);
  }
}

function textOf(message: Message): string {
  const parts: string[] = [];
  for (const part of message.parts) {
    const c = part.content;
    if (c?.$case === 'text') parts.push(c.value);
    else if (c?.$case === 'data') parts.push(JSON.stringify(c.value));
    else
      throw new JsonRpcRequestMalformedError({
        message: 'only text and data parts are taken: put files in the workspace with PUT /workspaces/{contextId}/files/{path}',
        envelopeCode: -32602,
      });
  }
  return parts.join('\n');
}

/**
 * subagentd's task service behind the A2A protocol (the SDK's `A2ARequestHandler`, so the SDK's
 * own JSON-RPC transport, v1.0 and v0.3, parses and answers every call). A message starts a task
 * (`contextId` = its parentTaskId; `metadata.subagent_type`, `description`, `userId`, `options`
 * choose the rest), a message with the `taskId` of a running task steers it and of a paused one
 * resumes it, and `referenceTaskIds[0]` continues a finished task's conversation. Streams and
 * resubscribes read the service's stored event log, so they work across restarts. Push configs
 * go to the webhook outbox (retries, SSRF guard, restarts).
 */
export function createA2aHandler(deps: A2aHandlerDeps): A2ARequestHandler {
  const { tasks, events, webhooks } = deps;

  const current = async (tenant: string, id: string): Promise<TaskOutput> => tasks.output(await tasks.get(tenant, id));
  const promptOf = (row: TaskRow) => row.request.prompt ?? row.request.command ?? '';
  const taskOf = async (state: CallState, id: string, historyLength?: number): Promise<Task> => {
    const row = await tasks.get(state.tenant, id);
    return toA2aTask(tasks.output(row), promptOf(row), state.origin, historyLength);
  };

  /** Starts, steers or resumes the task a message is for; returns it and the seq updates start after. */
  async function start(params: SendMessageRequest, state: CallState): Promise<{ id: string; after: number }> {
    const message = params.message;
    if (!message) throw new JsonRpcRequestMalformedError({ message: 'message is required', envelopeCode: -32602 });
    const text = textOf(message);
    if (message.taskId) {
      const t = await current(state.tenant, message.taskId);
      const after = await events.lastSeq(t.id);
      if (t.status === 'paused') {
        const budget = (message.metadata?.budget ?? params.metadata?.budget) as Parameters<TaskService['resume']>[2];
        await tasks.resume(state.tenant, t.id, budget);
      } else if (t.status === 'queued' || t.status === 'running') {
        if (text) await tasks.steer(state.tenant, t.id, text);
      } else {
        throw new UnsupportedOperationError({
          message: `task ${t.id} is ${t.status}; continue its conversation with a new message whose referenceTaskIds is ["${t.id}"]`,
        });
      }
      return { id: t.id, after };
    }
    const meta: Record<string, unknown> = { ...params.metadata, ...message.metadata };
    const parsed = createTaskBodySchema.safeParse({
      subagent_type: meta.subagent_type ?? 'general',
      description: meta.description ?? (text.split('\n')[0].slice(0, 80) || 'A2A task'),
      ...(meta.subagent_type === 'shell' ? { command: text } : { prompt: text }),
      ...(message.referenceTaskIds[0] ? { task_id: message.referenceTaskIds[0] } : {}),
      context: { parentTaskId: message.contextId || `a2a-${randomUUID()}`, userId: meta.userId ?? 'a2a', toolCallId: message.messageId || undefined },
      ...(meta.options ? { options: meta.options } : {}),
    });
    if (!parsed.success) {
      const details = parsed.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ');
      throw new JsonRpcRequestMalformedError({ message: `invalid message: ${details}`, envelopeCode: -32602 });
    }
    // The same messageId sent again (a retry) finds the first task instead of starting another.
    const key = message.messageId ? `a2a:${parsed.data.context.parentTaskId}:${message.messageId}` : undefined;
    // A push config given with the message is stored before its task can start, so its first
    // notification (`working`) is never written before the config exists.
    const push = params.configuration?.taskPushNotificationConfig;
    const config = push ? await checkedPush(push) : null;
    const storePush = (taskId: string) => webhooks.putPush(state.tenant, { ...config!, taskId }, deps.now());
    const { row, created } = await tasks.submit(state.tenant, parsed.data, { idempotencyKey: key, beforeQueue: config ? (r) => storePush(r.id) : undefined });
    if (config && !created) await storePush(row.id);
    return { id: row.id, after: 0 };
  }

  /** Status and artifact updates from the task's events, until it ends or pauses. */
  async function* updates(state: CallState, id: string, after: number): AsyncGenerator<StreamResponse> {
    const contextId = (await tasks.get(state.tenant, id)).parentTaskId;
    const working = (at: string, text: string | null, metadata: Record<string, unknown>): StreamResponse => ({
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId: id,
          contextId,
          status: {
            state: TaskState.TASK_STATE_WORKING,
            message:
              text === null
                ? undefined
                : {
                    messageId: randomUUID(),
                    contextId,
                    taskId: id,
                    role: Role.ROLE_AGENT,
                    parts: [textPart(text)],
                    metadata: undefined,
                    extensions: [],
                    referenceTaskIds: [],
                  },
            timestamp: at,
          },
          metadata,
        },
      },
    });
    for await (const e of followTask(events, id, { after, signal: state.signal })) {
      switch (e.type) {
        case 'task.started':
        case 'task.resumed':
          yield working(e.at, null, { event: e.type, seq: e.seq });
          break;
        case 'tool.call':
          yield working(e.at, `Calling ${e.data.toolName}`, { event: e.type, seq: e.seq, step: e.data.step, toolName: e.data.toolName });
          break;
        case 'tool.result':
          yield working(e.at, null, { event: e.type, seq: e.seq, step: e.data.step, toolName: e.data.toolName, isError: e.data.isError });
          break;
        case 'step.finished':
          yield working(e.at, null, { event: e.type, seq: e.seq, step: e.data.step, usage: e.data.usage });
          break;
        case 'task.paused': {
          const t = await current(state.tenant, id);
          if (t.status !== 'paused') break; // an earlier pause, since resumed
          yield statusUpdate(t, { event: e.type, seq: e.seq });
          return; // input-required: the stream ends; a message with this taskId resumes it
        }
        case 'task.finished':
          for (const artifact of artifactsOf(e.data, state.origin)) {
            yield { payload: { $case: 'artifactUpdate', value: { taskId: id, contextId, artifact, append: false, lastChunk: true, metadata: undefined } } };
          }
          yield statusUpdate(e.data, { event: e.type, seq: e.seq });
          return;
      }
    }
  }

  async function setPush(state: CallState, config: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    await tasks.get(state.tenant, config.taskId);
    const stored = await checkedPush(config);
    await webhooks.putPush(state.tenant, { ...stored, taskId: config.taskId }, deps.now());
    return { ...config, id: stored.configId };
  }

  /** A push config as stored, once its target is known to be allowed (before its task exists). */
  async function checkedPush(config: TaskPushNotificationConfig): Promise<PushConfig> {
    try {
      await resolveTarget(new URL(config.url), deps.allowPrivateTargets);
    } catch (err) {
      const why = err instanceof WebhookTargetError ? err.message : `invalid url: ${(err as Error).message}`;
      throw new JsonRpcRequestMalformedError({ message: why, envelopeCode: -32602 });
    }
    const auth =
      config.authentication?.scheme && config.authentication.credentials ? `${config.authentication.scheme} ${config.authentication.credentials}` : null;
    return { configId: config.id || randomUUID(), taskId: config.taskId, url: config.url, token: config.token || null, authorization: auth, version: '1.0' };
  }

  const pushView = (c: Awaited<ReturnType<Webhooks['pushConfigs']>>[number]): TaskPushNotificationConfig => ({
    tenant: '',
    id: c.configId,
    taskId: c.taskId,
    url: c.url,
    token: c.token ?? '',
    // The credential is never shown again, only its scheme.
    authentication: c.authorization ? { scheme: c.authorization.split(' ')[0], credentials: '' } : undefined,
  });

  return {
    async getAgentCard() {
      return deps.card();
    },
    async getAuthenticatedExtendedAgentCard() {
      throw new ExtendedAgentCardNotConfiguredError();
    },
    sendMessage: (params, ctx) =>
      mapped(async () => {
        const state = stateOfCall(ctx);
        const { id, after } = await start(params, state);
        if (!params.configuration?.returnImmediately) {
          // Blocking (the default): answer once the task ends or pauses (input-required).
          for await (const update of updates(state, id, after)) void update;
        }
        return taskOf(state, id, params.configuration?.historyLength);
      }),
    async *sendMessageStream(params, ctx) {
      const state = stateOfCall(ctx);
      const { id, after } = await mapped(() => start(params, state));
      yield { payload: { $case: 'task', value: await taskOf(state, id) } };
      yield* updates(state, id, after);
    },
    getTask: (params: GetTaskRequest, ctx) => mapped(() => taskOf(stateOfCall(ctx), params.id, params.historyLength)),
    cancelTask: (params: CancelTaskRequest, ctx) =>
      mapped(async () => {
        const state = stateOfCall(ctx);
        const t = await current(state.tenant, params.id);
        if (FINAL_STATES.has(stateOf(t.status, t.error?.code))) throw new TaskNotCancelableError({ message: `task ${t.id} is already ${t.status}` });
        const after = await events.lastSeq(t.id);
        await tasks.cancel(state.tenant, t.id);
        // A running task ends at its next await point: answer with it ended.
        const settle = AbortSignal.any([state.signal, AbortSignal.timeout(10_000)]);
        for await (const e of followTask(events, t.id, { after, signal: settle })) void e;
        return taskOf(state, t.id);
      }),
    async *resubscribe(params: SubscribeToTaskRequest, ctx) {
      const state = stateOfCall(ctx);
      const t = await mapped(() => current(state.tenant, params.id));
      if (FINAL_STATES.has(stateOf(t.status, t.error?.code))) {
        throw new UnsupportedOperationError({ message: `task ${t.id} is ${t.status} and cannot be subscribed to; get it with GetTask` });
      }
      const after = await events.lastSeq(t.id);
      yield { payload: { $case: 'task', value: await taskOf(state, t.id) } };
      yield* updates(state, t.id, after);
    },
    listTasks: (params: ListTasksRequest, ctx) =>
      mapped(async (): Promise<ListTasksResponse> => {
        const state = stateOfCall(ctx);
        const limit = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
        const page = await tasks.list(state.tenant, { parentTaskId: params.contextId || undefined }, limit, params.pageToken || undefined);
        const all = page.rows.map((row) => ({ row, t: tasks.output(row) }));
        const wanted = params.status ? all.filter(({ t }) => stateOf(t.status, t.error?.code) === params.status) : all;
        return {
          tasks: wanted.map(({ row, t }) => toA2aTask(t, promptOf(row), state.origin, params.historyLength)),
          nextPageToken: page.nextCursor ?? '',
          pageSize: limit,
          totalSize: wanted.length,
        };
      }),
    createTaskPushNotificationConfig: (params, ctx) => mapped(() => setPush(stateOfCall(ctx), params)),
    getTaskPushNotificationConfig: (params: GetTaskPushNotificationConfigRequest, ctx) =>
      mapped(async () => {
        const { tenant } = stateOfCall(ctx);
        await tasks.get(tenant, params.taskId);
        const found = (await webhooks.pushConfigs(tenant, params.taskId, params.id))[0];
        if (!found) throw new AppError(404, 'not_found', `push notification config ${params.id} of task ${params.taskId} not found`);
        return pushView(found);
      }),
    listTaskPushNotificationConfigs: (params: ListTaskPushNotificationConfigsRequest, ctx) =>
      mapped(async (): Promise<ListTaskPushNotificationConfigsResponse> => {
        const { tenant } = stateOfCall(ctx);
        await tasks.get(tenant, params.taskId);
        return { configs: (await webhooks.pushConfigs(tenant, params.taskId)).map(pushView), nextPageToken: '' };
      }),
    deleteTaskPushNotificationConfig: (params: DeleteTaskPushNotificationConfigRequest, ctx) =>
      mapped(async () => {
        const { tenant } = stateOfCall(ctx);
        await tasks.get(tenant, params.taskId);
        if (!(await webhooks.deletePush(tenant, params.taskId, params.id))) {
          throw new AppError(404, 'not_found', `push notification config ${params.id} of task ${params.taskId} not found`);
        }
      }),
  };
}
