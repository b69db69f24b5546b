// The embedded database: PGlite (Postgres compiled to WebAssembly) in a folder, sized for one
// process. Imported only when no DATABASE_URL is set; an install without optional dependencies
// (the Docker image) has no PGlite at all.
import { fork } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';

/**
 * PGlite runs Postgres inside one WebAssembly memory that grows and never shrinks, so every buffer
 * Postgres touches stays in the process's resident memory for good. Postgres' defaults size it for
 * a server of its own (128 MB of shared buffers, 64 MB for maintenance): a cache inside one process
 * needs a fraction, and the OS page cache still holds the files. `npm run bench` measures it.
 */
export const PGLITE_SETTINGS = ['-c', 'shared_buffers=16MB', '-c', 'maintenance_work_mem=16MB', '-c', 'temp_buffers=4MB', '-c', 'wal_buffers=1MB'];

async function loadPglite(): Promise<typeof PGlite> {
  try {
    return (await import('@electric-sql/pglite')).PGlite;
  } catch (err) {
    throw new Error(
      'embedded PGlite is not installed (an install with --omit=optional leaves it out, as the Docker image does): ' +
        `set DATABASE_URL to a Postgres, or install @electric-sql/pglite (${(err as Error).message})`,
    );
  }
}

async function create(dir: string): Promise<PGlite> {
  const PGliteClass = await loadPglite();
  const client = new PGliteClass(dir, { startParams: [...PGliteClass.defaultStartParams, ...PGLITE_SETTINGS] });
  await client.waitReady;
  return client;
}

/** Opens (creating when new) a PGlite database in `dir`, or an in-memory one for 'memory://'. */
export async function openPglite(dir: string): Promise<PGlite> {
  if (!dir.startsWith('memory://')) {
    mkdirSync(dir, { recursive: true });
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await initInChild(dir);
  }
  return create(dir);
}

const HERE = fileURLToPath(import.meta.url);

/**
 * A new folder is made by initdb in a second WebAssembly instance that PGlite starts, dumps and
 * drops; its memory (about 450 MB) stays resident until a full garbage collection, which an idle
 * server may never run. Done in a child process instead (this file, run as a script), all of it
 * goes back to the system when the child exits, and the server then opens the finished folder.
 */
async function initInChild(dir: string): Promise<void> {
  // From the TypeScript sources (npm start, tests) the child needs tsx's loader; dist/ is plain JS.
  const execArgv = HERE.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = fork(HERE, [dir], { execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`creating the PGlite database in ${dir} failed (exit ${code}): ${stderr.trim().slice(-2000)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === HERE) {
  const client = await create(process.argv[2]!);
  await client.close();
}
