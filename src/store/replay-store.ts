import type { ReplayBatchRow, ReplayVariant } from '../shapes/replay.ts';
import { rowReader } from './rows.ts';
import { replayBatches, tasks, type TaskRow } from './schema.ts';
import type { SqlClient } from './sql-client.ts';

export type ReplayBatch = typeof replayBatches.$inferSelect;

const readBatch = rowReader(replayBatches);
const readTask = rowReader(tasks);

/** Which finished tasks a batch replays (`POST /replays` `filter`). */
export interface ReplayFilter {
  parentTaskId?: string;
  subagentType?: string;
  /** Ended at or after (epoch ms). */
  from?: number;
  /** Ended before (epoch ms). */
  to?: number;
}

/** Batches of replays (`POST /replays`), and the finished tasks a filter names. */
export function createReplayStore(sql: SqlClient) {
  return {
    async insert(batch: { id: string; tenant: string; createdAt: number; variants: ReplayVariant[]; rows: ReplayBatchRow[] }): Promise<void> {
      await sql.run('INSERT INTO replay_batches (id, tenant, created_at, variants, rows) VALUES (?, ?, ?, ?, ?)', [
        batch.id,
        batch.tenant,
        batch.createdAt,
        JSON.stringify(batch.variants),
        JSON.stringify(batch.rows),
      ]);
    },

    /** Row `n` of a batch, once its replay started (or was refused); the rows are read and written in one transaction. */
    setRow(id: string, n: number, row: ReplayBatchRow): Promise<void> {
      return sql.transaction(async (tx) => {
        const raw = await tx.get<{ rows: string }>('SELECT rows FROM replay_batches WHERE id = ?', [id]);
        if (!raw) return;
        const rows = JSON.parse(raw.rows) as ReplayBatchRow[];
        rows[n] = row;
        await tx.run('UPDATE replay_batches SET rows = ? WHERE id = ?', [JSON.stringify(rows), id]);
      });
    },

    async get(tenant: string, id: string): Promise<ReplayBatch | undefined> {
      const raw = await sql.get('SELECT * FROM replay_batches WHERE id = ? AND tenant = ?', [id, tenant]);
      return raw && readBatch(raw);
    },

    /** The tenant's batches, newest first, from before `cursor` (a batch id), at most `limit + 1` (paging.ts). */
    async list(tenant: string, limit: number, cursor?: string): Promise<ReplayBatch[]> {
      const rows = cursor
        ? await sql.all('SELECT * FROM replay_batches WHERE tenant = ? AND id < ? ORDER BY id DESC LIMIT ?', [tenant, cursor, limit + 1])
        : await sql.all('SELECT * FROM replay_batches WHERE tenant = ? ORDER BY id DESC LIMIT ?', [tenant, limit + 1]);
      return rows.map(readBatch);
    },

    /** The tenant's finished tasks with their content (not purged) that match, oldest first, at most `limit`. */
    async finished(tenant: string, filter: ReplayFilter, limit: number): Promise<TaskRow[]> {
      const where = [`tenant = ?`, `status IN ('completed', 'aborted', 'error')`, 'purged_at IS NULL'];
      const params: unknown[] = [tenant];
      const add = (clause: string, value: unknown) => {
        where.push(clause);
        params.push(value);
      };
      if (filter.parentTaskId !== undefined) add('parent_task_id = ?', filter.parentTaskId);
      if (filter.subagentType !== undefined) add('subagent_type = ?', filter.subagentType);
      if (filter.from !== undefined) add('completed_at >= ?', filter.from);
      if (filter.to !== undefined) add('completed_at < ?', filter.to);
      const rows = await sql.all(`SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`, [...params, limit]);
      return rows.map(readTask);
    },
  };
}

export type ReplayStore = ReturnType<typeof createReplayStore>;
