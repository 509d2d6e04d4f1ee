import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { AppError } from '../errors/app-error.ts';

/** Where `npm run build:ui` puts the console (beside `migrations/`, from src/ and dist/ alike). */
export const UI_DIR = path.resolve(import.meta.dirname, '../../ui-dist');

/**
 * Only the console's own files, and calls back to this service: no inline script or style, no
 * frame, no other origin.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** The console's files, read once: a few hundred kilobytes. */
function load(dir: string): { index: Buffer; assets: Map<string, Buffer> } | null {
  if (!existsSync(path.join(dir, 'index.html'))) return null;
  const assets = new Map<string, Buffer>();
  for (const name of readdirSync(path.join(dir, 'assets'))) if (TYPES[path.extname(name)]) assets.set(name, readFileSync(path.join(dir, 'assets', name)));
  return { index: readFileSync(path.join(dir, 'index.html')), assets };
}

const secure = (reply: FastifyReply) =>
  reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');

/**
 * `GET /ui`: the web console (ui/src, built into ui-dist/). Its page and assets need no key (the
 * page signs in with one and sends it on each API call); assets are named by their content's
 * hash, so they are cached for a year, and the page is never cached.
 */
export const uiRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, opts) => {
  const files = load(opts.dir ?? UI_DIR);
  const notBuilt = () => new AppError(503, 'console_not_built', 'the console is not built here: run npm run build:ui (npm run build does it too)');

  const page = async (_request: unknown, reply: FastifyReply) => {
    if (!files) throw notBuilt();
    return secure(reply).type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(files.index);
  };
  app.get('/ui', { config: { access: 'public' }, schema: { hide: true } }, page);
  app.get('/ui/', { config: { access: 'public' }, schema: { hide: true } }, page);
  app.get<{ Params: { file: string } }>('/ui/assets/:file', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    if (!files) throw notBuilt();
    const body = files.assets.get(request.params.file);
    if (!body) throw new AppError(404, 'not_found', `no console file ${request.params.file.slice(0, 100)}`);
    return secure(reply).type(TYPES[path.extname(request.params.file)]).header('cache-control', 'public, max-age=31536000, immutable').send(body);
  });
};
