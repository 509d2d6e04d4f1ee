import { Role, StreamResponse, TaskState, type Artifact, type Message, type Part, type Task, type TaskStatus } from '@a2a-js/sdk';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import type { TaskOutput, TaskStatus as OurStatus } from '../shapes/task.ts';

/*
 * subagentd's tasks as A2A sees them. States: queued → submitted, running → working, paused →
 * input-required, completed → completed, aborted/cancelled → canceled, error and every other
 * abort → failed. A task's contextId is its parentTaskId (the workspace its subagents share).
 */

export function stateOf(status: OurStatus, errorCode: string | null | undefined): TaskState {
  switch (status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
      return TaskState.TASK_STATE_WORKING;
    case 'paused':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'aborted':
      return errorCode === 'cancelled' || errorCode === 'parent_ended' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED;
    case 'error':
      return TaskState.TASK_STATE_FAILED;
  }
}

/** States after which nothing more happens to the A2A task (input-required waits for a resume). */
export const FINAL_STATES = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED]);

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

function message(t: Pick<TaskOutput, 'id' | 'context'>, role: Role, id: string, parts: Part[]): Message {
  return { messageId: id, contextId: t.context.parentTaskId, taskId: t.id, role, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** What the agent says with a status: the summary when it ended, why when it failed or paused. */
function statusText(t: TaskOutput): string | null {
  if (t.status === 'paused' && t.pause?.reason === 'approval') {
    return `Waiting for approval of ${t.pause.toolName} (request ${t.pause.requestId}). Answer it with POST /tasks/${t.id}/approvals/${t.pause.requestId}.`;
  }
  if (t.status === 'paused' && t.pause?.reason === 'tool') {
    return `Waiting for the result of ${t.pause.toolName} (request ${t.pause.requestId}), a tool the caller runs. Post it with POST /tasks/${t.id}/tool-results/${t.pause.requestId}.`;
  }
  if (t.status === 'paused' && t.pause?.reason === 'budget') {
    return `Paused at the ${t.pause.budget} budget (${t.pause.measure}: ${t.pause.spent} of ${t.pause.limit}). Raise it and resume the task.`;
  }
  const asked = t.status === 'running' ? t.progress?.pending?.[0] : undefined;
  if (asked) {
    return `Waiting for approval of ${asked.toolName} (request ${asked.requestId}). Answer it with POST /tasks/${t.id}/approvals/${asked.requestId}.`;
  }
  if (t.status === 'completed') return t.summary ?? '';
  if (t.error) return `${t.error.code}: ${t.error.message}`;
  return null;
}

export function statusOf(t: TaskOutput): TaskStatus {
  const text = statusText(t);
  // An ACP agent that waits for the answer to its permission request runs on, but needs input.
  const waiting = t.status === 'running' && (t.progress?.pending?.length ?? 0) > 0;
  return {
    state: waiting ? TaskState.TASK_STATE_INPUT_REQUIRED : stateOf(t.status, t.error?.code),
    message: text === null ? undefined : message(t, Role.ROLE_AGENT, `${t.id}-status-${t.status}`, [textPart(text)]),
    timestamp: t.completedAt ?? t.pause?.since ?? t.startedAt ?? t.createdAt,
  };
}

/**
 * A finished task's results as A2A artifacts: its summary (text), its structured output (data),
 * and each file it delivered (a URL part to download it, with path, size and type as metadata).
 */
export function artifactsOf(t: TaskOutput, origin: string): Artifact[] {
  if (t.status !== 'completed') return [];
  const artifact = (artifactId: string, name: string, parts: Part[], metadata?: Record<string, unknown>): Artifact => ({
    artifactId,
    name,
    description: '',
    parts,
    metadata,
    extensions: [],
  });
  const out: Artifact[] = [artifact('summary', 'summary', [textPart(t.summary ?? '')])];
  if (t.output !== null && t.output !== undefined) out.push(artifact('output', 'output', [dataPart(t.output)]));
  for (const a of t.artifacts) {
    const name = a.path.split('/').pop() ?? a.path;
    out.push(
      artifact(`file:${a.url}`, name, [{ content: { $case: 'url', value: `${origin}${a.url}` }, metadata: undefined, filename: name, mediaType: '' }], {
        path: a.path,
        size: a.size,
        fsType: a.fsType,
        modifiedAt: a.modifiedAt,
      }),
    );
  }
  return out;
}

/** The prompt a task was started with, as the A2A user message that asked for it. */
export function promptMessage(t: TaskOutput, prompt: string): Message {
  return message(t, Role.ROLE_USER, `${t.id}-prompt`, [textPart(prompt)]);
}

export function toA2aTask(t: TaskOutput, prompt: string, origin: string, historyLength?: number): Task {
  const status = statusOf(t);
  const history = [promptMessage(t, prompt), ...(status.message && FINAL_STATES.has(status.state) ? [status.message] : [])];
  return {
    id: t.id,
    contextId: t.context.parentTaskId,
    status,
    artifacts: artifactsOf(t, origin),
    history: historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength),
    metadata: {
      subagent_type: t.subagent_type,
      description: t.description,
      userId: t.context.userId,
      sessionId: t.sessionId,
      usage: t.usage,
    },
  };
}

export function statusUpdate(t: TaskOutput, metadata?: Record<string, unknown>): StreamResponse {
  return { payload: { $case: 'statusUpdate', value: { taskId: t.id, contextId: t.context.parentTaskId, status: statusOf(t), metadata } } };
}

/** The body an A2A push-notification endpoint receives for a change of its task's state. */
export function pushPayload(t: TaskOutput, version: string): string {
  const update = statusUpdate(t);
  if (version.startsWith('0.3')) {
    const task: Task = { id: t.id, contextId: t.context.parentTaskId, status: statusOf(t), artifacts: [], history: [], metadata: undefined };
    return String(new V03PushNotificationSerializer().serialize(update, task).body);
  }
  return JSON.stringify(StreamResponse.toJSON(update));
}
