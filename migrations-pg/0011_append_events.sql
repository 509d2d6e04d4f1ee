-- A commit's events, numbered, written and announced in one call (event-numbering.ts): the parents'
-- locks (advisory, namespace 0x5a6d0004 = 1517092868, taken in the order of their keys, held to the
-- commit), then, in a statement of its own (a fresh snapshot, which sees every commit made under
-- those locks), each task's next seqs and each parent's next parent seqs in the batch's order; the
-- events of tasks another instance owns dropped; the rows inserted; the commit announced on
-- `channel` (one notification per 6,000 bytes of announcements, in order: event-announcer.ts reads
-- them); and, when `owned` is a task this instance may no longer write, the call (and with it the
-- transaction) failing through subagentd_taken_over(). Answers each written event's `ord` (1-based
-- in the batch) with its numbers, then -1 per notification and -2 for a refusal (never answered).
-- Instances that take the same locks and run the same statement themselves can share the database.
CREATE OR REPLACE FUNCTION subagentd_append_events(task_ids text[], types text[], ats bigint[], datas text[], parent_keys text[],
    me text, channel text, owned text)
  RETURNS TABLE (ord bigint, seq bigint, parent_seq bigint) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(1517092868, hashtext(k)) FROM (SELECT DISTINCT k FROM unnest(parent_keys) AS k ORDER BY k) AS keys;
  RETURN QUERY WITH input AS (
    SELECT * FROM unnest(task_ids, types, ats, datas, parent_keys) WITH ORDINALITY AS i(task_id, type, at, data, parent_key, ord)
  ),
  numbered AS (
    SELECT i.task_id, i.type, i.at, i.data, i.parent_key, i.ord,
      COALESCE((SELECT max(e.seq) FROM task_events e WHERE e.task_id = i.task_id), 0)
        + row_number() OVER (PARTITION BY i.task_id ORDER BY i.ord) AS seq,
      COALESCE((SELECT max(e.parent_seq) FROM task_events e WHERE e.parent_key = i.parent_key), 0)
        + row_number() OVER (PARTITION BY i.parent_key ORDER BY i.ord) AS parent_seq
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = i.task_id AND t.owner IS NOT NULL AND t.owner <> me)
  ),
  inserted AS (
    INSERT INTO task_events (task_id, seq, type, at, data, parent_key, parent_seq)
    SELECT task_id, seq, type, at, data, parent_key, parent_seq FROM numbered
  ),
  announced AS (
    SELECT json_build_object('i', me, 't', task_id, 'k', parent_key,
        's', json_build_array(min(seq), max(seq)), 'p', json_build_array(min(parent_seq), max(parent_seq)))::text AS a,
      min(ord) AS first
    FROM numbered GROUP BY task_id, parent_key
  ),
  chunks AS (
    SELECT (sum(octet_length(a) + 1) OVER (ORDER BY first) - octet_length(a) - 1) / 6000 AS k, a, first FROM announced
  )
  SELECT n.ord, n.seq, n.parent_seq FROM numbered n
  UNION ALL
  SELECT -1::bigint, 0::bigint, 0::bigint FROM (SELECT pg_notify(channel, payload) FROM (
    SELECT k, '[' || string_agg(a, ',' ORDER BY first) || ']' AS payload FROM chunks GROUP BY k ORDER BY k) ordered) notified
  UNION ALL
  SELECT -2::bigint, subagentd_taken_over(owned), 0::bigint
  WHERE owned IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks WHERE id = owned AND (owner IS NULL OR owner = me));
END
$$;
