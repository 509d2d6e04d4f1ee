// `npm run build`: TypeScript to dist/ (imports rewritten to .js), plus the files Node loads at run
// time that tsc does not emit: the SQL reader, worktree and shell parse threads. Migrations stay at the package root, where
// dist/store/database.js finds them (../../migrations).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
cpSync('src/store/sqlite-read-thread.mjs', 'dist/store/sqlite-read-thread.mjs');
cpSync('src/workspace/worktree-thread.mjs', 'dist/workspace/worktree-thread.mjs');
cpSync('src/definitions/shell-parse-thread.mjs', 'dist/definitions/shell-parse-thread.mjs');
execFileSync(process.execPath, ['scripts/build-ui.mjs'], { stdio: 'inherit' });
console.log('built dist/ (node dist/server.js) and the console, ui-dist/');
