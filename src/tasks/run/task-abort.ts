/** Someone stopped the task: its caller (`cancelled`, also its lead's `close_agent`), or the end of the lead that started it in the background. */
export type CancelCode = 'cancelled' | 'parent_ended';

/**
 * Why a task's signal was aborted; becomes the task's `error.code`, except `handed_over` (the
 * service stopped and the task stays `running` for the next start to resume) and `taken_over`
 * (another instance took it over: this one writes nothing more of it).
 */
export class TaskAbort extends Error {
  constructor(
    readonly code: 'cancelled' | 'parent_ended' | 'timeout' | 'interrupted' | 'handed_over' | 'taken_over' | 'storage_full' | 'storage_unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'TaskAbort';
  }
}

export function abortCode(signal: AbortSignal): TaskAbort {
  return signal.reason instanceof TaskAbort ? signal.reason : new TaskAbort('cancelled', 'the task was cancelled');
}

/**
 * A cancel another instance asked of this one (PostgreSQL `subagentd_control`): the task's id and
 * the abort, or null for any other message.
 */
export function controlledAbort(payload: string): { id: string; abort: TaskAbort } | null {
  let message: { op?: unknown; id?: unknown; code?: unknown; message?: unknown };
  try {
    message = JSON.parse(payload) as typeof message;
  } catch {
    return null;
  }
  if (message.op !== 'cancel' || typeof message.id !== 'string') return null;
  const ended = message.code === 'parent_ended' && typeof message.message === 'string';
  return { id: message.id, abort: ended ? new TaskAbort('parent_ended', message.message as string) : new TaskAbort('cancelled', 'the task was cancelled') };
}
