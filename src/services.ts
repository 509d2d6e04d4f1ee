import { createAccessStore, type AccessStore } from './store/access-store.ts';
import { createLifecycleStore } from './store/lifecycle-store.ts';
import { createLifecycleSystem, type LifecycleSystem } from './tasks/systems/lifecycle-system.ts';
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config/config.ts';
import { builtinAgents, createAgentRegistry, type AgentRegistry } from './definitions/agent-registry.ts';
import { loadAgentFiles } from './definitions/load-agent-files.ts';
import { hasUrlHooks } from './hooks/hook-spec.ts';
import { createSkillRegistry, loadSkills, unknownSkills, type SkillRegistry } from './definitions/skills.ts';
import { createEventLog, type EventLog } from './events/event-log.ts';
import { createLogger } from './logging/logger.ts';
import { createModelProvider, type ModelProvider } from './loop/model-provider.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { loadPriceTable } from './money/prices.ts';
import { checkModelIds, startupWarnings } from './startup-warnings.ts';
import { createBudgets, type Budgets } from './money/budgets.ts';
import { pushPayload } from './a2a/mapping.ts';
import { toTaskOutput } from './tasks/writes/task-output.ts';
import { createDispatcher } from './webhooks/dispatcher.ts';
import { createWebhooks, webhookOutbox, type Webhooks } from './webhooks/webhooks.ts';
import { createReplayStore } from './store/replay-store.ts';
import { scrubDatabase, type Db } from './store/database.ts';
import { createSqlReader } from './store/read-worker.ts';
import { createStorageGuard, type StorageGuard } from './store/storage-guard.ts';
import { createTaskStore, type TaskStore } from './store/task-store.ts';
import { CHANNELS, createClusterStore } from './store/cluster-store.ts';
import { createUsageStore, type UsageStore } from './store/usage-store.ts';
import { createTaskRunner } from './tasks/run/task-runner.ts';
import { createLiveness } from './tasks/run/liveness.ts';
import { createTracing } from './telemetry/tracing.ts';
import { createTaskService, type TaskService } from './tasks/task-service.ts';
import type { Sandbox } from './sandbox/sandbox.ts';
import { sandboxFor } from './sandbox/sandbox-for.ts';
import { workspaceLayout, type WorkspacesDirOf } from './workspace/workspace.ts';
import { createReadOns } from './loop/model-guard.ts';
import { sharedSlices, type SliceLane } from './util/turns.ts';

export interface ServiceDeps {
  config: Config;
  db: Db;
  /** Defaults to the OpenAI-compatible provider of the config. */
  modelProvider?: ModelProvider;
  /** Defaults to the built-ins overridden by the valid `AGENTS_DIR/*.md` files. */
  agents?: AgentRegistry;
  logger?: Logger;
  now?: () => number;
  /** Defaults to the sandbox BASH_SANDBOX asks for, hiding the service's own folders. */
  sandbox?: Sandbox;
  /** The variables an ACP definition's `env` names are taken from; defaults to the process's. */
  serviceEnv?: Record<string, string | undefined>;
}

/** Everything the service does, without HTTP: what the routes (and tests) call. */
export interface Services {
  config: Config;
  logger: Logger;
  registry: AgentRegistry;
  /** The skills of SKILLS_DIR. */
  skills: SkillRegistry;
  metrics: Metrics;
  storage: StorageGuard;
  store: TaskStore;
  usage: UsageStore;
  events: EventLog;
  tasks: TaskService;
  workspacesDirOf: WorkspacesDirOf;
  budgets: Budgets;
  webhooks: Webhooks;
  /** Keys made with POST /keys, and the audit log. */
  access: AccessStore;
  /** Purges, erasures and the retention sweep. */
  lifecycle: LifecycleSystem;
  /**
   * The event loop's slice (`LOOP_SLICE_MS`) that requests, model answers, the write queue's
   * writes and the tasks' starts take turns of: a fan-out's thousand submits or answers do not hold
   * the loop for hundreds of milliseconds, no kind holds back the others, and one turn of the loop
   * holds one slice of them all.
   */
  slices: { requests: SliceLane; answers: SliceLane; writes: SliceLane; starts: SliceLane; readonly waiting: number };
  /** Ends or re-queues what a previous process left unfinished; the process calls it once it listens. */
  /** True once `recover` has run: `/healthz` answers 503 `starting` before. */
  readonly recovered: boolean;
  recover(): Promise<{ interrupted: number; requeued: number; resumed: number }>;
  /** Ends running tasks (as `interrupted`), writes what is pending, stops the reader thread. */
  close(): Promise<void>;
}

/** The tasks whose events another instance than `self` announced (none for anything else sent on the channel). */
function announcedElsewhere(payload: string, self: string): string[] {
  try {
    const list = JSON.parse(payload) as Array<{ i?: unknown; t?: unknown }>;
    return Array.isArray(list) ? list.filter((a) => typeof a.t === 'string' && a.i !== self).map((a) => a.t as string) : [];
  } catch {
    return [];
  }
}

/** The built-in definitions, overridden by type by the valid `AGENTS_DIR/*.md` files. */
function loadRegistry(config: Config, logger: Logger): AgentRegistry {
  const names = { defaultModel: config.defaultModel, smallModel: config.smallModel };
  const loaded = loadAgentFiles(config.agentsDir, names);
  // A definition whose hooks cannot be run must not run without them: the start stops, naming it.
  const broken = loaded.errors.filter((e) => e.field === 'hooks' || e.field.startsWith('hooks.'));
  const unsigned = config.hookSecret ? [] : loaded.definitions.filter((d) => hasUrlHooks(d.hooks));
  if (broken.length > 0 || unsigned.length > 0) {
    throw new Error(
      [
        ...broken.map((e) => `subagent definition ${e.name ? `"${e.name}" ` : ''}(${e.file}): ${e.field}: ${e.message}`),
        ...unsigned.map((d) => `subagent definition "${d.type}": its URL hooks are signed with HOOK_SECRET, which is not set`),
      ].join('; '),
    );
  }
  for (const e of loaded.errors) logger.error(e, `skipped subagent definition ${e.file}: ${e.field}: ${e.message}`);
  if (loaded.definitions.length > 0) {
    logger.info({ types: loaded.definitions.map((d) => d.type), dir: config.agentsDir }, 'loaded subagent definitions');
  }
  return createAgentRegistry([...builtinAgents(names), ...loaded.definitions]);
}

/** The provider of the models the config names: OpenAI, Anthropic and Google connections, and PROVIDERS. */
function configuredModelProvider(config: Config, metrics: Metrics, slices: SliceLane): ModelProvider {
  return createModelProvider({
    connections: {
      openai: { type: 'openai', apiKey: config.openaiApiKey, baseURL: config.openaiBaseUrl, api: config.openaiApi },
      anthropic: { type: 'anthropic', apiKey: config.anthropicApiKey, baseURL: config.anthropicBaseUrl },
      google: { type: 'google', apiKey: config.googleApiKey, baseURL: config.googleBaseUrl },
      ...config.providers,
    },
    defaultProvider: config.defaultProvider,
    stallTimeoutMs: config.modelStallTimeoutMs,
    onHttpError: (status) => metrics.providerHttpError(status),
    slices,
  });
}

/** What the runner takes from the config: its limits, and the provider keys no task may see. */
function runnerSettings(config: Config) {
  return {
    limits: {
      bashTimeoutMs: config.bashTimeoutMs,
      bashMaxOutputBytes: config.bashMaxOutputBytes,
      modelMaxRetries: config.modelMaxRetries,
      modelStallTimeoutMs: config.modelStallTimeoutMs,
    },
    approvalTimeoutMs: config.approvalTimeoutMs,
    egress: config.egress,
    hooks: { secret: config.hookSecret, allowPrivate: config.webhooks.allowPrivate },
    promptCacheKey: config.promptCacheKey,
    secrets: [config.openaiApiKey, config.anthropicApiKey, config.googleApiKey, ...Object.values(config.providers).map((p) => p.apiKey)].filter(
      (k) => k !== undefined,
    ),
  };
}

/** What the task service takes from the config: its queue and slots, timeouts, recovery. */
function taskServiceSettings(config: Config) {
  return {
    maxConcurrent: config.maxConcurrentTasks,
    maxQueued: config.maxQueuedTasks,
    maxConcurrentPerTenant: config.maxConcurrentPerTenant,
    maxQueuedPerTenant: config.maxQueuedPerTenant,
    taskTimeoutMs: config.taskTimeoutMs,
    recovery: { mode: config.recoveryMode, maxResumes: config.maxResumes },
    pausedTtlMs: config.pausedTtlMs,
    worktreeTtlMs: config.worktreeTtlMs,
  };
}

/** What the lifecycle system takes from the config: retention, and where the workspaces are. */
function lifecycleSettings(config: Config) {
  return {
    retentionDays: config.retentionDays,
    workspaceRetentionDays: config.workspaceRetentionDays,
    memoryRetentionDays: config.memoryRetentionDays,
    workspacesDir: config.workspacesDir,
    multiTenant: config.apiKeys !== null,
  };
}

/**
 * PostgreSQL: what the other instances say reaches this one. A wake-up pumps the queue, a control
 * message reaches the task it names, an event announcement the readers here (and the tasks it
 * changed); after the listening connection was lost, everything catches up from the tables.
 */
function followCluster(db: Db, instanceId: string, events: EventLog, tasks: TaskService): void {
  db.cluster?.onNotification((channel, payload) => {
    // This instance's own wake-ups: it pumped already.
    if (channel === CHANNELS.wake) {
      if (payload !== instanceId) tasks.wake();
    } else if (channel === CHANNELS.control) tasks.control(payload);
    else if (channel === CHANNELS.events) {
      events.announced(payload);
      for (const id of announcedElsewhere(payload, instanceId)) void tasks.changedElsewhere(id).catch(() => undefined);
    }
  });
  db.cluster?.onReconnect(() => {
    events.caughtUp();
    tasks.wake();
    void tasks.changedElsewhere().catch(() => undefined);
  });
}

/**
 * The valid skills of SKILLS_DIR (a broken one is logged and skipped); a definition naming a skill
 * that is not among them stops the start, naming it.
 */
function loadSkillRegistry(config: Config, registry: AgentRegistry, logger: Logger): SkillRegistry {
  const loaded = loadSkills(config.skillsDir);
  for (const e of loaded.errors) logger.error(e, `skipped skill ${e.dir}: ${e.message}`);
  if (loaded.skills.length > 0) logger.info({ skills: loaded.skills.map((s) => s.name), dir: config.skillsDir }, 'loaded skills');
  const skills = createSkillRegistry(loaded.skills);
  const problems = unknownSkills(registry.list(), skills, config.skillsDir);
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return skills;
}

/**
 * Builds the services from explicit dependencies: stores over `db`, the event log, the runner and
 * the task service. No module-level state, so tests may build as many as they like.
 */
export function createServices(deps: ServiceDeps): Services {
  const { config, db } = deps;
  const now = deps.now ?? Date.now;
  const logger = deps.logger ?? createLogger(config.logLevel);
  const registry = deps.agents ?? loadRegistry(config, logger);
  const skills = loadSkillRegistry(config, registry, logger);
  const metrics = createMetrics({ defaultMetrics: true });
  // Four lanes share each turn's slice: requests, model answers (their starts and reads), the
  // write queue's writes, and the tasks' starts.
  const loop = sharedSlices(config.loopSliceMs, 4);
  const slices = {
    requests: loop.lane(0),
    answers: loop.lane(1),
    writes: loop.lane(2),
    starts: loop.lane(3),
    get waiting() {
      return loop.waiting;
    },
  };
  const modelProvider = deps.modelProvider ?? configuredModelProvider(config, metrics, slices.answers);
  // A model id naming an unknown provider stops the start, naming it.
  checkModelIds(config, registry, modelProvider);
  const prices = loadPriceTable(config.pricesFile);
  const budgets = createBudgets(db.sql);
  const workspacesDirOf = workspaceLayout(config.workspacesDir, config.apiKeys !== null);
  const sandbox = deps.sandbox ?? sandboxFor(config, logger);

  // The database: its writes held through a full disk or an outage, its stores.
  const storage = createStorageGuard({
    probe: () => db.probe(),
    onFault: (fault, err) => {
      logger.error({ fault, err }, 'the database cannot be written: new tasks are refused, running ones stopped; retrying every second');
      tasks.storageFailed(fault);
    },
    onRecover: () => {
      logger.warn('the database can be written again: admitting tasks');
      tasks.storageRecovered();
    },
    // LOOP_SLICE_MS=0 takes the shared slice away; the writes then keep a slice of their own.
    ...(config.loopSliceMs > 0 && { slice: slices.writes }),
  });
  metrics.watchDatabase(() => db.sql.counts);
  metrics.watchStorage(() => ({ writable: storage.fault === null, waiting: storage.waiting }));
  // PostgreSQL: a statement waiting for the server to come back makes the service say so at once.
  db.cluster?.onRetrying((err) => storage.report(err));
  const store = createTaskStore(db.sql);
  const reader = createSqlReader(db);
  const usage = createUsageStore(db.dialect, reader);
  // PostgreSQL: the instances sharing the database share its tasks (cluster-store.ts).
  const cluster = db.cluster ? createClusterStore(db.sql, db.cluster.instanceId) : null;

  // Events, and the webhooks they go out as: outbox rows are written in the events' own
  // transaction; the dispatcher is woken after it commits. A2A push configs share the outbox;
  // their payload is the A2A status of the task.
  const webhooks = createWebhooks(db.sql, (row, _event, version) => pushPayload(toTaskOutput(row), version), Boolean(db.cluster));
  const dispatcher = createDispatcher({ store: webhooks, logger, now, ...config.webhooks });
  const events = createEventLog(db.sql, {
    now,
    storage,
    outbox: webhookOutbox(webhooks, () => dispatcher.poke()),
    ...(db.cluster && { cluster: { instanceId: db.cluster.instanceId } }),
  });

  // Running tasks, and the task service over them.
  const liveness = createLiveness(now);
  const tracing = createTracing();
  const readOns = createReadOns();
  const runner = createTaskRunner({
    readOns,
    ...runnerSettings(config),
    liveness,
    tracing,
    store,
    events,
    registry,
    modelProvider,
    metrics,
    logger,
    now,
    workspacesDirOf,
    skills,
    memoryMaxBytes: config.memoryMaxBytes,
    serviceEnv: deps.serviceEnv ?? process.env,
    prices,
    budgets,
    sandbox,
    storage,
    instanceId: cluster?.instanceId ?? null,
    // Bound to the task service made just below: the `task` tool starts children through it.
    children: {
      start: (parent, body, how) => tasks.children.start(parent, body, how),
      ended: (id) => tasks.children.ended(id),
      cancel: (tenant, id, why) => tasks.children.cancel(tenant, id, why),
      steer: (tenant, id, message) => tasks.children.steer(tenant, id, message),
      resume: (tenant, id) => tasks.children.resume(tenant, id),
      waiting: (id, on) => tasks.children.waiting(id, on),
    },
  });
  const tasks = createTaskService({
    ...taskServiceSettings(config),
    readOns,
    liveness,
    store,
    replays: createReplayStore(db.sql),
    events,
    registry,
    models: modelProvider,
    runner,
    metrics,
    logger,
    now,
    workspacesDirOf,
    budgets,
    storage,
    ...(config.loopSliceMs > 0 && { startSlice: slices.starts }),
    ...(cluster && { cluster: { store: cluster, leaseMs: config.taskLeaseMs } }),
  });
  metrics.watchQueue(() => tasks.depth());
  if (cluster) followCluster(db, cluster.instanceId, events, tasks);

  // Keys and the audit log; purges, erasures and the retention sweep.
  const access = createAccessStore(db.sql);
  const lifecycle = createLifecycleSystem({
    ...lifecycleSettings(config),
    lifecycle: createLifecycleStore(db.sql),
    get: (tenant, id) => tasks.get(tenant, id),
    metrics,
    storage,
    logger,
    now,
    scrub: () => scrubDatabase(db),
  });

  let recoveredAll = false;
  if (!config.apiKeys) logger.warn('API_KEYS is not set: authentication is off and every caller shares one tenant');
  for (const w of startupWarnings(config, registry, prices, Date.now(), modelProvider)) logger.warn(w.fields, w.message);
  return {
    config,
    logger,
    registry,
    skills,
    metrics,
    storage,
    store,
    usage,
    events,
    tasks,
    workspacesDirOf,
    budgets,
    webhooks,
    access,
    lifecycle,
    slices,
    get recovered() {
      return recoveredAll;
    },
    async recover() {
      // SANDBOX=container: the engine answers, and the containers a killed run of this instance left are gone.
      await sandbox.prepare?.();
      const recovered = await tasks.recover();
      recoveredAll = true;
      dispatcher.start();
      lifecycle.start();
      if (recovered.interrupted + recovered.requeued + recovered.resumed > 0) logger.warn(recovered, 'recovered unfinished tasks');
      return recovered;
    },
    async close() {
      await lifecycle.close();
      await tasks.close();
      await events.flush().catch((err) => logger.error({ err }, 'could not write the last events'));
      await dispatcher.close();
      await tracing.shutdown();
      await reader.close();
      storage.close();
      sandbox.limiter?.close();
      await sandbox.close?.();
    },
  };
}
