/** Why a task's signal was aborted; becomes the task's `error.code`. */
export class TaskAbort extends Error {
  constructor(
    readonly code: 'cancelled' | 'timeout' | 'interrupted' | 'storage_full' | 'storage_unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'TaskAbort';
  }
}

export function abortCode(signal: AbortSignal): TaskAbort {
  return signal.reason instanceof TaskAbort ? signal.reason : new TaskAbort('cancelled', 'the task was cancelled');
}
