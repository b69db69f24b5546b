// npm install's last step: the embedded database's template (src/store/pglite.ts), so the first
// `npm start` and every new test database load a ready data folder instead of running initdb.
// Skipped where PGlite (an optional dependency) or tsx (a dev dependency) is not installed, as in
// the Docker image, which runs on Postgres: a new database then makes the template itself.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const installed = (name) => {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
};

if (!installed('@electric-sql/pglite') || !installed('tsx')) {
  console.log('pglite template: skipped (PGlite or tsx not installed)');
} else {
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/store/pglite-child.ts', '--template'], { stdio: 'inherit' });
  // Not fatal: the first new database makes it instead, only slower.
  console.log(res.status === 0 ? 'pglite template: ready' : `pglite template: not made (exit ${res.status}); the first new database makes it`);
}
