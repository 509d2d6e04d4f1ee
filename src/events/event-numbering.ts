import type { SqlClient } from '../store/sql-client.ts';
import { parentKey, type Pending } from './event-rows.ts';

/** Cluster: the advisory-lock namespace of parent streams. */
const PARENT_LOCK = 0x5a6d_0004;
/** SQLSTATE of `subagentd_taken_over()` (migrations-pg/0010): a write for a task another instance owns now. */
export const TAKEN_OVER_SQLSTATE = 'SA001';
/** Announcements start a new notification past this many bytes (PostgreSQL refuses one of 8,000; one is at most ~1 KB). */
const NOTIFY_CHUNK_BYTES = 6000;

/**
 * Cluster: a batch of events numbered, filtered and written by the database in one statement, after
 * the parents' locks (its snapshot sees every commit made under them): each task's next seqs and
 * each parent's next parent seqs, in the batch's order; the events of tasks another instance took
 * over from this one dropped (the stream goes on from its new owner only); the commit announced on
 * the events channel (one notification per NOTIFY_CHUNK_BYTES of announcements, in order, each a
 * JSON array of `{ i, t, k, s: [first, last], p: [first, last] }` per task: event-announcer.ts);
 * and, for a transaction of task `owned`, the whole transaction refused unless this instance may
 * still write it (it owns it, or nobody does). Answers `ord` (1-based in the batch), seq, parent seq.
 */
const NUMBERED_INSERT = `WITH input AS (
    SELECT * FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]))
      WITH ORDINALITY AS i(task_id, type, at, data, parent_key, ord)
  ),
  numbered AS (
    SELECT i.task_id, i.type, i.at, i.data, i.parent_key, i.ord,
      COALESCE((SELECT max(e.seq) FROM task_events e WHERE e.task_id = i.task_id), 0)
        + row_number() OVER (PARTITION BY i.task_id ORDER BY i.ord) AS seq,
      COALESCE((SELECT max(e.parent_seq) FROM task_events e WHERE e.parent_key = i.parent_key), 0)
        + row_number() OVER (PARTITION BY i.parent_key ORDER BY i.ord) AS parent_seq
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = i.task_id AND t.owner IS NOT NULL AND t.owner <> ?)
  ),
  inserted AS (
    INSERT INTO task_events (task_id, seq, type, at, data, parent_key, parent_seq)
    SELECT task_id, seq, type, at, data, parent_key, parent_seq FROM numbered
  ),
  announced AS (
    SELECT json_build_object('i', CAST(? AS TEXT), 't', task_id, 'k', parent_key,
        's', json_build_array(min(seq), max(seq)), 'p', json_build_array(min(parent_seq), max(parent_seq)))::text AS a,
      min(ord) AS first
    FROM numbered GROUP BY task_id, parent_key
  ),
  chunks AS (
    SELECT (sum(octet_length(a) + 1) OVER (ORDER BY first) - octet_length(a) - 1) / ${NOTIFY_CHUNK_BYTES} AS k, a, first FROM announced
  )
  SELECT ord, seq, parent_seq FROM numbered
  UNION ALL
  SELECT -1, 0, 0 FROM (SELECT pg_notify(CAST(? AS TEXT), payload) FROM (
    SELECT k, '[' || string_agg(a, ',' ORDER BY first) || ']' AS payload FROM chunks GROUP BY k ORDER BY k) ordered) notified
  UNION ALL
  SELECT -2, subagentd_taken_over(CAST(? AS TEXT)), 0
  WHERE CAST(? AS TEXT) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks WHERE id = CAST(? AS TEXT) AND (owner IS NULL OR owner = ?))`;
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
     * Cluster: numbers and writes `rows` in `tx` (NUMBERED_INSERT, after the parents' locks),
     * announcing them with the commit. Sent without waiting: the answer (each row written, with
     * its numbers, in order) is read after the commit. `owned`: the transaction is that task's,
     * and fails unless this instance may still write it (`TAKEN_OVER_SQLSTATE`), events or none.
     */
    insert(tx: SqlClient, rows: Pending[], owned: string | null, channel: string): Promise<Array<{ row: Pending; seq: number; parentSeq: number }>> {
      if (!cluster) throw new Error('insert numbers events in the database: a cluster only');
      if (rows.length === 0 && owned === null) return Promise.resolve([]);
      const parents = [...new Set(rows.map((r) => parentKey(r.task)))].sort();
      if (parents.length > 0)
        tx.send('SELECT pg_advisory_xact_lock(?, hashtext(k)) FROM (SELECT k FROM unnest(CAST(? AS TEXT[])) AS k ORDER BY k) AS keys', [PARENT_LOCK, parents]);
      const me = cluster.instanceId;
      const answer = tx.defer<{ ord: string; seq: string; parent_seq: string }>(NUMBERED_INSERT, [
        rows.map((r) => r.task.id),
        rows.map((r) => r.type),
        rows.map((r) => r.at),
        rows.map((r) => r.dataJson),
        rows.map((r) => parentKey(r.task)),
        me,
        me,
        channel,
        owned,
        owned,
        owned,
        me,
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
