import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { startTestPostgres, type TestPostgres } from './postgres';

/**
 * With TEST_DATABASE=postgres, the whole suite runs on PostgreSQL: one throwaway cluster for the
 * run, and a database of its own for every service a test starts (test/support/harness.ts).
 */
let cluster: TestPostgres | undefined;

export async function setup({ provide }: { provide: (key: string, value: string) => void }) {
  // The console's bundle, which GET /ui serves (test/console.test.ts drives it in a browser).
  execFileSync(process.execPath, [path.resolve(import.meta.dirname, '../../scripts/build-ui.mjs')], { stdio: 'ignore' });
  if (process.env.TEST_DATABASE !== 'postgres') return;
  cluster = await startTestPostgres();
  process.env.TEST_POSTGRES_URL = cluster.url;
  provide('postgresUrl', cluster.url);
}

export async function teardown() {
  await cluster?.stop();
}
