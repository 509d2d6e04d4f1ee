/**
 * `@subagentd/client`: everything an orchestrator backend needs to run subagents, and nothing of
 * the server: the typed client (HTTP, WebSocket or server-sent-event streams), the ready ai-SDK
 * `task` tool, webhook verification, and the types. Its only dependencies are its peers `ai` and
 * `zod`.
 */
export { createSubagentClient, isEnded } from './client.ts';
export type {
  CreateTaskInput,
  CreateTaskOptions,
  OutputSchema,
  TypedTaskOutput,
  RequestOptions,
  StreamOptions,
  SubagentClient,
  SubagentClientOptions,
  UploadBody,
  WaitOptions,
} from './client.ts';
export { SubagentApiError } from './errors.ts';
export type { RetryOptions } from './retry.ts';
export type { SocketConstructor } from './socket.ts';
export { compactTaskOutput, createTaskTool } from './task-tool.ts';
export type { ApprovalRequestInfo, TaskProgress, TaskToolContext, TaskToolOptions, TaskToolOutput } from './task-tool.ts';
export { verifyWebhook, WebhookVerificationError } from './verify-webhook.ts';
export type { VerifyWebhookOptions } from './verify-webhook.ts';
export type * from './types.ts';
