/**
 * `subagentd/client`: everything an orchestrator backend needs to run subagents, and nothing of
 * the server (no SQLite, no fastify): the typed client, the ready `task` tool, and the types.
 */
export { createSubagentClient, isEnded } from './client.ts';
export type { CreateTaskOptions, RequestOptions, StreamOptions, SubagentClient, SubagentClientOptions, UploadBody, WaitOptions } from './client.ts';
export { SubagentApiError } from './errors.ts';
export type { RetryOptions } from './retry.ts';
export type { SocketConstructor } from './socket.ts';
export { compactTaskOutput, createTaskTool } from './task-tool.ts';
export type { TaskProgress, TaskToolContext, TaskToolOptions, TaskToolOutput } from './task-tool.ts';
export type * from './types.ts';
