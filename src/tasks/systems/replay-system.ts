import { AppError } from '../../errors/app-error.ts';
import type { CreateTaskBody, ReplayBody, ReplayState } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { TaskResources } from './task-resources.ts';

const FINISHED: ReadonlySet<TaskRow['status']> = new Set(['completed', 'aborted', 'error']);

/**
 * Replays (POST /tasks/:id/replay): a finished model task run again from its prompt (its context,
 * fork messages and earlier conversation included) on another model or definition, in a worktree
 * copy of the workspace so that nothing it runs touches the shared one. With `tools: recorded`
 * its calls equal to the original's are answered from the original's transcript (replayer.ts).
 */
export function createReplaySystem(res: TaskResources) {
  const { deps } = res;
  return {
    /** The new task's body and its replay state, or the contract's refusal (409 unfinished or purged, 400 not a model task). */
    prepare(original: TaskRow, body: ReplayBody): { body: CreateTaskBody; replay: ReplayState } {
      const id = original.id;
      if (!FINISHED.has(original.status)) {
        throw new AppError(409, 'task_not_finished', `task ${id} is ${original.status}: it can be replayed once it has ended`);
      }
      if (original.purgedAt !== null) {
        throw new AppError(409, 'task_purged', `task ${id} was purged: its prompt and conversation are gone, so it cannot be replayed`);
      }
      const kind = original.subagentType === 'shell' ? 'shell' : (deps.registry.get(original.subagentType)?.kind ?? 'model');
      if (kind !== 'model') throw new AppError(400, 'not_replayable', `task ${id} ran no model of the service (a ${kind} task): there is nothing to replay`);
      const request = original.request;
      const options = { ...request.options, ...(body.model !== undefined && { model: body.model }), isolation: 'worktree' as const };
      return {
        body: { ...request, subagent_type: body.subagent_type ?? original.subagentType, options },
        replay: { of: id, tools: body.tools, divergedAtStep: null, comparison: null },
      };
    },
  };
}
