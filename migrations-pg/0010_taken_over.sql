-- A statement that writes for a task this instance no longer owns (another instance took it over)
-- calls this: the statement, and with it its transaction, fails with SQLSTATE SA001, which the
-- service reads as "taken over" (event-numbering.ts). One round trip, no read before the write.
CREATE OR REPLACE FUNCTION subagentd_taken_over(task text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'task % is owned by another instance', task USING ERRCODE = 'SA001';
END
$$;
