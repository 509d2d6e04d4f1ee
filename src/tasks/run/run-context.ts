import type { Logger } from 'pino';
import type { AgentDefinition } from '../../definitions/agent-definition.ts';
import type { AgentRegistry } from '../../definitions/agent-registry.ts';
import type { PreloadedSkill, SkillRegistry } from '../../definitions/skills.ts';
import type { TaskMemory } from '../../shapes/memory.ts';
import type { EventLog } from '../../events/event-log.ts';
import type { ModelProvider } from '../../loop/model-provider.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import type { Budgets } from '../../money/budgets.ts';
import { costMicroUsd, type PriceTable } from '../../money/prices.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { CreateTaskBody, TokenUsage } from '../../shapes/task.ts';
import type { TaskRow } from '../../store/schema.ts';
import type { StorageGuard } from '../../store/storage-guard.ts';
import type { TaskStore } from '../../store/task-store.ts';
import type { TaskTrace, Tracing } from '../../telemetry/tracing.ts';
import type { Workspace, WorkspacesDirOf } from '../../workspace/workspace.ts';
import type { Liveness } from './liveness.ts';
import { createTaskWrites, type TaskWrites } from '../writes/task-writes.ts';
import type { CancelCode } from './task-abort.ts';
import type { ReadOns } from '../../loop/model-guard.ts';

export interface RunnerDeps {
  store: TaskStore;
  events: EventLog;
  registry: AgentRegistry;
  modelProvider: ModelProvider;
  metrics: Metrics;
  logger: Logger;
  now: () => number;
  /** Folder holding the workspaces of a tenant (and its memories, `#memory`). */
  workspacesDirOf: WorkspacesDirOf;
  /** The skills of SKILLS_DIR that definitions preload. */
  skills: SkillRegistry;
  /** MEMORY_MAX_BYTES: the bound of each memory folder. */
  memoryMaxBytes: number;
  limits: { bashTimeoutMs: number; bashMaxOutputBytes: number; modelMaxRetries: number; modelStallTimeoutMs: number };
  /** Model calls read on after their task stopped: a shutdown waits for them (and their bills). */
  readOns?: ReadOns;
  /** How long an approval waits for its answer unless the task says otherwise (APPROVAL_TIMEOUT_MS). */
  approvalTimeoutMs: number;
  /** The egress proxy of tasks whose commands may reach hosts (EGRESS_*). */
  egress?: { allowPrivate: boolean; maxConnections: number; maxBytes: number };
  /** How URL hooks are sent: signed with HOOK_SECRET, to private addresses only with WEBHOOK_ALLOW_PRIVATE. */
  hooks?: { secret: string | null; allowPrivate: boolean };
  /** Send each session's id as the provider's `prompt_cache_key` (PROMPT_CACHE_KEY). */
  promptCacheKey: boolean;
  sandbox: Sandbox;
  /** Writes that must survive a full disk go through it (usage, step and end states). */
  storage: StorageGuard;
  /** Prices of the models, for what each call costs. */
  prices: PriceTable;
  budgets: Budgets;
  liveness: Liveness;
  tracing: Tracing;
  /** Strings that must never reach a task's error message (provider keys). */
  secrets: string[];
  /** Where an ACP definition's allowed variables are read from. */
  serviceEnv: Record<string, string | undefined>;
  /** PostgreSQL: this instance; a task's end is written only while it owns the task. */
  instanceId?: string | null;
  /** Nesting: the task service's side of the `task` tool (absent: no task may start children). */
  children?: ChildTasks;
}

/** What every kind of run gets: the task, its body and definition, its workspace, its abort signal. */
export interface TaskRun {
  row: TaskRow;
  body: CreateTaskBody;
  def: AgentDefinition;
  workspace: Workspace;
  signal: AbortSignal;
  /** A model task's skills (as its system prompt carries them) and memory, seen at `.skills/` and `.memory/`. */
  folders?: { skills: PreloadedSkill[]; memory: TaskMemory | null };
}

/** Why a task is stopped by someone: its code (the task's `error.code`) and message. */
export interface StopWhy {
  code: CancelCode;
  message: string;
}

/** How a lead's call starts a child, and finds it again. */
export interface ChildStart {
  /**
   * The call's place, `child:<lead>:<step>.<index>`: a step run again after a crash or a takeover
   * finds there the child its first run started, whatever ids the model gives its calls this time.
   */
  key: string;
  /** The call's id, `child:<lead>:<toolCallId>`: the key when the place holds another call's child (and the key before v1.3). */
  callKey: string;
  /** Whether the child found at `key` is this call's (a step run again may ask for other children). */
  matches?: (child: TaskRow) => boolean;
  /** It runs on while its lead goes on, and ends when its lead does. */
  background?: boolean;
  /** The depth its tree may reach, when not its parent's (a candidate stands in for its parent: one more). */
  maxDepth?: number;
}

/** What a task's lead tools (`task`, `wait`, `send_input`, `close_agent`) ask of the task service (nesting), bound once the service exists. */
export interface ChildTasks {
  /** Starts (or, for the same call again, finds) a child of `parent`, one level deeper. */
  start(parent: TaskRow, body: CreateTaskBody, how: ChildStart): Promise<TaskRow>;
  /** Resolves with the child once it has ended or paused. */
  ended(id: string): Promise<TaskRow>;
  /** Stops a child (default: `cancelled`). */
  cancel(tenant: string, id: string, why?: StopWhy): Promise<void>;
  /**
   * Resumes a child paused at a budget: true once it goes on (or was no longer paused), false while
   * a budget still holds it.
   */
  resume(tenant: string, id: string): Promise<boolean>;
  /** A steering message for a child that has not ended (409 `task_finished` once it has). */
  steer(tenant: string, id: string, message: string): Promise<void>;
  /** The task waits for a child: its slot serves others meanwhile (else nested tasks could wait on each other for ever). */
  waiting(id: string, on: boolean): void;
}

/** A model run also gets its model, the steering messages, its trace and the lease check. */
export interface ModelRun extends TaskRun {
  model: string;
  /** Tried in turn after a provider error outlived its retries (model fallback). */
  fallbackModels?: string[];
  takeMessages: () => Promise<string[]>;
  trace: TaskTrace;
  confirmLease?: () => Promise<void>;
}

/** The runner's dependencies and the few things every kind of run does the same way. */
export interface RunContext {
  deps: RunnerDeps;
  /** The task's writes that cross domains: billing, its end, the run's own (task-writes.ts). */
  writes: TaskWrites;
  /** What a call to `model` with `usage` cost now, in micro-dollars; null when the model has no price. */
  costOf(model: string, usage: TokenUsage): number | null;
  /** `message` without the strings that must never reach a task's error message. */
  scrub(message: string): string;
}

export function createRunContext(deps: RunnerDeps): RunContext {
  return {
    deps,
    // PostgreSQL: a task's steps are stored only while this instance owns it.
    writes: createTaskWrites({ events: deps.events, instanceId: deps.instanceId ?? null }),
    costOf(model, usage) {
      const rates = deps.prices.ratesOf(model, deps.now(), usage.inputTokens);
      return rates ? costMicroUsd(usage, rates) : null;
    },
    scrub(message) {
      let out = message;
      for (const s of deps.secrets) if (s) out = out.split(s).join('[redacted]');
      return out;
    },
  };
}
