import { rowReader } from './rows.ts';
import { tasks, type TaskRow } from './schema.ts';
import type { SqlClient } from './sql-client.ts';

const taskOf = rowReader(tasks);

/** Most children one read answers: a lead's `wait` over more than this names them (`task_ids`). */
export const MAX_CHILDREN_READ = 200;

const NOT_ENDED = `status IN ('queued', 'running', 'paused')`;

/**
 * The statements over a task's children (nesting): what a lead's `wait`, `send_input` and
 * `close_agent` read, and the children its end cancels. Part of the task store
 * (`createTaskStore` spreads them in).
 */
export function createChildStore(sql: SqlClient) {
  return {
    /**
     * The children `parentTask` started, oldest first: all of them (at most MAX_CHILDREN_READ), or
     * those of `ids` among them (an id of another task's child is not answered).
     */
    async childrenOf(parentTask: string, opts: { ids?: readonly string[]; background?: boolean } = {}): Promise<TaskRow[]> {
      const where = ['parent_task = ?'];
      const params: unknown[] = [parentTask];
      if (opts.ids) {
        if (opts.ids.length === 0) return [];
        where.push(`id IN (${opts.ids.map(() => '?').join(', ')})`);
        params.push(...opts.ids);
      }
      if (opts.background) where.push('background = 1');
      const rows = await sql.all(`SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`, [...params, MAX_CHILDREN_READ]);
      return rows.map(taskOf);
    },

    /** The children of `parentTask` that have not ended (its end cancels them). */
    async childrenNotEnded(parentTask: string): Promise<TaskRow[]> {
      const rows = await sql.all(`SELECT * FROM tasks WHERE parent_task = ? AND ${NOT_ENDED} ORDER BY id`, [parentTask]);
      return rows.map(taskOf);
    },

    /**
     * Children not ended whose lead has ended: left behind when a process stopped between the two,
     * or by a start whose answer was lost (read at start; the unended tasks are few, found by the
     * status index).
     */
    async orphanedChildren(): Promise<TaskRow[]> {
      const rows = await sql.all(
        `SELECT c.* FROM tasks c JOIN tasks p ON p.id = c.parent_task
         WHERE c.status IN ('queued', 'running', 'paused') AND p.status IN ('completed', 'aborted', 'error')`,
      );
      return rows.map(taskOf);
    },
  };
}
