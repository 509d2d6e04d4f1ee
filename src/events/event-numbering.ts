import type { SqlClient } from '../store/sql-client.ts';
import { parentKey, type Pending } from './event-rows.ts';

/**
 * Cluster: a batch of events numbered, filtered and written by the database in one call,
 * `subagentd_append_events` (migrations-pg/0011): the parents' locks, then, with a snapshot that
 * sees every commit made under them, each task's next seqs and each parent's next parent seqs in
 * the batch's order; the events of tasks another instance took over from this one dropped (the
 * stream goes on from its new owner only); the commit announced on the events channel (one
 * notification per 6,000 bytes of announcements, in order, each a JSON array of
 * `{ i, t, k, s: [first, last], p: [first, last] }` per task: event-announcer.ts); and, for a
 * transaction of task `owned`, the whole transaction refused unless this instance may still write
 * it (it owns it, or nobody does). Answers `ord` (1-based in the batch), seq, parent seq.
 */
const APPEND_EVENTS = `SELECT ord, seq, parent_seq FROM subagentd_append_events(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]),
  CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))`;
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
 * read from the table the first time (`next`). Several instances (PostgreSQL) may write events of
 * the same parent at once: the database numbers them under a per-parent lock held to the commit,
 * from the table every time (no cache), so they follow the commit order (`insert`).
 */
export function createNumbering(cluster: { instanceId: string } | null) {
  const lastSeq = new Map<string, number>();
  const lastParentSeq = new Map<string, number>();

  async function maxOf(tx: SqlClient, sql: string, key: string): Promise<number> {
    return Number((await tx.rows(sql, [key]))[0]?.[0] ?? 0);
  }

  return {
    /**
     * Cluster: numbers and writes `rows` in `tx` (APPEND_EVENTS: the parents' locks, then the numbering),
     * announcing them with the commit. Sent without waiting: the answer (each row written, with
     * its numbers, in order) is read after the commit. `owned`: the transaction is that task's,
     * and fails unless this instance may still write it (`TAKEN_OVER_SQLSTATE`, store/sql-errors.ts), events or none.
     */
    insert(tx: SqlClient, rows: Pending[], owned: string | null, channel: string): Promise<Array<{ row: Pending; seq: number; parentSeq: number }>> {
      if (!cluster) throw new Error('insert numbers events in the database: a cluster only');
      if (rows.length === 0 && owned === null) return Promise.resolve([]);
      const answer = tx.defer<{ ord: string; seq: string; parent_seq: string }>(APPEND_EVENTS, [
        rows.map((r) => r.task.id),
        rows.map((r) => r.type),
        rows.map((r) => r.at),
        rows.map((r) => r.dataJson),
        rows.map((r) => parentKey(r.task)),
        cluster.instanceId,
        channel,
        owned,
      ]);
      const written = answer.then((numbered) =>
        numbered
          .map((n) => ({ ord: Number(n.ord), seq: Number(n.seq), parentSeq: Number(n.parent_seq) }))
          .filter((n) => n.ord > 0)
          .sort((a, b) => a.ord - b.ord)
          .map((n) => ({ row: rows[n.ord - 1], seq: n.seq, parentSeq: n.parentSeq })),
      );
      // Read after the commit, or never when the transaction failed.
      written.catch(() => {});
      return written;
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
