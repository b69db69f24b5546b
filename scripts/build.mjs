// `npm run build`: the server ahead of time, for `node dist/main.js` (production and the Docker
// image), bundled by esbuild with its dependencies: loading one set of bundled modules instead of
// a few thousand files under node_modules halves the time to ready (bench:footprint). Entry points
// keep their src/ paths (dist/main.js, dist/server/runtime.js, dist/live/intervals.js for the
// benches, dist/store/pglite-child.js for the PGlite child process); shared code goes to
// dist/chunks. Files the server reads beside itself (migrations, dist/web) are named from the
// installation root (src/config/install.ts), so the layout inside dist/ is free.
// Left outside the bundle and loaded from node_modules at run time: PGlite (WebAssembly files
// beside its code; absent from the Postgres image), esbuild (a native binary, dev only), pino
// (its transports run files in worker threads) and ws' optional native add-ons.
// Then the live view page is bundled into dist/web. Type checking stays `npm run typecheck`.
// Usage: node scripts/build.mjs [outDir]   (default ./dist; the server finds it as <root>/dist)
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
const entryPoints = ['main.ts', 'server/runtime.ts', 'live/intervals.ts', 'store/pglite-child.ts'].map((f) => path.join(root, 'src', f));

rmSync(out, { recursive: true, force: true });
const result = await build({
  entryPoints,
  outdir: out,
  outbase: path.join(root, 'src'),
  entryNames: '[dir]/[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@electric-sql/pglite', 'esbuild', 'pino', 'bufferutil', 'utf-8-validate'],
  // Bundled CommonJS packages call require() for Node's own modules: give them a real one.
  banner: { js: "import { createRequire as __tgRequire } from 'node:module'; const require = __tgRequire(import.meta.url);" },
  // Less to read and parse at start; identifiers keep their names (libraries read constructor names).
  minifyWhitespace: true,
  minifySyntax: true,
  // Stack traces map to file:line (node --enable-source-maps); the sources themselves are not copied in.
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
});
const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js'));
console.log(`server: ${entryPoints.length} entry points bundled into ${files.length} files in ${out}`);

// The page bundle, from the sources (src/web/build.ts), into <out>/web where dist/web/build.js reads it.
const web = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'src/web/build.ts'), path.join(out, 'web')], { cwd: root, stdio: 'inherit' });
if (web.status !== 0) process.exit(web.status ?? 1);
