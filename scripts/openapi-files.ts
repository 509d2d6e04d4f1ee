import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';

export const OPENAPI_FILE = 'docs/openapi.json';
export const API_TYPES_FILE = 'packages/client/src/api-types.ts';

/** The TypeScript types of the document, as `npm run openapi` writes them. */
export async function apiTypesOf(doc: unknown): Promise<string> {
  const header = '// Generated from docs/openapi.json by `npm run openapi` (openapi-typescript). Do not edit.\n';
  // A copy: openapi-typescript resolves references in the object it is given.
  return header + astToString(await openapiTS(structuredClone(doc) as OpenAPI3));
}
