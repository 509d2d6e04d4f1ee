import { readFileSync } from 'node:fs';

/**
 * The service's version, from package.json (one version: the OpenAPI document's, the agent
 * card's, the one given to ACP agents, and @subagentd/client's, which test/package.test.ts keeps
 * equal). Read at run time so that dist/ and the sources answer the same.
 */
export const SERVICE_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
