// The embedded database: PGlite (Postgres compiled to WebAssembly) in a folder, sized for one
// process. Imported only when no DATABASE_URL is set; an install without optional dependencies
// (the Docker image) has no PGlite at all.
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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

async function create(dir: string, loadDataDir?: Blob): Promise<PGlite> {
  const PGliteClass = await loadPglite();
  const client = new PGliteClass(dir, { startParams: [...PGliteClass.defaultStartParams, ...PGLITE_SETTINGS], loadDataDir });
  await client.waitReady;
  return client;
}

/** Opens (creating when new) a PGlite database in `dir`, or an in-memory one for 'memory://'. */
export async function openPglite(dir: string): Promise<PGlite> {
  const memory = dir.startsWith('memory://');
  if (!memory) mkdirSync(dir, { recursive: true });
  const fresh = memory || !existsSync(path.join(dir, 'PG_VERSION'));
  if (!fresh) return create(dir);
  const template = await newDatabaseTemplate();
  if (template) return create(dir, template);
  // No template could be kept (a read-only install): initdb, away from the server's memory.
  if (!memory) await initInChild(['--init', dir]);
  return create(dir);
}

/**
 * A new database starts as a copy of a template: initdb in WebAssembly takes 3-6 s of CPU, loading
 * its result (an uncompressed tar of the data folder) well under one. The template is made once per
 * installed PGlite version (by npm install's postinstall, else by the first new database), in a
 * child process, and kept beside the installed packages (node_modules/.cache).
 */
async function newDatabaseTemplate(): Promise<Blob | null> {
  const file = templateFile();
  if (!file) return null;
  if (!existsSync(file)) {
    try {
      await initInChild(['--template', file]);
    } catch {
      return null;
    }
  }
  return new Blob([readFileSync(file)]);
}

function templateFile(): string | null {
  try {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const pkgDir = entry.slice(0, entry.lastIndexOf(`${path.sep}dist${path.sep}`));
    const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
    return path.join(pkgDir, '..', '..', '.cache', 'training-graph', `pglite-${version}-template.tar`);
  } catch {
    return null;
  }
}

/** Writes the template: a new in-memory database's data folder, written whole or not at all. */
async function writeTemplate(file: string): Promise<void> {
  const client = await create('memory://');
  const tar = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer());
  await client.close();
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, tar);
  try {
    renameSync(partial, file);
  } finally {
    rmSync(partial, { force: true });
  }
}

const HERE = fileURLToPath(import.meta.url);

/**
 * initdb runs in a second WebAssembly instance whose memory (about 450 MB) stays resident until a
 * full garbage collection, which an idle server may never run. Done in a child process instead
 * (this file, run as a script), all of it goes back to the system when the child exits.
 */
async function initInChild(args: string[]): Promise<void> {
  // From the TypeScript sources (npm start, tests) the child needs tsx's loader; dist/ is plain JS.
  const execArgv = HERE.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = fork(HERE, args, { execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`creating the PGlite database (${args.join(' ')}) failed (exit ${code}): ${stderr.trim().slice(-2000)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === HERE) {
  const [mode, target] = process.argv.slice(2);
  if (mode === '--template') {
    const file = target ?? templateFile();
    if (!file) throw new Error('@electric-sql/pglite is not installed');
    await writeTemplate(file);
  } else {
    const client = await create(target!);
    await client.close();
  }
}
