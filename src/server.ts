import { createApp } from './app.ts';
import { ConfigError, loadConfig, loadDotEnv } from './config/config.ts';
import { createLogger } from './logging/logger.ts';
import { closeDatabase, DatabaseInUseError, DatabaseNotWritableError, idleInTransactionFor, openDatabase } from './store/database.ts';

/** Exit code when another process already runs on the database. */
const EXIT_DATABASE_IN_USE = 3;

/** How long running tasks get to finish on SIGTERM before they are aborted as `interrupted`. */
const SHUTDOWN_GRACE_MS = 5_000;
/** Past this the process exits whatever is still pending. */
const SHUTDOWN_HARD_LIMIT_MS = 15_000;

/** The process: config → store → app → listen → graceful close on SIGTERM/SIGINT. */
async function main() {
  loadDotEnv();
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`subagentd: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  let db;
  try {
    db = await openDatabase(config.databaseUrl ?? config.databasePath, config.instanceId, { idleInTransactionMs: idleInTransactionFor(config.taskLeaseMs) });
  } catch (err) {
    if (err instanceof DatabaseInUseError || err instanceof DatabaseNotWritableError) {
      console.error(`subagentd: ${err.message}`);
      process.exit(err instanceof DatabaseInUseError ? EXIT_DATABASE_IN_USE : 1);
    }
    throw err;
  }
  const app = await createApp({ config, db, logger });
  // A deep accept queue: an orchestrator fanning out hundreds of subagents connects all at once,
  // and Node's default backlog (511) drops SYNs past it, costing clients 1-7 s in retransmits.
  try {
    await app.server.listen({ port: config.port, host: config.host, backlog: 4096 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    console.error(
      code === 'EADDRINUSE'
        ? `subagentd: ${config.host}:${config.port} is already in use; set PORT (or HOST) to a free one`
        : `subagentd: cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`,
    );
    await app.server.close().catch(() => {});
    await closeDatabase(db);
    process.exit(1);
  }
  // Only once the service is reachable: a failed start leaves every task as it was.
  await app.recover();
  logger.info(
    {
      database: db.location,
      workspaces: config.workspacesDir,
      provider: config.openaiBaseUrl ?? 'https://api.openai.com/v1',
      api: config.openaiApi,
      defaultModel: config.defaultModel,
      keyConfigured: Boolean(config.openaiApiKey),
    },
    'subagentd ready',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_HARD_LIMIT_MS).unref();
    await app.tasks.close(SHUTDOWN_GRACE_MS);
    await app.server.close();
    await closeDatabase(db);
    logger.info('bye');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error('subagentd failed to start:', err);
  process.exit(1);
});
