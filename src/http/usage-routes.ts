import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { UsageRecord, UsageStore } from '../store/usage-store.ts';
import {
  usageFilterSchema,
  usageQuerySchema,
  usageRecordListSchema,
  usageRecordsQuerySchema,
  usageReportSchema,
  type usageRecordSchema,
} from '../shapes/usage-report.ts';
import { iso } from '../shapes/time.ts';
import { errors, json } from './openapi.ts';
import { nextPage } from '../store/paging.ts';

const toFilter = (q: z.infer<typeof usageFilterSchema>) => ({
  userId: q.userId,
  parentTaskId: q.parentTaskId,
  subagentType: q.subagent_type,
  model: q.model,
  from: q.from,
  to: q.to,
});

const toRecord = (r: UsageRecord): z.infer<typeof usageRecordSchema> => ({
  ...r,
  costMicroUsd: r.unpricedTokens > 0 ? null : r.costMicroUsd,
  startedAt: iso(r.startedAt),
  completedAt: iso(r.completedAt),
  // SQLite hands the flag over as 0/1.
  usageReported: Boolean(r.usageReported),
});

/**
 * Record pages are built from typed rows (checked by the compiler): encoding 1,000 of them through
 * their zod schema costs far more than plain JSON (77 ms against 8 ms for 10,000 objects).
 */
const plainJson = () => (data: unknown) => JSON.stringify(data);

export const usageRoutes: FastifyPluginAsyncZod<{ usage: UsageStore }> = async (app, { usage }) => {
  app.get(
    '/usage',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'getUsage',
        summary: 'Usage totals, optionally grouped',
        description: 'Sums the usage records (one per task that started) matching the filters; `from`/`to` apply to start time.',
        querystring: usageQuerySchema,
        response: { 200: json('The sums over the matching records', usageReportSchema), ...errors(400) },
      },
    },
    async (request, reply) => {
      const filter = toFilter(request.query);
      const { groupBy, source, limit, cursor } = request.query;
      const [totals, groups] = await Promise.all([
        usage.totals(request.tenant, filter, source),
        groupBy ? usage.groupsJson(request.tenant, filter, groupBy, source, { limit, cursor }) : { json: '[]', nextCursor: null },
      ]);
      // The groups arrive as JSON already (built on the reader thread): the answer is sent as it is.
      return reply
        .type('application/json; charset=utf-8')
        .send(`{"totals":${JSON.stringify(totals)},"groups":${groups.json},"nextCursor":${JSON.stringify(groups.nextCursor)}}` as never);
    },
  );

  app.get(
    '/usage/records',
    {
      config: { access: 'read' },
      serializerCompiler: plainJson,
      schema: {
        operationId: 'listUsageRecords',
        summary: 'Raw usage records, newest first',
        querystring: usageRecordsQuerySchema,
        response: { 200: json('One page of records; pass nextCursor as cursor for the next', usageRecordListSchema), ...errors(400) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const page = nextPage(await usage.records(request.tenant, toFilter(request.query), limit + 1, cursor), limit);
      return { records: page.rows.map(toRecord), nextCursor: page.nextCursor };
    },
  );
};
