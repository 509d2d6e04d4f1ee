import { defineConfig } from 'drizzle-kit';

/** PostgreSQL's migrations (`npx drizzle-kit generate --config drizzle.pg.config.ts --name X`). */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/schema-pg.ts',
  out: './migrations-pg',
});
