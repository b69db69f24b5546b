// The migrated PGlite every in-memory test database starts from. Each file of the PGlite pass runs in
// a process of its own and opened an empty PGlite, then ran every migration on it: about 1.7 s of
// CPU per file on the shared machine, for the same result each time. The suite's global setup
// writes that result once (per PGlite version and set of migrations, beside the installed packages,
// like the empty template src/store/pglite.ts keeps); a test database loads it as
// `memory:///…/dump.tar` and the server's migrate at open finds nothing to do.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR } from '../../src/config/install.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A hash of the migrations: a worktree with other migrations gets templates of its own. */
export function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const f of readdirSync(MIGRATIONS_DIR, { recursive: true, encoding: 'utf8' }).sort()) {
    if (f.endsWith('.sql') || f.endsWith('.json')) hash.update(f).update(readFileSync(path.join(MIGRATIONS_DIR, f)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Where the dump for this PGlite version and these migrations lives. */
export function migratedDumpPath(): string {
  const pkg = path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json');
  const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string };
  return path.join(ROOT, 'node_modules/.cache/training-graph', `test-pglite-${version}-${migrationsHash()}-lean-wal.tar`);
}

/** `memory://` starting from the migrated dump when the global setup made it, else an empty in-memory database (migrated at open). */
export function memoryDataDir(): string {
  const dump = migratedDumpPath();
  return existsSync(dump) ? `memory://${dump}` : 'memory://';
}

/**
 * vitest's global setup: makes the dump when missing, in a child process (a PGlite instance keeps
 * hundreds of MB of WebAssembly memory, which the runner's own process would hold all run long).
 */
export default function setup(): void {
  const dump = migratedDumpPath();
  if (existsSync(dump)) return;
  const res = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/support/pglite-template-child.ts'), dump], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  // Not fatal: every test database then migrates at open, as before, only slower.
  if (res.status !== 0) console.log(`migrated PGlite template not made (exit ${res.status}): ${res.stderr.trim().split('\n').slice(-3).join(' | ')}`);
}
