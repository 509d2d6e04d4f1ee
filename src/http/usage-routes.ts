import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { UsageRecord, UsageStore } from '../store/usage-store.ts';
import { contextIdSchema } from '../shapes/task.ts';
import { errorResponses } from './error-schema.ts';

const isoTime = z
  .string()
  .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date or time')
  .transform((s) => Date.parse(s));

const usageFilterSchema = z.object({
  userId: contextIdSchema.optional(),
  parentTaskId: contextIdSchema.optional(),
  subagent_type: z.string().min(1).max(64).optional(),
  model: z.string().min(1).max(200).optional(),
  from: isoTime.optional().describe('inclusive, by start time'),
  to: isoTime.optional().describe('exclusive, by start time'),
});

const totalsSchema = z.object({
  tasks: z.number(),
  steps: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  totalTokens: z.number(),
  cachedInputTokens: z.number(),
  reasoningTokens: z.number(),
  durationMs: z.number(),
});

const recordSchema = z.object({
  id: z.string(),
  taskId: z.string(),
  subagent_type: z.string(),
  parentTaskId: z.string(),
  userId: z.string(),
  toolCallId: z.string().nullable(),
  description: z.string(),
  model: z.string().nullable(),
  steps: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  totalTokens: z.number(),
  cachedInputTokens: z.number(),
  reasoningTokens: z.number(),
  status: z.string(),
  startedAt: z.string(),
  completedAt: z.string().nullable(),
  durationMs: z.number(),
});

const toFilter = (q: z.infer<typeof usageFilterSchema>) => ({
  userId: q.userId,
  parentTaskId: q.parentTaskId,
  subagentType: q.subagent_type,
  model: q.model,
  from: q.from,
  to: q.to,
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const toRecord = (r: UsageRecord): z.infer<typeof recordSchema> => ({ ...r, startedAt: iso(r.startedAt)!, completedAt: iso(r.completedAt) });

export const usageRoutes: FastifyPluginAsyncZod<{ usage: UsageStore }> = async (app, { usage }) => {
  app.get(
    '/usage',
    {
      schema: {
        summary: 'Usage totals, optionally grouped',
        description: 'Sums the usage records (one per task that started) matching the filters; `from`/`to` apply to start time.',
        querystring: usageFilterSchema.extend({
          groupBy: z.enum(['user', 'parentTask', 'subagentType', 'model', 'day']).optional(),
        }),
        response: {
          200: z.object({ totals: totalsSchema, groups: z.array(z.object({ key: z.string() }).extend(totalsSchema.shape)) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const filter = toFilter(request.query);
      const [totals, groups] = await Promise.all([
        usage.totals(request.tenant, filter),
        request.query.groupBy ? usage.groups(request.tenant, filter, request.query.groupBy) : [],
      ]);
      return { totals, groups };
    },
  );

  app.get(
    '/usage/records',
    {
      schema: {
        summary: 'Raw usage records, newest first',
        querystring: usageFilterSchema.extend({
          limit: z.coerce.number().int().min(1).max(1000).default(100),
          cursor: z.string().max(64).optional(),
        }),
        response: { 200: z.object({ records: z.array(recordSchema), nextCursor: z.string().nullable() }), ...errorResponses },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const rows = await usage.records(request.tenant, toFilter(request.query), limit + 1, cursor);
      const page = rows.slice(0, limit);
      return { records: page.map(toRecord), nextCursor: rows.length > limit ? page[page.length - 1].id : null };
    },
  );
};
