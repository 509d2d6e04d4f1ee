/*
 * The client's types, from the OpenAPI document the service generates out of the very zod schemas
 * it validates and answers with (`npm run openapi` writes api-types.ts; test/openapi.test.ts fails
 * when it is behind the routes, and test/client-types.test.ts when a type here stops matching the
 * server's schema). Nothing here loads at run time.
 */
import type { components, operations } from './api-types.ts';

type Schemas = components['schemas'];
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
type Answer<Op extends keyof operations, S extends number> =
  operations[Op]['responses'] extends Record<S, { content: { 'application/json': infer B } }> ? B : never;
type JsonBody<Op extends keyof operations> = NonNullable<operations[Op]['requestBody']> extends { content: { 'application/json': infer B } } ? B : never;

export type CreateTaskBody = Schemas['CreateTaskBody'];
export type TaskAccepted = Schemas['TaskAccepted'];
export type TaskOutput = Schemas['Task'];
export type TaskStatus = TaskOutput['status'];
export type TaskList = Schemas['TaskList'];
export type ListTasksQuery = Query<'listTasks'>;
export type TaskBudget = Schemas['TaskBudget'];
/** `options.outcome`: how a task's `complete` is checked (a verify command, a rubric). */
export type OutcomeSpec = NonNullable<NonNullable<CreateTaskBody['options']>['outcome']>;
/** `options.candidates`: n attempts at once from one snapshot, one kept. */
export type CandidatesSpec = NonNullable<NonNullable<CreateTaskBody['options']>['candidates']>;
/** A task's outcome once checked (TaskOutput `outcome`). */
export type Outcome = NonNullable<TaskOutput['outcome']>;
/** One attempt of a task with candidates (TaskOutput `candidates`). */
export type Candidate = NonNullable<TaskOutput['candidates']>[number];
/** The answer to an approval request: `allow` (optionally with a replaced `input`) or `deny` (with the `message` the model reads). */
export type ApprovalDecision = JsonBody<'answerApproval'>;
/** The result of a caller-run tool's call: `{ output }` (what the model reads) or `{ error }` (a tool error it reads). */
export type ToolResult = JsonBody<'submitToolResult'>;
/** A caller-run tool as the service takes it (`options.clientTools`). */
export type ClientToolSpec = NonNullable<NonNullable<CreateTaskBody['options']>['clientTools']>[number];
/** What a paused task waits for on the caller (`progress.pending`). */
export type PendingRequest = NonNullable<NonNullable<TaskOutput['progress']>['pending']>[number];
export type ModelMessage = Schemas['ModelMessage'];
export type Heartbeat = Schemas['Heartbeat'];
export type StreamMessage = Schemas['StreamMessage'];
export type TaskEvent = Exclude<StreamMessage, { type: 'heartbeat' }>;
export type EventType = TaskEvent['type'];
export type EventData<T extends EventType> = Extract<TaskEvent, { type: T }>['data'];
export type AgentSummary = Schemas['AgentSummary'];
/** A skill of the service's SKILLS_DIR (`GET /skills`): what it adds to a prompt, and which definitions preload it. */
export type SkillSummary = Answer<'listSkills', 200>['skills'][number];
/** Whose a definition's memory is: one folder per user, per parent task, or the definition's own (key `-`). */
export type MemoryScope = 'user' | 'parent' | 'definition';
/** A memory folder's files and size (`GET /memory/:scope/:key/:type/files/`). */
export type MemoryListing = Answer<'getMemoryFile', 200>;
export type WorkspaceFile = Schemas['WorkspaceFile'];
export type WorkspaceListing = Schemas['WorkspaceListing'];
export type UsageQuery = Query<'getUsage'>;
export type UsageReport = Schemas['UsageReport'];
export type UsageRecordsQuery = Query<'listUsageRecords'>;
export type UsageRecordList = Schemas['UsageRecordList'];
export type StandingBudgetBody = Schemas['StandingBudgetBody'];
export type StandingBudget = Schemas['StandingBudget'];
export type CreateWebhookBody = Schemas['CreateWebhookBody'];
export type CreatedWebhook = Schemas['CreatedWebhook'];
export type WebhookList = Schemas['WebhookList'];
export type DeliveryList = Schemas['WebhookDeliveryList'];
export type WebhookPayload = Schemas['WebhookPayload'];
export type ErasedUser = Answer<'eraseUser', 200>;
export type AuditPage = Answer<'listAudit', 200>;
export type CreateKeyBody = JsonBody<'createKey'>;
export type CreatedKey = Answer<'createKey', 201>;
export type KeyList = Answer<'listKeys', 200>;

/*
 * The lead tools a definition with `maxDepth` gives its model (the document's `x-tools`): what each
 * takes (a `tool.call` event's `input`) and answers (a `tool.result` event's `output`).
 */
export type LeadToolName = 'task' | 'wait' | 'send_input' | 'close_agent';
export type TaskToolArgs = Schemas['TaskToolArgs'];
/** What the lead reads of a child: its compact TaskOutput (`task` that waited, `wait`, `close_agent`). */
export type ChildOutput = Schemas['ChildOutput'];
/** `task` with `run_in_background`: answered at once. */
export type BackgroundStarted = Schemas['BackgroundStarted'];
export type WaitArgs = Schemas['WaitArgs'];
export type WaitResult = Schemas['WaitResult'];
export type SendInputArgs = Schemas['SendInputArgs'];
export type SendInputResult = Schemas['SendInputResult'];
export type CloseAgentArgs = Schemas['CloseAgentArgs'];
