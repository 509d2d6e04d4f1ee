import type { SqlClient } from '../store/sql-client.ts';
import { TaskTakenOver } from '../store/task-store.ts';
import { parentKey, type Pending } from './event-rows.ts';

/** Cluster: the advisory-lock namespace of parent streams. */
const PARENT_LOCK = 0x5a6d_0004;
/** Parents whose last parent seq is cached; past it the cache is emptied once all is written. */
const MAX_CACHED_PARENTS = 50_000;

/** The numbers taken in a transaction before it (per task, per parent), to give back if it fails. */
export type NumberUndo = [Map<string, number | undefined>, Map<string, number | undefined>];
export const newUndo = (): NumberUndo => [new Map<string, number | undefined>(), new Map<string, number | undefined>()];

/** Sets `key` back to `value`, or removes it when it had none. */
function putBack(map: Map<string, number>, key: string, value: number | undefined): void {
  if (value === undefined) map.delete(key);
  else map.set(key, value);
}

/**
 * How events get their numbers: the next `seq` of their task and `parentSeq` of their parent,
 * gap-free, in the order they are written. One process (SQLite) keeps the last numbers in memory,
 * read from the table the first time. Several instances (PostgreSQL) may write events of the same
 * parent at once: the numbers are taken under a per-parent lock held to the commit, and read
 * from the table every time (no cache), so they follow the commit order.
 */
export function createNumbering(cluster: { instanceId: string } | null) {
  const lastSeq = new Map<string, number>();
  const lastParentSeq = new Map<string, number>();

  async function maxOf(tx: SqlClient, sql: string, key: string): Promise<number> {
    return Number((await tx.rows(sql, [key]))[0]?.[0] ?? 0);
  }

  return {
    /**
     * Before numbering `rows` in `tx`. Cluster: takes the locks of their parents in one order (a
     * deadlock between two bodies' late events is retried by the commit), then in one statement
     * reads the last numbers of every task and parent of the batch and which tasks another
     * instance took over from this one (cut off longer than its lease): their events are dropped
     * (the task's stream goes on from its new owner only). Answers the rows to write. `owned`: the
     * transaction is that task's, and writes nothing unless this instance may still write it (it
     * owns it, or nobody does): `TaskTakenOver` otherwise (the same read, no statement of its own).
     */
    async prepare(tx: SqlClient, rows: Pending[], owned: string | null = null): Promise<Pending[]> {
      if (!cluster || (rows.length === 0 && owned === null)) return rows;
      const taskIds = [...new Set(rows.map((r) => r.task.id).concat(owned ?? []))];
      const parents = [...new Set(rows.map((r) => parentKey(r.task)))].sort();
      if (parents.length > 0)
        tx.send('SELECT pg_advisory_xact_lock(?, hashtext(k)) FROM (SELECT k FROM unnest(CAST(? AS TEXT[])) AS k ORDER BY k) AS keys', [PARENT_LOCK, parents]);
      // One statement, after the locks (its snapshot sees every commit made under them): the
      // tasks taken over (-1) or their last numbers, then the parents' last numbers.
      const last = await tx.rows(
        `SELECT 0, t.id, CASE WHEN t.owner IS NOT NULL AND t.owner <> ? THEN -1 ELSE (SELECT max(seq) FROM task_events e WHERE e.task_id = t.id) END
         FROM tasks t WHERE t.id = ANY(?)
         UNION ALL
         SELECT 1, parent_key, max(parent_seq) FROM task_events WHERE parent_key = ANY(?) GROUP BY parent_key`,
        [cluster.instanceId, taskIds, parents],
      );
      lastSeq.clear();
      lastParentSeq.clear();
      for (const id of taskIds) lastSeq.set(id, 0);
      for (const key of parents) lastParentSeq.set(key, 0);
      const lost = new Set<string>();
      const found = new Set<string>();
      for (const [kind, key, max] of last) {
        if (Number(kind) === 1) {
          lastParentSeq.set(key as string, Number(max ?? 0));
          continue;
        }
        found.add(key as string);
        if (Number(max) === -1) lost.add(key as string);
        else lastSeq.set(key as string, Number(max ?? 0));
      }
      if (owned !== null && (lost.has(owned) || !found.has(owned))) throw new TaskTakenOver(owned);
      return lost.size > 0 ? rows.filter((r) => !lost.has(r.task.id)) : rows;
    },

    /** The next numbers of `row`'s task and parent (`terminal`: the task takes no more events). */
    async next(tx: SqlClient, row: Pending, terminal: boolean, undo: NumberUndo): Promise<{ seq: number; parentSeq: number; parent: string }> {
      const [seqs, parentSeqs] = undo;
      const id = row.task.id;
      const parent = parentKey(row.task);
      if (!seqs.has(id)) seqs.set(id, lastSeq.get(id));
      if (!parentSeqs.has(parent)) parentSeqs.set(parent, lastParentSeq.get(parent));
      const seq = (lastSeq.get(id) ?? (await maxOf(tx, 'SELECT max(seq) FROM task_events WHERE task_id = ?', id))) + 1;
      const parentSeq = (lastParentSeq.get(parent) ?? (await maxOf(tx, 'SELECT max(parent_seq) FROM task_events WHERE parent_key = ?', parent))) + 1;
      // A finished task takes no more events: its number need not stay cached.
      if (terminal) lastSeq.delete(id);
      else lastSeq.set(id, seq);
      lastParentSeq.set(parent, parentSeq);
      return { seq, parentSeq, parent };
    },

    /** After the rows are inserted. Cluster: nothing is kept (the next transaction reads under its locks). */
    written(): void {
      if (!cluster) return;
      lastSeq.clear();
      lastParentSeq.clear();
    },

    /** The transaction failed: the numbers it took are given back, so a retry takes the same. */
    restore([seqs, parentSeqs]: NumberUndo): void {
      for (const [id, seq] of seqs) putBack(lastSeq, id, seq);
      for (const [key, seq] of parentSeqs) putBack(lastParentSeq, key, seq);
    },

    /** Everything is stored: past MAX_CACHED_PARENTS the cache is emptied (rebuilt from the table when needed). */
    trim(): void {
      if (lastParentSeq.size > MAX_CACHED_PARENTS) lastParentSeq.clear();
    },
  };
}

export type Numbering = ReturnType<typeof createNumbering>;
