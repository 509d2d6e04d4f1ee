import type { ModelMessage } from 'ai';
import { addToRollups, rollupParams, withRollupsSql } from './rollups.ts';
import type { SqlClient } from './sql-client.ts';

/** `count` messages of a step in one statement, numbered after the task's last one (VALUES columns are column1, column2 on both engines). */
const insertMessages = (count: number) => `INSERT INTO task_messages (task_id, n, step, message)
   SELECT ?, last.n + v.column1, ?, v.column2
   FROM (SELECT coalesce(max(n), 0) AS n FROM task_messages WHERE task_id = ?) last,
     (VALUES ${Array.from({ length: count }, (_, i) => `(${i + 1}, ?)`).join(', ')}) AS v`;
/**
 * PostgreSQL: a step counted on the task, its record and its roll-ups, and `count` messages stored,
 * in one statement. Built once per count (a step runs it): the same string each time, so the
 * driver's lookups by text do not hash a new one of some kilobytes at every step.
 */
const pgStepSqls = new Map<number, string>();
function pgStepSql(count: number): string {
  let text = pgStepSqls.get(count);
  if (text === undefined) {
    text = withRollupsSql(`t AS (UPDATE tasks SET steps = steps + 1 WHERE id = ?),
  rec AS (UPDATE subagent_records SET steps = steps + 1 WHERE task_id = ? RETURNING *)${count > 0 ? `, m AS (${insertMessages(count)})` : ''}`);
    pgStepSqls.set(count, text);
  }
  return text;
}
/** Messages per INSERT statement (a compacted or inherited conversation may be long). */
const MESSAGES_PER_INSERT = 200;
/** Sends a step's messages (in `tx`), MESSAGES_PER_INSERT to a statement. */
function insertAll(tx: SqlClient, taskId: string, step: number, messages: ModelMessage[]): void {
  for (let i = 0; i < messages.length; i += MESSAGES_PER_INSERT) {
    const chunk = messages.slice(i, i + MESSAGES_PER_INSERT);
    tx.send(insertMessages(chunk.length), [taskId, step, taskId, ...chunk.map((m) => JSON.stringify(m))]);
  }
}
/** Counts a finished step on the task, its record and the record's roll-ups (in `tx`). */
function countStepIn(tx: SqlClient, taskId: string): void {
  tx.send('UPDATE tasks SET steps = steps + 1 WHERE id = ?', [taskId]);
  tx.send('UPDATE subagent_records SET steps = steps + 1 WHERE task_id = ?', [taskId]);
  addToRollups(tx, taskId, { steps: 1 });
}

/**
 * A task's conversation (`task_messages`: what each step added, replaced whole by a compaction),
 * its steps counted, and its inbox of steering messages (`task_inbox`).
 */
export function createTranscriptStore(sql: SqlClient) {
  /** Every write that is more than one statement runs in a transaction of its own, or the caller's. */
  const atomically = <R>(body: (tx: SqlClient) => Promise<R>) => sql.transaction(body);
  return {
    /** Counts a finished step on the task and its record (run inside the step's event transaction). */
    countStep(taskId: string): Promise<void> {
      return atomically(async (tx) => countStepIn(tx, taskId));
    },

    /** The task's conversation, in order (empty before it started). */
    async messages(taskId: string): Promise<ModelMessage[]> {
      const rows = await sql.rows('SELECT message FROM task_messages WHERE task_id = ? ORDER BY n', [taskId]);
      return rows.map((r) => JSON.parse(r[0] as string) as ModelMessage);
    },

    /**
     * A finished step: counted on the task and its record, and what it added to the conversation
     * appended (run inside the step's event transaction). PostgreSQL: one statement when the step
     * added at most MESSAGES_PER_INSERT messages.
     */
    finishStep(taskId: string, step: number, messages: ModelMessage[]): Promise<void> {
      return atomically(async (tx) => {
        if (tx.dialect === 'sqlite' || messages.length > MESSAGES_PER_INSERT) {
          countStepIn(tx, taskId);
          insertAll(tx, taskId, step, messages);
          return;
        }
        const rows = messages.length > 0 ? [taskId, step, taskId, ...messages.map((m) => JSON.stringify(m))] : [];
        tx.send(pgStepSql(messages.length), [taskId, taskId, ...rows, ...rollupParams({ steps: 1 })]);
      });
    },

    /** Appends what a step added to the conversation (run inside the step's event transaction). */
    appendMessages(taskId: string, step: number, messages: ModelMessage[]): Promise<void> {
      return atomically(async (tx) => insertAll(tx, taskId, step, messages));
    },

    /** Replaces the conversation with its compacted form and counts the compaction. */
    replaceMessages(taskId: string, step: number, messages: ModelMessage[]): Promise<void> {
      return atomically(async (tx) => {
        await tx.run('DELETE FROM task_messages WHERE task_id = ?', [taskId]);
        insertAll(tx, taskId, step, messages);
        await tx.run('UPDATE tasks SET compactions = compactions + 1 WHERE id = ?', [taskId]);
      });
    },

    /**
     * Accepts a steering message unless the task already has `max.messages` waiting or their
     * characters would pass `max.chars`; answers what is waiting (before it, when refused).
     */
    offerMessage(
      taskId: string,
      text: string,
      at: number,
      max: { messages: number; chars: number },
    ): Promise<{ accepted: boolean; waiting: number; chars: number }> {
      return atomically(async (tx) => {
        // Two messages for one task at once (from two instances) are numbered one after the other.
        await tx.run('UPDATE tasks SET id = id WHERE id = ?', [taskId]);
        const [count, chars] = (await tx.rows('SELECT count(*), coalesce(sum(length(text)), 0) FROM task_inbox WHERE task_id = ?', [taskId]))[0] as [
          number,
          number,
        ];
        const waiting = Number(count);
        const used = Number(chars);
        if (waiting >= max.messages || used + text.length > max.chars) return { accepted: false, waiting, chars: used };
        await tx.run('INSERT INTO task_inbox (task_id, n, text, at) VALUES (?, (SELECT coalesce(max(n), 0) + 1 FROM task_inbox WHERE task_id = ?), ?, ?)', [
          taskId,
          taskId,
          text,
          at,
        ]);
        return { accepted: true, waiting: waiting + 1, chars: used + text.length };
      });
    },

    /** Hands over the messages waiting for a task, oldest first, and removes them (one statement: one per step). */
    async takeMessages(taskId: string): Promise<string[]> {
      const rows = await sql.rows('DELETE FROM task_inbox WHERE task_id = ? RETURNING n, text', [taskId]);
      return rows.sort((a, b) => Number(a[0]) - Number(b[0])).map((r) => r[1] as string);
    },
  };
}
