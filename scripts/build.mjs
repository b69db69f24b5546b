// `npm run build`: the server ahead of time, for `node dist/main.js` (production and the Docker
// image). esbuild strips the types file by file (no bundle), so dist/ mirrors src/ and every path a
// module finds beside itself (../../migrations, dist/web) is the same from src/ and from dist/.
// Then the live view page is bundled into dist/web. Type checking stays `npm run typecheck`.
// Usage: node scripts/build.mjs [outDir]   (default ./dist)
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
// src/web holds the page's own sources, which run in the browser and reach it only through the
// bundle in dist/web; the server needs only web/build.ts (it reads the bundle back).
const serverSide = (f) => !f.startsWith('web/') || f === 'web/build.ts';

const entryPoints = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && serverSide(f.split(path.sep).join('/')))
  .map((f) => path.join(root, 'src', f));

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints,
  outdir: out,
  outbase: path.join(root, 'src'),
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
console.log(`server: ${entryPoints.length} modules written to ${out}`);

// The page bundle, from the sources (src/web/build.ts), into <out>/web where dist/web/build.js reads it.
const web = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'src/web/build.ts'), path.join(out, 'web')], { cwd: root, stdio: 'inherit' });
if (web.status !== 0) process.exit(web.status ?? 1);
