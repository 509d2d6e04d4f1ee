import { getTableColumns, type Table } from 'drizzle-orm';

/**
 * Turns a row as the database answers `SELECT *` (column names, driver values) into the table's
 * typed row, decoding each column as the schema says (JSON text, booleans stored as 0/1), so the
 * same statements give the same rows on SQLite and PostgreSQL.
 */
export function rowReader<T extends Table>(table: T): (raw: Record<string, unknown>) => T['$inferSelect'];
/** The same for a statement that selects only the columns of `only` (`columnsOf` names them). */
export function rowReader<T extends Table, K extends keyof T['$inferSelect']>(
  table: T,
  only: readonly K[],
): (raw: Record<string, unknown>) => Pick<T['$inferSelect'], K>;
export function rowReader<T extends Table>(table: T, only?: readonly string[]): (raw: Record<string, unknown>) => Record<string, unknown> {
  const columns = Object.entries(getTableColumns(table))
    .filter(([key]) => !only || only.includes(key))
    .map(([key, column]) => ({ key, name: column.name, column }));
  return (raw) => {
    const row: Record<string, unknown> = {};
    for (const { key, name, column } of columns) {
      const value = raw[name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row;
  };
}

/** The column names of the fields `only` of `table`, for a SELECT list (`alias.` before each when given). */
export function columnsOf<T extends Table>(table: T, only: ReadonlyArray<keyof T['$inferSelect']>, alias = ''): string {
  const columns = getTableColumns(table) as Record<string, { name: string }>;
  return only.map((key) => `${alias}${columns[key as string].name}`).join(', ');
}
