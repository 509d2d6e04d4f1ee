import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import type { AgentDefinition } from '../definitions/agent-definition.ts';

export const A2A_PATH = '/a2a';
/** v0.3 is what a request without an `A2A-Version` header speaks. */
export const LEGACY_VERSION = '0.3';

/**
 * The agent card as the wire carries it: v1.0 fields (`supportedInterfaces`, one JSON-RPC
 * interface per protocol version served) plus the v0.3 fields (`url`, `protocolVersion`,
 * `preferredTransport`), so clients of either version can read it. One skill per subagent type.
 */
export function agentCardJson(opts: {
  origin: string;
  agents: Array<Pick<AgentDefinition, 'type' | 'description' | 'kind'>>;
  authRequired: boolean;
  version: string;
}) {
  const url = `${opts.origin}${A2A_PATH}`;
  return {
    name: 'subagentd',
    description:
      'Runs LLM subagents in a shared workspace per context (contextId = the parent task id). Choose the subagent with ' +
      'message metadata `subagent_type` (default `general`); `description`, `userId` and `options` (maxSteps, outputSchema, budget, ...) too.',
    version: opts.version,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url, protocolBinding: 'JSONRPC', protocolVersion: LEGACY_VERSION },
    ],
    capabilities: { streaming: true, pushNotifications: true },
    ...(opts.authRequired
      ? {
          securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'An API key of API_KEYS' } } },
          securityRequirements: [{ schemes: { bearer: { list: [] } } }],
        }
      : {}),
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: opts.agents.map((a) => ({
      id: a.type,
      name: a.type,
      description: a.description,
      tags: ['subagent', a.kind],
      examples: [],
      inputModes: ['text/plain'],
      outputModes: ['text/plain', 'application/json'],
    })),
    // v0.3 readers
    url,
    protocolVersion: '0.3.0',
    preferredTransport: 'JSONRPC',
  };
}

/** The same card as the SDK's handlers read it. */
export function agentCardOf(json: ReturnType<typeof agentCardJson>): AgentCard {
  return AgentCard.fromJSON(json);
}
