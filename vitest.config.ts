import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The examples import the client as a user would; here it is the source.
  resolve: { alias: { '@subagentd/client': fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // TEST_DATABASE=postgres: a throwaway PostgreSQL cluster for the run (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
  },
});
