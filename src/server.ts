import { createApp } from './app.ts';
import { createLogger } from './logging/logger.ts';
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { type Config, ConfigError, loadConfig, loadDotEnv } from './config/config.ts';
import { closeDatabase, DatabaseInUseError, DatabaseNotWritableError, idleInTransactionFor, openDatabase, retryWindowFor, type Db } from './store/database.ts';
import { storageFaultOf } from './store/storage-guard.ts';
import { boundHeapGrowth } from './util/heap-growth.ts';

/** Exit code when another process already runs on the database. */
const EXIT_DATABASE_IN_USE = 3;

/** How long running tasks get to finish on SIGTERM before they are aborted as `interrupted`. */
const SHUTDOWN_GRACE_MS = 5_000;
/** Past this the process exits whatever is still pending. */
const SHUTDOWN_HARD_LIMIT_MS = 15_000;

/** The longest pause between two tries at a database that does not answer yet. */
const DATABASE_RETRY_MAX_MS = 5_000;

/** The database did not answer within DATABASE_START_TIMEOUT_MS. */
class DatabaseUnreachableError extends Error {}

/**
 * Until the app listens: every request is answered `503` with Retry-After (`/healthz` with
 * `starting`), so a load balancer or an orchestrator's client sees an instance on its way up, not
 * a refused connection it might take for a dead one.
 */
async function listenWhileStarting(config: Config, why: string): Promise<Server> {
  const server = createServer((req, res) => {
    const health = req.url?.split('?')[0] === '/healthz';
    const code = health ? 'starting' : 'storage_unavailable';
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '2' });
    res.end(JSON.stringify({ error: { code, message: `the service is starting: ${why}; retry shortly` } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: config.port, host: config.host, backlog: 4096 }, resolve);
  });
  return server;
}

/**
 * Opens the database; a PostgreSQL server that does not answer yet (restarting, or starting beside
 * this process) is tried again with backoff for up to DATABASE_START_TIMEOUT_MS, each try logged,
 * while the port answers 503. Anything else (a wrong password, a database that does not exist, one
 * in use) fails at once.
 */
async function openWhenUp(config: Config, logger: Logger): Promise<{ db: Db; placeholder: Server | null }> {
  const location = config.databaseUrl ?? config.databasePath;
  const open = () =>
    openDatabase(location, config.instanceId, {
      idleInTransactionMs: idleInTransactionFor(config.taskLeaseMs),
      retryWindowMs: retryWindowFor(config.taskLeaseMs),
    });
  const deadline = Date.now() + config.databaseStartTimeoutMs;
  let placeholder: Server | null = null;
  for (let attempt = 1; ; attempt++) {
    try {
      return { db: await open(), placeholder };
    } catch (err) {
      if (!config.databaseUrl || storageFaultOf(err) !== 'storage_unavailable') {
        placeholder?.close();
        throw err;
      }
      // Only with DATABASE_URL: the PostgreSQL driver stays unloaded on SQLite.
      const { redactUrl } = await import('./store/postgres.ts');
      const why = (err as { code?: string }).code ?? (err as Error).message;
      const left = deadline - Date.now();
      if (left <= 0) {
        placeholder?.close();
        const waited = config.databaseStartTimeoutMs > 0 ? `within DATABASE_START_TIMEOUT_MS (${config.databaseStartTimeoutMs} ms)` : 'at once';
        throw new DatabaseUnreachableError(`the database ${redactUrl(config.databaseUrl)} did not answer ${waited}: ${why}`);
      }
      const pause = Math.min(left, DATABASE_RETRY_MAX_MS, 250 * 2 ** Math.min(attempt - 1, 5));
      logger.warn({ database: redactUrl(config.databaseUrl), attempt, error: why, retryInMs: pause }, 'the database does not answer yet; trying again');
      placeholder ??= await listenWhileStarting(config, 'waiting for the database');
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

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
  const heapGrowth = boundHeapGrowth(config.heapGrowingPercent);
  let db;
  let placeholder;
  try {
    ({ db, placeholder } = await openWhenUp(config, logger));
  } catch (err) {
    if (err instanceof DatabaseInUseError || err instanceof DatabaseNotWritableError || err instanceof DatabaseUnreachableError) {
      console.error(`subagentd: ${err.message}`);
      process.exit(err instanceof DatabaseInUseError ? EXIT_DATABASE_IN_USE : 1);
    }
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      console.error(`subagentd: ${config.host}:${config.port} is already in use; set PORT (or HOST) to a free one`);
      process.exit(1);
    }
    throw err;
  }
  const app = await createApp({ config, db, logger });
  // The port passes from the placeholder to the app: connections kept alive to it are closed.
  if (placeholder) {
    placeholder.closeAllConnections();
    await new Promise((r) => placeholder.close(r));
  }
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
      heapGrowth,
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
