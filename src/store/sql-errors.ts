/**
 * What the databases' errors mean to the service, by their codes (SQLite's names, PostgreSQL's
 * SQLSTATE, and the two the service's own PostgreSQL functions raise).
 */

/** SQLSTATE of `subagentd_taken_over()` (migrations-pg/0010): a write for a task another instance owns now. */
export const TAKEN_OVER_SQLSTATE = 'SA001';

/**
 * SQLSTATE of `subagentd_run_again()` (migrations-pg/0012): a statement found its transaction
 * cannot commit as written, and asks for it to be run again (the event log does).
 */
export const RUN_AGAIN_SQLSTATE = 'SA002';

const codeOf = (err: unknown): unknown => (err as { code?: unknown } | null)?.code;

/** A unique index refused the row (SQLite and PostgreSQL). */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** The database refused a write for a task another instance took over (event-numbering.ts). */
export const isTakenOver = (err: unknown): boolean => codeOf(err) === TAKEN_OVER_SQLSTATE;

/** A statement asked for its transaction to be run again (`subagentd_run_again()`). */
export const isRunAgain = (err: unknown): boolean => codeOf(err) === RUN_AGAIN_SQLSTATE;

/** A deadlock, a serialization failure, or a statement that asked for it (PostgreSQL): the transaction is run again. */
export const isConflict = (err: unknown): boolean => ['40P01', '40001', RUN_AGAIN_SQLSTATE].includes((err as { code?: string } | null)?.code ?? '');
