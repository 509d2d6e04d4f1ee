import type Database from 'better-sqlite3';

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
export type RollupDelta = Partial<Record<(typeof MEASURES)[number], number>>;

/** The dimensions a record is summed under, with the record column giving its key. */
export const ROLLUP_DIMS = { all: "''", user: 'user_id', parent: 'parent_task_id', type: 'subagent_type', model: "coalesce(model, '')" } as const;
export type RollupDim = keyof typeof ROLLUP_DIMS;

/** `'YYYY-MM-DD'` (UTC) of a record's start, in SQL. */
export const DAY_SQL = "strftime('%Y-%m-%d', started_at / 1000, 'unixepoch')";

/** Rows (dim, key, day) of the records `where` selects, for INSERT ... SELECT. */
const rowsOf = (where: string, measures: string) =>
  Object.entries(ROLLUP_DIMS)
    .flatMap(([dim, key]) =>
      [DAY_SQL, "'*'"].map((day) => `SELECT tenant, '${dim}' AS dim, ${key} AS key, ${day} AS day, ${measures} FROM subagent_records WHERE ${where}`),
    )
    .join(' UNION ALL ');

const upsert = (select: string) =>
  `INSERT INTO usage_rollups (tenant, dim, key, day, ${MEASURES.join(', ')}) ${select} WHERE true
   ON CONFLICT (tenant, dim, key, day) DO UPDATE SET ${MEASURES.map((m) => `${m} = ${m} + excluded.${m}`).join(', ')}`;

/**
 * Adds a change of one task's record to its ten roll-up rows (five dimensions, its day and all
 * time). Call it in the transaction that changes the record, with the same amounts.
 */
export function createRollupWriter(sqlite: Database.Database) {
  const measures = MEASURES.map((m) => `@${m} AS ${m}`).join(', ');
  const add = sqlite.prepare(upsert(`SELECT * FROM (${rowsOf('task_id = @taskId', measures)})`));
  return (taskId: string, delta: RollupDelta) => {
    const params: Record<string, number | string> = { taskId };
    for (const m of MEASURES) params[m] = delta[m] ?? 0;
    add.run(params);
  };
}

/** The INSERT that fills the roll-ups from the records (migration 0005 holds a copy of it). */
export function rollupsFromRecordsSql(): string {
  const measures = MEASURES.map((m) => (m === 'tasks' ? 'count(*) AS tasks' : `sum(${m}) AS ${m}`)).join(', ');
  const grouped = Object.entries(ROLLUP_DIMS)
    .flatMap(([dim, key]) =>
      [DAY_SQL, "'*'"].map(
        (day) => `SELECT tenant, '${dim}', ${key}, ${day}, ${measures} FROM subagent_records GROUP BY tenant, ${key}, ${day}`,
      ),
    )
    .join(' UNION ALL ');
  return `INSERT INTO usage_rollups (tenant, dim, key, day, ${MEASURES.join(', ')}) ${grouped}`;
}

/** Rebuilds every roll-up row from the records (records written by hand, as the usage bench does). */
export function rebuildRollups(sqlite: Database.Database): void {
  sqlite.transaction(() => {
    sqlite.exec('DELETE FROM usage_rollups');
    sqlite.exec(rollupsFromRecordsSql());
  })();
}
