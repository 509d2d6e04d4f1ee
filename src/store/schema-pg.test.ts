import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import * as pgSchema from './schema-pg.ts';
import * as sqliteSchema from './schema.ts';

const tablesOf = (mod: Record<string, unknown>) =>
  Object.fromEntries(
    Object.values(mod)
      .filter((v): v is Table => typeof v === 'object' && v !== null && Symbol.for('drizzle:Name') in v)
      .map((t) => [
        getTableName(t),
        Object.entries(getTableColumns(t))
          .map(([key, c]) => `${key}:${c.name}:${c.notNull}`)
          .sort(),
      ]),
  );

describe('the PostgreSQL schema', () => {
  it('has the tables and columns of the SQLite schema, one for one (the stores share their statements and row decoding)', () => {
    const pg = tablesOf(pgSchema);
    expect(Object.keys(pg).length).toBeGreaterThan(5);
    expect(pg).toEqual(tablesOf(sqliteSchema));
  });
});
