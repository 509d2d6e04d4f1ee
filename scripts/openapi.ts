// `npm run openapi`: writes the OpenAPI document the service serves to docs/openapi.json, and the
// TypeScript types generated from it (openapi-typescript) to packages/client/src/api-types.ts, for
// openapi-fetch. test/openapi.test.ts fails when either is behind the routes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { closeDatabase, openDatabase } from '../src/store/database.ts';
import { apiTypesOf, OPENAPI_FILE, API_TYPES_FILE } from './openapi-files.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'subagentd-openapi-'));
const config = loadConfig({ DATABASE_PATH: path.join(dir, 'db.sqlite'), WORKSPACES_DIR: path.join(dir, 'ws'), BASH_SANDBOX: 'none' });
const db = await openDatabase(config.databaseUrl ?? config.databasePath);
const app = await createApp({ config, db, logger: pino({ level: 'silent' }) });
await app.server.ready();
const doc = app.server.swagger();
writeFileSync(OPENAPI_FILE, `${JSON.stringify(doc, null, 2)}\n`);
writeFileSync(API_TYPES_FILE, await apiTypesOf(doc));
await app.server.close();
await closeDatabase(db);
rmSync(dir, { recursive: true, force: true });
console.log(`wrote ${OPENAPI_FILE} and ${API_TYPES_FILE}`);
