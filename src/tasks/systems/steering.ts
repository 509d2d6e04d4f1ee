import { AppError } from '../../errors/app-error.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { TaskResources } from './task-resources.ts';

/** Steering messages one task may have waiting at once, and their characters (they wait in the database). */
export const MAX_WAITING_MESSAGES = 100;
export const MAX_WAITING_CHARS = 64 * 1024;

/**
 * Steering: a message for a queued, running or paused task, which its model gets before its next
 * step (event `message.received`), on whichever instance runs it. Messages wait in the database
 * (the task's inbox): a restart or a takeover does not lose them.
 */
export function createSteering(res: TaskResources) {
  const { deps } = res;
  return {
    /**
     * Puts `prompt` in the task's inbox: a 409 `task_finished` once it ended, a 400 `not_steerable`
     * for a task with no model of the service, a 429 `inbox_full` past the bounds above.
     */
    async offer(row: TaskRow, prompt: string): Promise<void> {
      const id = row.id;
      if (row.status !== 'queued' && row.status !== 'running' && row.status !== 'paused') {
        throw new AppError(409, 'task_finished', `task ${id} is ${row.status}; continue it with a new task whose task_id is ${id}`);
      }
      const kind = deps.registry.get(row.subagentType)?.kind;
      if (kind === 'shell') throw new AppError(400, 'not_steerable', 'a shell task has no model to steer');
      if (kind === 'acp') throw new AppError(400, 'not_steerable', 'an external ACP agent cannot be given messages during its turn');
      const offer = await deps.storage.write(() =>
        deps.store.offerMessage(id, prompt, deps.now(), { messages: MAX_WAITING_MESSAGES, chars: MAX_WAITING_CHARS }),
      );
      if (!offer.accepted) {
        throw new AppError(
          429,
          'inbox_full',
          `task ${id} already has ${offer.waiting} messages (${offer.chars} characters) waiting for its next step; at most ${MAX_WAITING_MESSAGES} and ${MAX_WAITING_CHARS} characters`,
        );
      }
    },
  };
}
