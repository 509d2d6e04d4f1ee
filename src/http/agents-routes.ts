import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentListedSchema, summaryOf } from '../definitions/agent-definition.ts';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { json } from './openapi.ts';

export const agentsRoutes: FastifyPluginAsyncZod<{ registry: AgentRegistry }> = async (app, { registry }) => {
  app.get(
    '/agents',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'listAgents',
        summary: 'Subagent definitions with their resolved model, step limit and tools',
        response: { 200: json('Every subagent type this service runs', z.object({ agents: z.array(agentListedSchema) })) },
      },
    },
    async () => ({
      agents: registry.list().map(summaryOf),
    }),
  );
};
