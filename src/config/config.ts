import { KEY_ROLES, type KeyGrant, type KeyRole } from '../shapes/access.ts';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { z } from 'zod';

const intFrom = (def: number, min = 1) => z.coerce.number().int().min(min).default(def);

/** A provider's name, as a model id's prefix (`<provider>:<model>`). */
const PROVIDER_NAME = /^[a-z][a-z0-9-]*$/;

/**
 * The kinds of connection a provider name can stand for (`PROVIDERS`' `type`): one file each in
 * loop/providers/, named in model-provider.ts's KITS (the type checker asks for each one here).
 */
export const PROVIDER_TYPES = ['openai', 'openai-compatible', 'anthropic', 'google'] as const;

/** `PROVIDERS`: named connections beside the built-in `openai`, `anthropic` and `google`. */
const providersSchema = z.record(
  z.string().regex(PROVIDER_NAME, 'a provider name is a-z, 0-9 and "-", starting with a letter'),
  z.strictObject({
    type: z.enum(PROVIDER_TYPES),
    baseURL: z.url({ protocol: /^https?$/ }),
    // The variable holding its key (the key itself never sits in PROVIDERS).
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
    api: z.enum(['chat', 'responses']).optional(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
);

/**
 * An image reference as Docker reads one (`[registry/]name[:tag][@digest]`, lower-case name):
 * SANDBOX_IMAGE and a definition's `image`.
 */
export const imageRefSchema = z
  .string()
  .max(255)
  .regex(
    /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/,
    'must be an image reference such as debian:bookworm or registry.example.com/tools/python:3.12',
  );

/** The environment, validated once at boot. Every key is documented in `.env.example`. */
export const configSchema = z.object({
  PORT: intFrom(8787, 0).pipe(z.number().max(65535)),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_PATH: z.string().min(1).default('./data/subagentd.db'),
  // Set, it selects PostgreSQL (and DATABASE_PATH is not used): several instances may share it.
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/i, { error: 'must be a PostgreSQL URL such as postgres://user:password@host:5432/subagentd' })
    .optional(),
  // PostgreSQL: this instance's name among those sharing the database (default host:PORT). One
  // process per id; a restarted instance takes its own running tasks back at once.
  INSTANCE_ID: z.string().min(1).max(200).optional(),
  // PostgreSQL: how long a starting instance waits for a database that does not answer yet (0: not at all).
  DATABASE_START_TIMEOUT_MS: intFrom(60_000, 0),
  // PostgreSQL: how long an instance's claim on a running task holds unless renewed (every third of it).
  TASK_LEASE_MS: intFrom(30_000, 300),
  WORKSPACES_DIR: z.string().min(1).default('./data/workspaces'),
  AGENTS_DIR: z.string().min(1).default('./agents'),
  // Agent Skills: one folder per skill, each with its SKILL.md (definitions' `skills` name them).
  SKILLS_DIR: z.string().min(1).default('./skills'),
  // A memory folder (a definition's `memory`) holds at most this many bytes; a write past it is refused.
  MEMORY_MAX_BYTES: intFrom(10 * 1024 * 1024, 1024),
  OPENAI_API_KEY: z.string().min(1).optional(),
  // `localhost:11434/v1` parses as a URL with the scheme "localhost:": only http(s) is a provider.
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://localhost:11434/v1' }).optional(),
  OPENAI_API: z.enum(['chat', 'responses']).default('chat'),
  // Every request of a session carries its sessionId as prompt_cache_key (the provider's prompt cache).
  PROMPT_CACHE_KEY: z.enum(['on', 'off']).default('on'),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.anthropic.com/v1' }).optional(),
  GOOGLE_GENERATIVE_AI_API_KEY: z.string().min(1).optional(),
  GOOGLE_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://generativelanguage.googleapis.com/v1beta' }).optional(),
  // The provider of a model id without a `provider:` prefix.
  DEFAULT_PROVIDER: z.string().regex(PROVIDER_NAME, 'a provider name: a-z, 0-9 and "-", starting with a letter').default('openai'),
  // Named connections: { "<name>": { type, baseURL, apiKeyEnv?, api?, headers? } }.
  PROVIDERS: z
    .string()
    .transform((raw, ctx) => {
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be JSON: { "<name>": { "type": "openai-compatible", "baseURL": "..." } }' });
        return z.NEVER;
      }
    })
    .pipe(providersSchema)
    .optional(),
  DEFAULT_MODEL: z.string().min(1).default('gpt-4.1-mini'),
  SMALL_MODEL: z.string().min(1).optional(),
  API_KEYS: z.string().optional(),
  METRICS_TOKEN: z.string().optional(),
  HEARTBEAT_MS: intFrom(15_000, 10),
  WS_PING_MS: intFrom(30_000, 10),
  WS_MAX_BUFFERED_BYTES: intFrom(8 * 1024 * 1024, 1024),
  MAX_CONCURRENT_TASKS: intFrom(8),
  MAX_QUEUED_TASKS: intFrom(1000),
  MAX_CONCURRENT_PER_TENANT: z.coerce.number().int().min(1).optional(),
  MAX_QUEUED_PER_TENANT: intFrom(250),
  TASK_TIMEOUT_MS: intFrom(900_000, 100),
  PRICES_FILE: z.string().min(1).optional(),
  WEBHOOK_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  EGRESS_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  EGRESS_MAX_CONNECTIONS: intFrom(32, 1),
  EGRESS_MAX_BYTES: intFrom(1024 ** 3, 1024),
  WEBHOOK_RETRY_BASE_MS: intFrom(5_000, 10),
  WEBHOOK_TIMEOUT_MS: intFrom(10_000, 100),
  WEBHOOK_GIVE_UP_MS: intFrom(3 * 86_400_000, 1000),
  WEBHOOK_DISABLE_AFTER_MS: intFrom(5 * 86_400_000, 1000),
  MAX_WEBHOOKS_PER_TENANT: intFrom(16, 1),
  // The Standard Webhooks secret (whsec_<base64>) that signs what URL hooks of definitions are sent.
  HOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]{24,}={0,2}$/, 'must be a Standard Webhooks secret: whsec_ then at least 18 bytes in base64')
    .optional(),
  // /mcp sessions: at most so many on an instance (503 past it), per tenant and per key (429: one
  // tenant cannot take them all), each ended after so long without a request.
  MCP_MAX_SESSIONS: intFrom(1000),
  MCP_SESSIONS_PER_TENANT: intFrom(100),
  MCP_SESSIONS_PER_KEY: intFrom(50),
  MCP_SESSION_IDLE_MS: intFrom(30 * 60_000, 1000),
  PAUSED_TTL_MS: intFrom(24 * 3600_000, 1000),
  /** An approval a task waits for is denied after this (a task's options.approvalTimeoutMs overrides it). */
  APPROVAL_TIMEOUT_MS: intFrom(24 * 3600_000, 1000),
  WORKTREE_TTL_MS: intFrom(24 * 3600_000, 1000),
  RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  WORKSPACE_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  MEMORY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  RECOVERY_MODE: z.enum(['resume', 'interrupt']).default('resume'),
  MAX_RESUMES: intFrom(2, 0),
  BASH_SANDBOX: z.enum(['auto', 'bwrap', 'none']).default('auto'),
  // `container`: commands run in a container per task run through the Docker Engine API.
  SANDBOX: z.enum(['bwrap', 'container']).default('bwrap'),
  SANDBOX_IMAGE: imageRefSchema.optional(),
  SANDBOX_CPUS: z.coerce.number().positive().max(1024).optional(),
  // The longest one Docker Engine API call may take: an engine that never answers fails the run's commands.
  SANDBOX_ENGINE_TIMEOUT_MS: intFrom(60_000, 100),
  DOCKER_HOST: z
    .string()
    .regex(/^(unix:\/\/\/.+|tcp:\/\/[^/\s]+:\d{1,5})$/, 'must be unix:///path/to/socket or tcp://host:port')
    .default('unix:///var/run/docker.sock'),
  DOCKER_TLS_VERIFY: z.enum(['0', '1']).optional(),
  DOCKER_CERT_PATH: z.string().min(1).optional(),
  SANDBOX_MAX_PROCESSES: intFrom(256),
  SANDBOX_MAX_FILE_BYTES: intFrom(1024 * 1024 * 1024, 1024),
  SANDBOX_MAX_MEMORY_BYTES: intFrom(1024 * 1024 * 1024, 16 * 1024 * 1024),
  SANDBOX_TMP_BYTES: intFrom(64 * 1024 * 1024, 1024 * 1024),
  BASH_TIMEOUT_MS: intFrom(120_000, 100),
  BASH_MAX_OUTPUT_BYTES: intFrom(30_000, 1000),
  MODEL_MAX_RETRIES: intFrom(2, 0),
  BODY_LIMIT_BYTES: intFrom(1_048_576, 1024),
  MAX_UPLOAD_BYTES: intFrom(100 * 1024 * 1024, 1),
  RATE_LIMIT_PER_MINUTE: intFrom(1200),
  AUTH_FAILURES_PER_MINUTE: intFrom(30),
  REQUEST_TIMEOUT_MS: intFrom(120_000, 100),
  HEADERS_TIMEOUT_MS: intFrom(20_000, 100),
  MAX_EVENT_LOOP_DELAY_MS: intFrom(1000, 0),
  // How long requests and model answers that arrive together may hold the event loop before it takes a turn; 0: no bound.
  LOOP_SLICE_MS: z.coerce.number().int().min(0).max(1000).default(15),
  // How far V8's heap may grow past what a full collection found alive, in percent; 0: V8's own choice.
  HEAP_GROWING_PERCENT: z.coerce
    .number()
    .int()
    .refine((v) => v === 0 || (v >= 10 && v <= 300), 'must be 0 (V8 chooses) or a percent from 10 to 300')
    .default(30),
  MODEL_STALL_TIMEOUT_MS: intFrom(120_000, 100),
  /**
   * Which proxies' X-Forwarded-For to believe for the client's address (rate limits, the
   * auth-failure lockout, logs): `false` (default: the TCP peer is the client), `true` (any),
   * a number of hops (`1`: one proxy in front, as in docker-compose.yml), or a comma-separated
   * list of addresses and CIDR ranges of the proxies.
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .regex(/^(true|false|\d{1,2}|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$/, 'true, false, a number of hops, or addresses/CIDRs separated by commas')
    .default('false')
    .transform((v): boolean | number | string => (v === 'true' ? true : v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v)),
  PUBLIC_URL: z
    .url()
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type ConfigInput = z.input<typeof configSchema>;

export type Config = ReturnType<typeof toConfig>;

function toConfig(env: z.output<typeof configSchema>, raw: Record<string, string | undefined> = {}) {
  return {
    port: env.PORT,
    host: env.HOST,
    databasePath: env.DATABASE_PATH,
    databaseUrl: env.DATABASE_URL ?? null,
    databaseStartTimeoutMs: env.DATABASE_START_TIMEOUT_MS,
    instanceId: env.INSTANCE_ID ?? `${hostname()}:${env.PORT}`,
    taskLeaseMs: env.TASK_LEASE_MS,
    workspacesDir: path.resolve(env.WORKSPACES_DIR),
    agentsDir: path.resolve(env.AGENTS_DIR),
    skillsDir: path.resolve(env.SKILLS_DIR),
    memoryMaxBytes: env.MEMORY_MAX_BYTES,
    openaiApiKey: env.OPENAI_API_KEY,
    openaiBaseUrl: env.OPENAI_BASE_URL,
    openaiApi: env.OPENAI_API,
    promptCacheKey: env.PROMPT_CACHE_KEY === 'on',
    anthropicApiKey: env.ANTHROPIC_API_KEY,
    anthropicBaseUrl: env.ANTHROPIC_BASE_URL,
    googleApiKey: env.GOOGLE_GENERATIVE_AI_API_KEY,
    googleBaseUrl: env.GOOGLE_BASE_URL,
    defaultProvider: env.DEFAULT_PROVIDER,
    /** `PROVIDERS`, each with the key its `apiKeyEnv` names (read once, here). */
    providers: Object.fromEntries(
      Object.entries(env.PROVIDERS ?? {}).map(([name, { apiKeyEnv, ...p }]) => [name, { ...p, apiKeyEnv, apiKey: apiKeyEnv ? raw[apiKeyEnv] : undefined }]),
    ),
    defaultModel: env.DEFAULT_MODEL,
    smallModel: env.SMALL_MODEL ?? env.DEFAULT_MODEL,
    apiKeys: parseApiKeys(env.API_KEYS),
    /** `METRICS_TOKEN`: reads `GET /metrics` only; blank is unset. */
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    heartbeatMs: env.HEARTBEAT_MS,
    wsPingMs: env.WS_PING_MS,
    wsMaxBufferedBytes: env.WS_MAX_BUFFERED_BYTES,
    maxConcurrentTasks: env.MAX_CONCURRENT_TASKS,
    maxQueuedTasks: env.MAX_QUEUED_TASKS,
    maxConcurrentPerTenant: env.MAX_CONCURRENT_PER_TENANT ?? env.MAX_CONCURRENT_TASKS,
    maxQueuedPerTenant: env.MAX_QUEUED_PER_TENANT,
    taskTimeoutMs: env.TASK_TIMEOUT_MS,
    recoveryMode: env.RECOVERY_MODE,
    pricesFile: env.PRICES_FILE ? path.resolve(env.PRICES_FILE) : undefined,
    pausedTtlMs: env.PAUSED_TTL_MS,
    approvalTimeoutMs: env.APPROVAL_TIMEOUT_MS,
    worktreeTtlMs: env.WORKTREE_TTL_MS,
    retentionDays: env.RETENTION_DAYS ?? null,
    workspaceRetentionDays: env.WORKSPACE_RETENTION_DAYS ?? null,
    memoryRetentionDays: env.MEMORY_RETENTION_DAYS ?? null,
    webhooks: {
      allowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true',
      retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      giveUpAfterMs: env.WEBHOOK_GIVE_UP_MS,
      disableAfterMs: env.WEBHOOK_DISABLE_AFTER_MS,
      maxPerTenant: env.MAX_WEBHOOKS_PER_TENANT,
    },
    /** HOOK_SECRET: signs URL hooks (a definition with one does not load without it). */
    hookSecret: env.HOOK_SECRET ?? null,
    mcp: {
      maxSessions: env.MCP_MAX_SESSIONS,
      // A share is never more than the whole.
      perTenant: Math.min(env.MCP_SESSIONS_PER_TENANT, env.MCP_MAX_SESSIONS),
      perKey: Math.min(env.MCP_SESSIONS_PER_KEY, env.MCP_SESSIONS_PER_TENANT, env.MCP_MAX_SESSIONS),
      idleMs: env.MCP_SESSION_IDLE_MS,
    },
    publicUrl: env.PUBLIC_URL,
    trustProxy: env.TRUST_PROXY,
    maxResumes: env.MAX_RESUMES,
    bashSandbox: env.BASH_SANDBOX,
    sandbox: env.SANDBOX,
    sandboxImage: env.SANDBOX_IMAGE ?? null,
    sandboxCpus: env.SANDBOX_CPUS ?? null,
    sandboxEngineTimeoutMs: env.SANDBOX_ENGINE_TIMEOUT_MS,
    docker: { host: env.DOCKER_HOST, tlsVerify: env.DOCKER_TLS_VERIFY === '1', certPath: env.DOCKER_CERT_PATH ? path.resolve(env.DOCKER_CERT_PATH) : null },
    sandboxMaxProcesses: env.SANDBOX_MAX_PROCESSES,
    sandboxMaxFileBytes: env.SANDBOX_MAX_FILE_BYTES,
    sandboxMaxMemoryBytes: env.SANDBOX_MAX_MEMORY_BYTES,
    sandboxTmpBytes: env.SANDBOX_TMP_BYTES,
    bashTimeoutMs: env.BASH_TIMEOUT_MS,
    bashMaxOutputBytes: env.BASH_MAX_OUTPUT_BYTES,
    egress: { allowPrivate: env.EGRESS_ALLOW_PRIVATE === 'true', maxConnections: env.EGRESS_MAX_CONNECTIONS, maxBytes: env.EGRESS_MAX_BYTES },
    modelMaxRetries: env.MODEL_MAX_RETRIES,
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    maxUploadBytes: env.MAX_UPLOAD_BYTES,
    rateLimitPerMinute: env.RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: env.AUTH_FAILURES_PER_MINUTE,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    headersTimeoutMs: env.HEADERS_TIMEOUT_MS,
    maxEventLoopDelayMs: env.MAX_EVENT_LOOP_DELAY_MS,
    loopSliceMs: env.LOOP_SLICE_MS,
    heapGrowingPercent: env.HEAP_GROWING_PERCENT,
    modelStallTimeoutMs: env.MODEL_STALL_TIMEOUT_MS,
    logLevel: env.LOG_LEVEL,
  };
}

/**
 * A tenant's name: its workspaces are the folder `@<tenant>` (memory included), so a name with `/`
 * or `..` would reach another tenant's folder or leave the workspaces.
 */
const TENANT_NAME = /^(?!\.)[A-Za-z0-9._\-+=@]{1,128}$/;

/** `API_KEYS`: `key`, `key:tenant` or `key:tenant:role`, comma separated (role `admin` by default). */
export function parseApiKeys(raw: string | undefined): Map<string, KeyGrant> | null {
  if (!raw || !raw.trim()) return null;
  const keys = new Map<string, KeyGrant>();
  for (const entry of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [key, tenant = key, role = 'admin', ...rest] = entry.split(':');
    if (!key || !tenant) throw new ConfigError(`API_KEYS: empty key or tenant in entry "${entry.includes(':') ? '…' : ''}"`);
    if (rest.length > 0 || !KEY_ROLES.includes(role as KeyRole))
      throw new ConfigError(`API_KEYS: the role of an entry must be one of ${KEY_ROLES.join(', ')} (entry of tenant "${tenant}")`);
    if (!TENANT_NAME.test(tenant))
      throw new ConfigError(
        `API_KEYS: a tenant's name is a folder's name on disk (its workspaces and memory): 1-128 letters, digits and . _ - + = @, not starting with "." ` +
          `(a bare key is its own tenant: give a key with other characters one, key:tenant)`,
      );
    const earlier = keys.get(key);
    if (earlier && (earlier.tenant !== tenant || earlier.role !== role))
      throw new ConfigError(
        `API_KEYS: one key is given twice, for tenants "${earlier.tenant}" and "${tenant}" (or two roles): each key names one tenant and role`,
      );
    keys.set(key, { tenant, role: role as KeyRole });
  }
  return keys;
}

export class ConfigError extends Error {}

/**
 * Builds the config from an environment object. Throws a ConfigError naming every bad variable;
 * empty strings count as unset so a blank line in `.env` falls back to the default.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // A variable set to nothing, or to spaces only, is unset: a stray space must not read as 0.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const config = toConfig(parsed.data, cleaned);
  if (config.sandbox === 'container' && !config.sandboxImage) {
    throw new ConfigError(
      'invalid configuration:\n  SANDBOX_IMAGE: is required with SANDBOX=container (the image of definitions that name none, and of shell tasks)',
    );
  }
  if (config.sandbox === 'container' && config.docker.tlsVerify && !config.docker.certPath) {
    throw new ConfigError('invalid configuration:\n  DOCKER_CERT_PATH: is required with DOCKER_TLS_VERIFY=1 (the folder of ca.pem, cert.pem and key.pem)');
  }
  const known = ['openai', 'anthropic', 'google', ...Object.keys(config.providers)];
  if (!known.includes(config.defaultProvider)) {
    throw new ConfigError(`invalid configuration:\n  DEFAULT_PROVIDER: unknown provider "${config.defaultProvider}"; known providers: ${known.join(', ')}`);
  }
  return config;
}

/** Reads `.env` into process.env when present (Node's own loader; variables already set win). */
export function loadDotEnv(file = '.env'): void {
  if (existsSync(file)) process.loadEnvFile(file);
}
