// `npm run build:ui` (and `npm run build`, the tests' setup, `npm run demo`): the console
// (ui/src, Preact + uPlot) bundled by esbuild into ui-dist/: assets named by their content's hash
// (served as immutable) and index.html pointing at them. No inline script or style, so the
// console runs under a strict Content-Security-Policy, and nothing is fetched at run time.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const out = path.join(root, 'ui-dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, 'assets'), { recursive: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: 'ui/src/main.tsx' },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: path.join(out, 'assets'),
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
});
const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`the console's bundle is incomplete: ${outputs.join(', ')}`);
const html = readFileSync(path.join(root, 'ui/index.html'), 'utf8').replace('%JS%', js).replace('%CSS%', css);
writeFileSync(path.join(out, 'index.html'), html);
console.log(`built ui-dist/ (${outputs.join(', ')})`);
