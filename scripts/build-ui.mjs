// `npm run build:ui` (and `npm run build`, the tests' setup, `npm run demo`): the console
// (ui/src, Preact + uPlot) bundled by esbuild into ui-dist/: assets named by their content's hash
// (served as immutable) and index.html pointing at them. No inline script or style, so the
// console runs under a strict Content-Security-Policy, and nothing is fetched at run time.
// Built beside ui-dist/ and put in its place whole, and only if it differs: the test projects each
// run this at their start while a service of another may be reading ui-dist/ (ui-routes.ts).
import { build } from 'esbuild';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const target = path.join(root, 'ui-dist');
const out = `${target}.${process.pid}.new`;
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

/** Every file of a built console, by its path inside it. */
const filesOf = (dir) =>
  existsSync(path.join(dir, 'index.html'))
    ? new Map(['index.html', ...readdirSync(path.join(dir, 'assets')).map((f) => `assets/${f}`)].map((f) => [f, readFileSync(path.join(dir, f))]))
    : new Map();
const built = filesOf(out);
const same = (dir) => {
  const files = filesOf(dir);
  return files.size === built.size && [...built].every(([f, bytes]) => files.get(f)?.equals(bytes));
};
if (same(target)) {
  rmSync(out, { recursive: true, force: true });
  console.log(`ui-dist/ is up to date (${outputs.join(', ')})`);
} else {
  const old = `${target}.${process.pid}.old`;
  try {
    if (existsSync(target)) renameSync(target, old);
    renameSync(out, target);
  } catch (err) {
    // Another build put the same console there first.
    if (!same(target)) throw err;
  }
  rmSync(old, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
  console.log(`built ui-dist/ (${outputs.join(', ')})`);
}
