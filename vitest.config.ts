import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The tests that start processes (crash and restart drills, several instances, real agents, the
 * sandbox, `npm pack`), wait out leases and timeouts, or need PostgreSQL: `npm test` runs them,
 * `npm run test:fast` (the `fast` project: unit tests and the service in-process against the
 * scripted model) leaves them out and takes well under a minute.
 */
const SLOW = [
  'test/apply-crash.test.ts',
  'test/console.test.ts',
  'test/crash-recovery.test.ts',
  'test/background-crash.test.ts',
  'test/candidates-crash.test.ts',
  'test/resume.test.ts',
  'test/approvals-restart.test.ts',
  'test/approvals-interrupted.test.ts',
  'test/package.test.ts',
  'test/acp.test.ts',
  'test/acp-opencode.test.ts',
  'test/mcp-opencode.test.ts',
  'test/mcp-client.test.ts',
  'test/network.test.ts',
  'test/postgres-driver.test.ts',
  'test/sandbox.test.ts',
  'test/container-sandbox.test.ts',
  'test/security.test.ts',
  'test/liveness.test.ts',
  'test/client.test.ts',
  'test/readme-examples.test.ts',
  'test/workspace-disk-full.test.ts',
];

/**
 * Each starts a PostgreSQL cluster of its own and two or three service processes, then kills,
 * pauses or restarts them against leases and retry windows: run one at a time, so that on two
 * cores one drill's processes do not starve another's past its lease.
 */
const OWN_CLUSTERS = [
  'test/cluster.test.ts',
  'test/deposed-owner.test.ts',
  'test/approvals-takeover.test.ts',
  'test/background-takeover.test.ts',
  'test/postgres-outage.test.ts',
  'test/postgres-restart.test.ts',
  'test/postgres-start-wait.test.ts',
];

/** Fast, but they look at what the process has loaded: a module graph of their own. */
const OWN_MODULES = ['test/service.test.ts'];

const shared = {
  testTimeout: 20_000,
  hookTimeout: 20_000,
  pool: 'forks' as const,
  // TEST_DATABASE=postgres: a throwaway PostgreSQL cluster for the run (test/support/global-setup.ts).
  globalSetup: ['test/support/global-setup.ts'],
};

export default defineConfig({
  // The examples import the client as a user would; here it is the source.
  resolve: { alias: { '@subagentd/client': fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) } },
  test: {
    // Vitest's default is one worker less than the cores (1 on a 2-core machine); most of a test's
    // time is spent waiting on sockets and timers, so three keep two cores busy.
    maxWorkers: 3,
    projects: [
      // One module graph per worker (the app's imports cost more than most of these tests): they
      // share no state but what each test starts and closes itself.
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...SLOW, ...OWN_CLUSTERS, ...OWN_MODULES],
          isolate: false,
          ...shared,
        },
      },
      { extends: true, test: { name: 'fast-isolated', include: OWN_MODULES, ...shared } },
      // Process starts take seconds each on a busy machine: a budget, not a timing assertion.
      { extends: true, test: { name: 'slow', include: SLOW, ...shared, testTimeout: 60_000, hookTimeout: 60_000 } },
      { extends: true, test: { name: 'clusters', include: OWN_CLUSTERS, ...shared, testTimeout: 90_000, hookTimeout: 60_000, maxWorkers: 1 } },
    ],
  },
});
