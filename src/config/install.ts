// Where this installation's files are: the folder that holds package.json and migrations/ (the
// checkout, or the image's /app). Found from this module's own place, which differs between the
// TypeScript sources (src/config) and the built bundle (a file somewhere under dist/), so every
// file the server reads beside itself is named from here, never relative to the module asking.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'migrations'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no installation (package.json and migrations/) above ${from}`);
  }
}

export const APP_ROOT = findRoot(here);

/** True under tsx (npm start, tests); false in the built dist/ (production, the image). */
export const FROM_SOURCES = import.meta.url.endsWith('.ts');

/** The built server, `npm run build`'s output. */
export const DIST_DIR = path.join(APP_ROOT, 'dist');

export const MIGRATIONS_DIR = path.join(APP_ROOT, 'migrations');
