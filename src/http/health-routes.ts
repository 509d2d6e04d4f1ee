import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { StorageGuard } from '../store/storage-guard.ts';
import { errorResponses } from './error-schema.ts';

export const healthRoutes: FastifyPluginAsyncZod<{ metrics: Metrics; storage: StorageGuard }> = async (app, { metrics, storage }) => {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Health',
        description: '200 while the service can take tasks; 503 storage_full / storage_unavailable while its database cannot be written.',
        response: { 200: z.object({ status: z.literal('ok') }), ...errorResponses },
      },
    },
    async () => {
      if (storage.fault) {
        throw new AppError(503, storage.fault, `the database cannot be written (${storage.fault === 'storage_full' ? 'disk full' : 'unavailable'}); ${storage.waiting} writes wait in memory`);
      }
      return { status: 'ok' as const };
    },
  );

  app.get('/metrics', { schema: { summary: 'Prometheus metrics (text format)' } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};
