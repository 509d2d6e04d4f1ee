import { ABORT_GRACE_MS } from '../../loop/model-guard.ts';

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

/**
 * How long a model call in flight when its task's signal aborts is still read for its usage. A
 * lost lease (`taken_over`, or `storage_unavailable` past it) reads the answer to its end, for at
 * most LOST_LEASE_READ_MS: nobody waits on this instance any more, the provider is answering (an
 * instance paused past its lease wakes mid-answer) and its bill is in the answer's last bytes. A
 * cancel, a timeout or a shutdown cuts the call after ABORT_GRACE_MS: its caller wants the
 * spending stopped, and a cut answer stops the provider's generation.
 */
export function abortGraceFor(reason: unknown): number {
  const lost = reason instanceof TaskAbort && (reason.code === 'taken_over' || reason.code === 'storage_unavailable');
  return lost ? LOST_LEASE_READ_MS : ABORT_GRACE_MS;
}

/**
 * The longest a call is read on once its task's lease was lost (see `abortGraceFor`). Under the
 * 15 s within which a SIGTERM ends the process, so that a shutdown never cuts one.
 */
export const LOST_LEASE_READ_MS = 10_000;
