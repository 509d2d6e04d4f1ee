import { getTableColumns, type Table } from 'drizzle-orm';

/**
 * Turns a row as the database answers `SELECT *` (column names, driver values) into the table's
 * typed row, decoding each column as the schema says (JSON text, booleans stored as 0/1), so the
 * same statements give the same rows on SQLite and PostgreSQL.
 */
export function rowReader<T extends Table>(table: T): (raw: Record<string, unknown>) => T['$inferSelect'] {
  const columns = Object.entries(getTableColumns(table)).map(([key, column]) => ({ key, name: column.name, column }));
  return (raw) => {
    const row: Record<string, unknown> = {};
    for (const { key, name, column } of columns) {
      const value = raw[name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row;
  };
}
