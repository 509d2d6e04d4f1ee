import { AppError, notFound } from '../../errors/app-error.ts';
import { type CreateTaskBody } from '../../shapes/task.ts';
import { MAX_REPLAY_ROWS, type ReplayBatchBody, type ReplayBatchRow, type ReplayBody, type ReplayState } from '../../shapes/replay.ts';
import { nextPage } from '../../store/paging.ts';
import type { TaskRow } from '../../store/schema.ts';
import { ulid } from '../../util/ids.ts';
import type { TaskResources } from './task-resources.ts';

/** Starts a task (the task service's `submit`), as a replay, under an Idempotency-Key when given. */
type Submit = (tenant: string, body: CreateTaskBody, replay: ReplayState, key?: string) => Promise<TaskRow>;

/** The Idempotency-Key of a batch's `n`th replay. */
const keyOf = (batch: string, n: number) => `${batch}:${n}`;

const FINISHED: ReadonlySet<TaskRow['status']> = new Set(['completed', 'aborted', 'error']);

/**
 * Replays (POST /tasks/:id/replay): a finished model task run again from its prompt (its context,
 * fork messages and earlier conversation included) on another model or definition, in a worktree
 * copy of the workspace so that nothing it runs touches the shared one. With `tools: recorded`
 * its calls equal to the original's are answered from the original's transcript (replayer.ts).
 */
export function createReplaySystem(res: TaskResources, opts: { submit: Submit }) {
  const { deps } = res;
  // A definition removed since: admission answers for it (an unknown type).
  const kindOf = (row: TaskRow) => deps.registry.get(row.subagentType)?.kind ?? 'model';

  /** The new task's body and its replay state, or the contract's refusal (409 unfinished or purged, 400 not a model task). */
  function prepare(original: TaskRow, body: ReplayBody): { body: CreateTaskBody; replay: ReplayState } {
    const id = original.id;
    if (!FINISHED.has(original.status)) {
      throw new AppError(409, 'task_not_finished', `task ${id} is ${original.status}: it can be replayed once it has ended`);
    }
    if (original.purgedAt !== null) {
      throw new AppError(409, 'task_purged', `task ${id} was purged: its prompt and conversation are gone, so it cannot be replayed`);
    }
    if (original.depth > 0) {
      throw new AppError(
        400,
        'not_replayable',
        `task ${id} is a child of ${original.parentTask}: it ran within its parent's limits, which a replay of it alone would not keep; replay the task that started it`,
      );
    }
    if (original.request.options?.candidates !== undefined) {
      throw new AppError(
        400,
        'not_replayable',
        `task ${id} ran candidates: its attempts ran the models and tools, and one replay on one model is not what it did; replay it as a task without candidates (POST /tasks with its prompt)`,
      );
    }
    const kind = kindOf(original);
    if (kind !== 'model') throw new AppError(400, 'not_replayable', `task ${id} ran no model of the service (a ${kind} task): there is nothing to replay`);
    const request = original.request;
    const options = { ...request.options, ...(body.model !== undefined && { model: body.model }), isolation: 'worktree' as const };
    return {
      body: { ...request, subagent_type: body.subagent_type ?? original.subagentType, options },
      replay: { of: id, tools: body.tools, divergedAtStep: null, comparison: null },
    };
  }

  /** The tasks a batch replays: those named (each the tenant's), or those its filter finds. */
  async function originalsOf(tenant: string, body: ReplayBatchBody, most: number): Promise<TaskRow[]> {
    if (body.taskIds) {
      const ids = [...new Set(body.taskIds)];
      if (ids.length > most) throw tooMany(ids.length, body.variants.length);
      return Promise.all(
        ids.map(async (id) => {
          const row = await deps.store.get(tenant, id);
          if (!row) throw notFound(`task ${id}`);
          return row;
        }),
      );
    }
    const f = body.filter!;
    const ms = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));
    const found = await deps.replays.finished(
      tenant,
      { parentTaskId: f.parentTaskId, subagentType: f.subagent_type, from: ms(f.from), to: ms(f.to) },
      MAX_REPLAY_ROWS,
    );
    return found.filter((row) => kindOf(row) === 'model' && row.depth === 0).slice(0, most);
  }

  const tooMany = (tasks: number, variants: number) =>
    new AppError(400, 'invalid_request', `a batch starts at most ${MAX_REPLAY_ROWS} replays: ${tasks} tasks × ${variants} variants is ${tasks * variants}`, [
      { field: 'body.taskIds', message: `at most ${Math.floor(MAX_REPLAY_ROWS / variants)} tasks with ${variants} variants` },
    ]);

  return {
    /** Runs a finished model task again on another model or definition: the new task. */
    async start(tenant: string, original: TaskRow, body: ReplayBody): Promise<TaskRow> {
      const prepared = prepare(original, body);
      return opts.submit(tenant, prepared.body, prepared.replay);
    },

    /**
     * A batch: every (task, variant) is checked before any starts (a batch that cannot start whole
     * starts nothing), then each replay is submitted like any task, within the queue's bounds and
     * the budgets: one the queue has no room for is a row with its refusal, not a lost replay. The
     * batch is stored before the first replay starts, and each row as its replay starts.
     */
    async startBatch(tenant: string, body: ReplayBatchBody): Promise<string> {
      if ((body.taskIds === undefined) === (body.filter === undefined)) {
        throw new AppError(400, 'invalid_request', 'invalid request: give either taskIds or filter', [
          { field: 'body.taskIds', message: 'give either taskIds or filter, not both and not neither' },
        ]);
      }
      const originals = await originalsOf(tenant, body, Math.floor(MAX_REPLAY_ROWS / body.variants.length));
      const planned = originals.flatMap((original) =>
        body.variants.map((variant, index) => ({ original, index, ...prepare(original, { ...variant, tools: body.tools }) })),
      );
      const now = deps.now();
      const id = `rpb_${ulid(now)}`;
      const pending: ReplayBatchRow[] = planned.map((p) => ({ taskId: p.original.id, variant: p.index, replayTaskId: null, error: null }));
      await deps.storage.write(() => deps.replays.insert({ id, tenant, createdAt: now, variants: body.variants, rows: pending }));
      // Each replay is submitted under a key of the batch's own, and its row written as soon as it
      // started: a replay started just before a crash is found by its key (`batch`).
      for (const [n, p] of planned.entries()) {
        let row: ReplayBatchRow;
        try {
          const started = await opts.submit(tenant, p.body, p.replay, keyOf(id, n));
          row = { ...pending[n], replayTaskId: started.id };
        } catch (err) {
          const e = err instanceof AppError ? { code: err.code, message: err.message } : { code: 'internal_error', message: 'the replay could not be started' };
          row = { ...pending[n], error: e };
        }
        await deps.storage.write(() => deps.replays.setRow(id, n, row));
      }
      return id;
    },

    /** The tenant's batches, newest first: each one's variants and how many replays it holds (GET /replays/{id} answers the rows). */
    async batches(tenant: string, limit: number, cursor?: string) {
      const { rows, nextCursor } = nextPage(await deps.replays.list(tenant, limit, cursor), limit);
      return {
        batches: rows.map((b) => ({ id: b.id, createdAt: new Date(b.createdAt).toISOString(), variants: b.variants, replays: b.rows.length })),
        nextCursor,
      };
    },

    /** A batch's rows with each replay as it is now; `running` while one of them has not ended. */
    async batch(tenant: string, id: string) {
      const batch = await deps.replays.get(tenant, id);
      if (!batch) throw notFound(`replay batch ${id}`);
      const rows = await Promise.all(
        batch.rows.map(async (r, n) => {
          // Started just before the service stopped, its row not written: found by its key.
          const task = r.replayTaskId ? await deps.store.getById(r.replayTaskId) : await deps.store.findByIdempotencyKey(tenant, keyOf(id, n));
          return {
            taskId: r.taskId,
            variant: batch.variants[r.variant],
            replayTaskId: task?.id ?? null,
            // Not started: refused (its error says why), or the service stopped before it.
            status: task?.status ?? (r.error ? ('refused' as const) : ('not_started' as const)),
            replay: task?.replay ?? null,
            error: r.error,
          };
        }),
      );
      const running = rows.some((r) => r.status === 'queued' || r.status === 'running' || r.status === 'paused');
      return { id, status: running ? ('running' as const) : ('completed' as const), createdAt: new Date(batch.createdAt).toISOString(), rows };
    },
  };
}
