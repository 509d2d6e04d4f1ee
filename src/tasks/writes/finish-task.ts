import type { FinishFields } from '../../store/task-store.ts';

/** What a task ended with, before its end time is stamped. */
export type Ending = Omit<FinishFields, 'completedAt'>;

/** An ending with no deliverables: `error` with a code (or `aborted`, see `aborted`). */
export function failed(code: string, message: string): Ending {
  return {
    status: 'error',
    summary: null,
    artifacts: [],
    skipped: [],
    output: null,
    stopReason: null,
    errorCode: code,
    errorMessage: message,
  };
}

export function aborted(code: string, message: string): Ending {
  return { ...failed(code, message), status: 'aborted' };
}

/**
 * The ending of a task whose signal was aborted: `aborted` for a cancel, its background lead's end
 * or a timeout (someone asked for it), `error` when the service could not go on: `interrupted` when it stopped under the task,
 * whether by SIGTERM or by a crash found at the next start (one status for one cause, as the
 * contract has it), `storage_full` / `storage_unavailable` when its database could not be written.
 */
export function endingOfAbort(abort: { code: string; message: string }): Ending {
  const asked = abort.code === 'cancelled' || abort.code === 'parent_ended' || abort.code === 'timeout';
  return asked ? aborted(abort.code, abort.message) : failed(abort.code, abort.message);
}
