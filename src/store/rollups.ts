import type { Dialect, SqlClient } from './sql-client.ts';

/** The measures a roll-up row sums, as record columns. */
const MEASURES = [
  'tasks',
  'steps',
  'input_tokens',
  'output_tokens',
  'total_tokens',
  'cached_input_tokens',
  'reasoning_tokens',
  'cost_micro_usd',
  'unpriced_tokens',
  'duration_ms',
] as const;
type Measure = (typeof MEASURES)[number];
export type RollupDelta = Partial<Record<Measure, number>>;

/** The dimensions a record is summed under, with the record column giving its key. */
export const ROLLUP_DIMS = { all: "''", user: 'user_id', parent: 'parent_task_id', type: 'subagent_type', model: "coalesce(model, '')" } as const;
export type RollupDim = keyof typeof ROLLUP_DIMS;

/** `'YYYY-MM-DD'` (UTC) of an epoch-ms column, in SQL. */
export function daySql(dialect: Dialect, column = 'started_at'): string {
  return dialect === 'sqlite'
    ? `strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`
    : `to_char(to_timestamp(${column} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
}

/** The ten (dimension, day or all time) pairs a record is summed under, as a WITH clause `d`. */
const PAIRS = `d(dim, daily) AS (VALUES ${Object.keys(ROLLUP_DIMS)
  .flatMap((dim) => [`('${dim}', 1)`, `('${dim}', 0)`])
  .join(', ')})`;

/**
 * The INSERT adding a change of records (`from`, rows of subagent_records) to their ten roll-up
 * rows each: every record joined with the pairs of `d` (PAIRS); its parameters are the measures.
 */
function insertSql(dialect: Dialect, from: string, where = '', computed: Partial<Record<Measure, string>> = {}): string {
  const key = `CASE d.dim ${Object.entries(ROLLUP_DIMS)
    .map(([dim, col]) => `WHEN '${dim}' THEN ${col === "''" ? "''" : col}`)
    .join(' ')} END`;
  return `INSERT INTO usage_rollups (tenant, dim, key, day, ${MEASURES.join(', ')})
    SELECT tenant, d.dim, ${key}, CASE WHEN d.daily = 1 THEN ${daySql(dialect)} ELSE '*' END, ${MEASURES.map((m) => computed[m] ?? 'CAST(? AS BIGINT)').join(', ')}
      FROM ${from} CROSS JOIN d ${where}
    ON CONFLICT (tenant, dim, key, day) DO UPDATE SET ${MEASURES.map((m) => `${m} = usage_rollups.${m} + excluded.${m}`).join(', ')}`;
}

/** The measures of `delta` as the roll-up INSERT's parameters. */
const measuresOf = (delta: RollupDelta) => MEASURES.map((m) => delta[m] ?? 0);

/**
 * Adds a change of one task's record to its roll-up rows, in the transaction that changes the
 * record (`tx`), with the same amounts; sent without waiting for its answer (`send`).
 */
export function addToRollups(tx: SqlClient, taskId: string, delta: RollupDelta): void {
  tx.send(ADD_SQL[tx.dialect], [...measuresOf(delta), taskId]);
}

/** Built once per dialect: it runs for every start, step, call and end. */
const ADD_SQL: Record<Dialect, string> = {
  sqlite: `WITH ${PAIRS} ${insertSql('sqlite', 'subagent_records', 'WHERE task_id = ?')}`,
  postgres: `WITH ${PAIRS} ${insertSql('postgres', 'subagent_records', 'WHERE task_id = ?')}`,
};

/**
 * PostgreSQL: one statement that runs the data-modifying WITH clauses `clauses` and adds a change
 * to the roll-ups of the record their clause `rec` returns (`UPDATE subagent_records ... RETURNING
 * *`; `from` and `where` to join it with others): one statement where SQLite sends several. Its
 * parameters: the clauses', then the change's (`rollupParams`), but for the measures `computed`
 * gives as SQL expressions.
 */
export function withRollupsSql(clauses: string, opts: { from?: string; where?: string; computed?: Partial<Record<Measure, string>> } = {}): string {
  return `WITH ${clauses}, ${PAIRS} ${insertSql('postgres', opts.from ?? 'rec', opts.where, opts.computed)}`;
}

/** The parameters `withRollupsSql`'s roll-up part takes, after those of its clauses (none for a `computed` measure). */
export const rollupParams = (delta: RollupDelta, computed: readonly Measure[] = []) => MEASURES.filter((m) => !computed.includes(m)).map((m) => delta[m] ?? 0);

/** The INSERT that fills the roll-ups from the records (SQLite's migration 0005 holds a copy of it). */
export function rollupsFromRecordsSql(dialect: Dialect = 'sqlite'): string {
  const measures = MEASURES.map((m) => (m === 'tasks' ? 'count(*) AS tasks' : `sum(${m}) AS ${m}`)).join(', ');
  const grouped = Object.entries(ROLLUP_DIMS)
    .flatMap(([dim, key]) =>
      [daySql(dialect), "'*'"].map((day) => `SELECT tenant, '${dim}', ${key}, ${day}, ${measures} FROM subagent_records GROUP BY tenant, ${key}, ${day}`),
    )
    .join(' UNION ALL ');
  return `INSERT INTO usage_rollups (tenant, dim, key, day, ${MEASURES.join(', ')}) ${grouped}`;
}

/** Rebuilds every roll-up row from the records (records written by hand, as the usage bench does). */
export function rebuildRollups(sql: SqlClient): Promise<void> {
  return sql.transaction(async (tx) => {
    await tx.run('DELETE FROM usage_rollups');
    await tx.run(rollupsFromRecordsSql(sql.dialect));
  });
}

/**
 * Moves a user's roll-up rows to another key (an erased user's `erased:<hash>`), added to any
 * rows that key has already, in the caller's transaction: totals stay what they were.
 */
export async function renameUserInRollups(sql: SqlClient, tenant: string, from: string, to: string): Promise<void> {
  await sql.run(
    `INSERT INTO usage_rollups (tenant, dim, key, day, ${MEASURES.join(', ')})
     SELECT tenant, dim, ?, day, ${MEASURES.join(', ')} FROM usage_rollups WHERE tenant = ? AND dim = 'user' AND key = ?
     ON CONFLICT (tenant, dim, key, day) DO UPDATE SET ${MEASURES.map((m) => `${m} = usage_rollups.${m} + excluded.${m}`).join(', ')}`,
    [to, tenant, from],
  );
  await sql.run(`DELETE FROM usage_rollups WHERE tenant = ? AND dim = 'user' AND key = ?`, [tenant, from]);
}
