import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../errors/app-error.ts';
import { microUsd, type Budgets } from '../money/budgets.ts';
import type { BudgetScope } from '../store/budget-store.ts';
import { standingBudgetBodySchema, standingBudgetParamsSchema as paramsSchema, standingBudgetSchema } from '../shapes/budget.ts';
import { errors, json } from './openapi.ts';

export const budgetsRoutes: FastifyPluginAsyncZod<{ budgets: Budgets; now: () => number }> = async (app, { budgets, now }) => {
  const view = async (tenant: string, scope: BudgetScope, id: string) => {
    const b = await budgets.get(tenant, scope, id);
    if (!b) throw notFound(`budget ${scope}/${id}`);
    return {
      scope,
      id,
      maxTokens: b.maxTokens,
      maxCostUsd: b.maxCostMicroUsd === null ? null : b.maxCostMicroUsd / 1_000_000,
      spent: await budgets.spent(tenant, scope, id),
    };
  };

  app.put(
    '/budgets/:scope/:id',
    {
      config: { access: 'admin', audit: 'budget.set' },
      schema: {
        operationId: 'putBudget',
        summary: 'Set the standing budget of a parent task or a user',
        description:
          'Checked before every model call of every task of the scope; a task that reaches it pauses (task.paused) ' +
          'until POST /tasks/{id}/resume once the budget is raised. Replaces an earlier budget of the scope.',
        params: paramsSchema,
        body: standingBudgetBodySchema,
        response: { 200: json('The budget and what the scope has spent', standingBudgetSchema), ...errors(400, 413, 415) },
      },
    },
    async (request) => {
      const { scope, id } = request.params;
      await budgets.put(
        request.tenant,
        scope,
        id,
        { maxTokens: request.body.maxTokens ?? null, maxCostMicroUsd: request.body.maxCostUsd == null ? null : microUsd(request.body.maxCostUsd) },
        now(),
      );
      return view(request.tenant, scope, id);
    },
  );

  app.get(
    '/budgets/:scope/:id',
    {
      config: { access: 'oversee' },
      schema: {
        operationId: 'getBudget',
        summary: 'The standing budget of a parent task or a user, with what it has spent',
        params: paramsSchema,
        response: { 200: json('The budget and what the scope has spent', standingBudgetSchema), ...errors(400, 404) },
      },
    },
    async (request) => view(request.tenant, request.params.scope, request.params.id),
  );

  app.delete(
    '/budgets/:scope/:id',
    {
      config: { access: 'admin', audit: 'budget.deleted' },
      schema: {
        operationId: 'deleteBudget',
        summary: 'Remove the standing budget of a parent task or a user',
        params: paramsSchema,
        response: { 204: z.undefined().describe('Removed'), ...errors(400, 404) },
      },
    },
    async (request, reply) => {
      if (!(await budgets.delete(request.tenant, request.params.scope, request.params.id)))
        throw notFound(`budget ${request.params.scope}/${request.params.id}`);
      return reply.status(204).send();
    },
  );
};
