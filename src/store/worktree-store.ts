import type { WorktreeState } from '../shapes/task.ts';
import { rowReader } from './rows.ts';
import { tasks, type TaskRow } from './schema.ts';
import type { SqlClient } from './sql-client.ts';

const taskOf = rowReader(tasks);

/** A worktree task's state in its row (options.isolation "worktree"): its changes, its apply, its copy's removal. */
export function createWorktreeStore(sql: SqlClient) {
  return {
    /**
     * Replaces a worktree task's state if it is still `before` (compare and set, so two instances
     * applying at once cannot both win); false when it changed meanwhile.
     */
    async updateWorktree(taskId: string, before: WorktreeState, after: WorktreeState): Promise<boolean> {
      return (await sql.run('UPDATE tasks SET worktree = ? WHERE id = ? AND worktree = ?', [JSON.stringify(after), taskId, JSON.stringify(before)])) > 0;
    },

    /** Finished worktree tasks whose copy is still there and that ended before `endedBefore` (oldest first). */
    async worktreesEndedBefore(endedBefore: number, limit: number): Promise<TaskRow[]> {
      const rows = await sql.all(
        `SELECT * FROM tasks WHERE worktree IS NOT NULL AND completed_at < ? AND worktree LIKE '%"removedAt":null%' ORDER BY completed_at LIMIT ?`,
        [endedBefore, limit],
      );
      return rows.map(taskOf);
    },

    /** Worktree tasks whose apply was claimed and not recorded as done (worktree-system.ts marks them `applying`). */
    async worktreesApplying(limit: number): Promise<TaskRow[]> {
      const rows = await sql.all(`SELECT * FROM tasks WHERE worktree IS NOT NULL AND worktree LIKE '%"applying":{%' LIMIT ?`, [limit]);
      return rows.map(taskOf);
    },
  };
}
