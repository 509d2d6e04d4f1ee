/*
 * The client's types, all inferred from the zod schemas the service validates and answers with
 * (type-only imports: nothing of them is loaded at run time, so neither is the server).
 */
import type { z } from 'zod';
import type { agentSummarySchema } from '../definitions/agent-definition.ts';
import type { eventDataSchemas, streamMessageSchema } from '../events/event-types.ts';
import type { standingBudgetBodySchema, standingBudgetSchema } from '../shapes/budget.ts';
import type { workspaceFileSchema, workspaceListingSchema } from '../shapes/artifact.ts';
import type {
  createTaskBodySchema,
  listTasksQuerySchema,
  modelMessageSchema,
  taskAcceptedSchema,
  taskBudgetSchema,
  taskListSchema,
  taskOutputSchema,
} from '../shapes/task.ts';
import type { usageQuerySchema, usageRecordListSchema, usageRecordsQuerySchema, usageReportSchema } from '../shapes/usage-report.ts';
import type { createdWebhookSchema, createWebhookBodySchema, deliveryListSchema, webhookListSchema } from '../shapes/webhook.ts';

export type CreateTaskBody = z.input<typeof createTaskBodySchema>;
export type TaskAccepted = z.output<typeof taskAcceptedSchema>;
export type TaskOutput = z.output<typeof taskOutputSchema>;
export type TaskStatus = TaskOutput['status'];
export type TaskList = z.output<typeof taskListSchema>;
export type ListTasksQuery = Omit<z.input<typeof listTasksQuerySchema>, 'limit'> & { limit?: number };
export type TaskBudget = z.input<typeof taskBudgetSchema>;
export type ModelMessage = z.output<typeof modelMessageSchema>;
export type StreamMessage = z.output<typeof streamMessageSchema>;
export type TaskEvent = Exclude<StreamMessage, { type: 'heartbeat' }>;
export type EventData<T extends keyof typeof eventDataSchemas> = z.output<(typeof eventDataSchemas)[T]>;
export type AgentSummary = z.output<typeof agentSummarySchema>;
export type WorkspaceFile = z.output<typeof workspaceFileSchema>;
export type WorkspaceListing = z.output<typeof workspaceListingSchema>;
export type UsageQuery = Omit<z.input<typeof usageQuerySchema>, 'limit'> & { limit?: number };
export type UsageReport = z.output<typeof usageReportSchema>;
export type UsageRecordsQuery = Omit<z.input<typeof usageRecordsQuerySchema>, 'limit'> & { limit?: number };
export type UsageRecordList = z.output<typeof usageRecordListSchema>;
export type StandingBudgetBody = z.input<typeof standingBudgetBodySchema>;
export type StandingBudget = z.output<typeof standingBudgetSchema>;
export type CreateWebhookBody = z.input<typeof createWebhookBodySchema>;
export type CreatedWebhook = z.output<typeof createdWebhookSchema>;
export type WebhookList = z.output<typeof webhookListSchema>;
export type DeliveryList = z.output<typeof deliveryListSchema>;
