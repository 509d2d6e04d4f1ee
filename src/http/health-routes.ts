import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Metrics } from '../metrics/metrics';

export const healthRoutes: FastifyPluginAsyncZod<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness', response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get('/metrics', { schema: { summary: 'Prometheus metrics (text format)' } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};
