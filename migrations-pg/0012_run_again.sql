-- A statement that finds its transaction cannot commit as written calls this: the statement, and
-- with it its transaction, fails with SQLSTATE SA002, and the service runs the transaction again,
-- knowing why (`why`). The webhook outbox uses it (webhook-store.ts): a transaction of events
-- commits without reading the endpoints first, and fails through this if one exists after all.
CREATE OR REPLACE FUNCTION subagentd_run_again(why text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run the transaction again: %', why USING ERRCODE = 'SA002';
END
$$;
