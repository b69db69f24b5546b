// Bundles the live view page (src/web) with esbuild: app.js (the page, uPlot and the graphql-ws
// client) and app.css (uPlot's stylesheet), beside index.html. In memory at server start in
// development; `npm run web:build` writes them to dist/web for images built without dev tools.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { APP_ROOT, DIST_DIR } from '../config/index.js';

export type WebAssets = Map<string, { body: Uint8Array | string; contentType: string }>;

// The page's sources (read by esbuild in development) and the built copy `npm run build` writes.
const here = path.join(APP_ROOT, 'src/web');
export const PREBUILT_DIR = path.join(DIST_DIR, 'web');
export const ASSET_NAMES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export async function buildWebAssets(): Promise<WebAssets> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: { app: path.join(here, 'app.ts'), 'app-css': 'uplot/dist/uPlot.min.css' },
    absWorkingDir: APP_ROOT,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    write: false,
    outdir: 'out',
    logLevel: 'silent',
  });
  const assets: WebAssets = new Map([['index.html', { body: readFileSync(path.join(here, 'index.html'), 'utf8'), contentType: ASSET_NAMES['index.html']! }]]);
  for (const file of result.outputFiles) {
    const name = path.basename(file.path) === 'app-css.css' ? 'app.css' : path.basename(file.path);
    if (ASSET_NAMES[name]) assets.set(name, { body: file.contents, contentType: ASSET_NAMES[name]! });
  }
  return assets;
}

/** The files `web:build` wrote, for a runtime without esbuild; null when there are none. */
export function readPrebuiltAssets(dir = PREBUILT_DIR): WebAssets | null {
  try {
    return new Map(Object.entries(ASSET_NAMES).map(([name, contentType]) => [name, { body: readFileSync(path.join(dir, name)), contentType }]));
  } catch {
    return null;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const out = path.resolve(process.argv[2] ?? PREBUILT_DIR);
  mkdirSync(out, { recursive: true });
  for (const [name, asset] of await buildWebAssets()) writeFileSync(path.join(out, name), asset.body);
  console.log(`live view page written to ${out}`);
}
