import { createEventStore } from '../store/event-store.ts';
import type { SqlClient } from '../store/sql-client.ts';
import { parentKey, type Pending } from './event-rows.ts';

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

  return {
    /**
     * Cluster: numbers and writes `rows` in `tx` (in one call: store/event-store.ts's `append`),
     * announcing them with the commit. Sent without waiting: the answer (each row written, with
     * its numbers, in order) is read after the commit. `owned`: the transaction is that task's,
     * and fails unless this instance may still write it (`TAKEN_OVER_SQLSTATE`, store/sql-errors.ts), events or none.
     */
    insert(tx: SqlClient, rows: Pending[], owned: string | null, channel: string): Promise<Array<{ row: Pending; seq: number; parentSeq: number }>> {
      if (!cluster) throw new Error('insert numbers events in the database: a cluster only');
      if (rows.length === 0 && owned === null) return Promise.resolve([]);
      const answer = createEventStore(tx).append({
        taskIds: rows.map((r) => r.task.id),
        types: rows.map((r) => r.type),
        ats: rows.map((r) => r.at),
        dataJsons: rows.map((r) => r.dataJson),
        parentKeys: rows.map((r) => parentKey(r.task)),
        instanceId: cluster.instanceId,
        channel,
        owned,
      });
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
      const seq = (lastSeq.get(id) ?? (await createEventStore(tx).lastSeq(id))) + 1;
      const parentSeq = (lastParentSeq.get(parent) ?? (await createEventStore(tx).lastParentSeq(parent))) + 1;
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
