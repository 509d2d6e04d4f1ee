import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { StorageGuard } from '../store/storage-guard.ts';
import { errors, json } from './openapi.ts';

export const healthRoutes: FastifyPluginAsyncZod<{ metrics: Metrics; storage: StorageGuard; recovered: () => boolean }> = async (
  app,
  { metrics, storage, recovered },
) => {
  app.get(
    '/healthz',
    {
      config: { access: 'public' },
      schema: {
        operationId: 'getHealth',
        summary: 'Health (no key needed)',
        description:
          '200 while the service can take tasks; 503 storage_full / storage_unavailable while its database cannot be written; ' +
          '503 starting until it has taken up the tasks a previous process left unfinished.',
        response: { 200: json('The service can take tasks', z.object({ status: z.literal('ok') })), ...errors(503) },
      },
    },
    async (_request, reply) => {
      if (!recovered()) {
        reply.header('retry-after', '1');
        throw new AppError(503, 'starting', 'the service is taking up the tasks a previous process left unfinished; retry shortly');
      }
      if (storage.fault) {
        throw new AppError(
          503,
          storage.fault,
          `the database cannot be written (${storage.fault === 'storage_full' ? 'disk full' : 'unavailable'}); ${storage.waiting} writes wait in memory`,
        );
      }
      return { status: 'ok' as const };
    },
  );

  app.get(
    '/metrics',
    {
      config: { access: 'metrics' },
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (text format)',
        response: { 200: { description: 'The metrics in the Prometheus text format', content: { 'text/plain': { schema: z.string() } } } },
      },
    },
    async (_request, reply) => {
      reply.header('content-type', metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  );
};
