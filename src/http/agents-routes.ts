import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentListedSchema, summaryOf } from '../definitions/agent-definition.ts';
import type { AgentRegistry } from '../definitions/agent-registry.ts';
import { preloadSkills, type SkillRegistry } from '../definitions/skills.ts';
import { json } from './openapi.ts';

const skillListedSchema = z.object({
  name: z.string(),
  description: z.string(),
  license: z.string().optional(),
  compatibility: z.string().optional(),
  promptBytes: z.number().int().describe("what its SKILL.md body adds to a task's system prompt, in bytes (at most 16 KiB)"),
  agents: z.array(z.string()).describe('the subagent types that preload it'),
});

export const agentsRoutes: FastifyPluginAsyncZod<{ registry: AgentRegistry; skills: SkillRegistry }> = async (app, { registry, skills }) => {
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

  app.get(
    '/skills',
    {
      config: { access: 'read' },
      schema: {
        operationId: 'listSkills',
        summary: 'The skills of SKILLS_DIR (Agent Skills: a folder with its SKILL.md) and the definitions that preload them',
        response: { 200: json('Every valid skill, by name', z.object({ skills: z.array(skillListedSchema) })) },
      },
    },
    async () => ({
      skills: skills
        .list()
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map((s) => ({
          name: s.name,
          description: s.description,
          ...(s.license && { license: s.license }),
          ...(s.compatibility && { compatibility: s.compatibility }),
          promptBytes: Buffer.byteLength(preloadSkills([s])[0].body ?? ''),
          agents: registry
            .list()
            .filter((d) => d.skills?.includes(s.name))
            .map((d) => d.type),
        })),
    }),
  );
};
