// The embedded database: PGlite (Postgres compiled to WebAssembly) in a folder, sized for one
// process. Imported only when no DATABASE_URL is set; an install without optional dependencies
// (the Docker image) has no PGlite at all.
import { fork } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { APP_ROOT, DIST_DIR, FROM_SOURCES } from '../config/install.js';

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

/**
 * A tar PGlite loads a database from, read back as the bytes it was made of. PGlite takes the tar
 * as a Blob and reads it whole with arrayBuffer(); Node reads a Blob back through a stream, chunk by
 * chunk into one buffer: about 130 ms of CPU for a 26 MB tar (docs/testing.md, 2026-12-02).
 */
class TarFile extends Blob {
  readonly #bytes: Uint8Array<ArrayBuffer>;
  constructor(bytes: Uint8Array<ArrayBuffer>) {
    super([bytes], { type: 'application/x-tar' });
    this.#bytes = bytes;
  }
  override async arrayBuffer(): Promise<ArrayBuffer> {
    // The bytes are this load's own (each load reads the file anew): no copy. A view into a larger
    // buffer is copied out, so PGlite never sees bytes beyond the tar.
    const b = this.#bytes;
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.slice().buffer;
  }
}

/** Opens (creating when new) a PGlite database in `dir`, or an in-memory one for 'memory://'. */
export async function openPglite(dir: string): Promise<PGlite> {
  if (dir.startsWith('memory://')) {
    // `memory:///path/to/dump.tar` starts from that dump (the tests' migrated template) instead of
    // an empty cluster.
    const dump = /^memory:\/\/(\/.+\.tar)$/.exec(dir)?.[1] ?? (await newDatabaseTemplate())?.tar;
    return create(dir, dump ? new TarFile(readFileSync(dump)) : undefined);
  }
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    const template = await newDatabaseTemplate();
    mkdirSync(path.dirname(path.resolve(dir)), { recursive: true });
    // A folder is copied file by file: loading the tar through PGlite would grow its WebAssembly
    // memory by the whole folder, for good.
    if (template) cpSync(template.folder, dir, { recursive: true });
    // No template could be kept (a read-only install): initdb, away from the server's memory.
    else await initInChild(['--init', dir]);
  }
  return create(dir);
}

/**
 * A new database starts as a copy of a template: initdb in WebAssembly takes 3-6 s of CPU, a copy
 * of its result well under one. The template (the data folder, and the same as a tar for in-memory
 * databases) is made once per installed PGlite version, by npm install's postinstall or else by
 * the first new database, in a child process, and kept beside the installed packages
 * (node_modules/.cache/training-graph).
 */
async function newDatabaseTemplate(): Promise<{ folder: string; tar: string } | null> {
  const base = templateBase();
  if (!base) return null;
  const template = { folder: `${base}-template`, tar: `${base}-template.tar` };
  if (!existsSync(path.join(template.folder, 'PG_VERSION')) || !existsSync(template.tar)) {
    try {
      await initInChild(['--template']);
    } catch {
      return null;
    }
  }
  return template;
}

/** node_modules/.cache/training-graph/pglite-<version>, or null where PGlite is not installed. */
function templateBase(): string | null {
  try {
    const entry = createRequire(path.join(APP_ROOT, 'package.json')).resolve('@electric-sql/pglite');
    const pkgDir = entry.slice(0, entry.lastIndexOf(`${path.sep}dist${path.sep}`));
    const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
    return path.join(pkgDir, '..', '..', '.cache', 'training-graph', `pglite-${version}`);
  } catch {
    return null;
  }
}

/** Writes the template folder and tar, each whole or not at all (concurrent first starts may race). */
async function writeTemplate(base: string): Promise<void> {
  mkdirSync(path.dirname(base), { recursive: true });
  const partial = `${base}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  const client = await create(partial);
  const tar = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer());
  await client.close();
  writeFileSync(`${partial}.tar`, tar);
  try {
    renameSync(`${partial}.tar`, `${base}-template.tar`);
    if (!existsSync(path.join(`${base}-template`, 'PG_VERSION'))) {
      rmSync(`${base}-template`, { recursive: true, force: true });
      renameSync(partial, `${base}-template`);
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
    rmSync(`${partial}.tar`, { force: true });
  }
}

/**
 * initdb runs in a second WebAssembly instance whose memory (about 450 MB) stays resident until a
 * full garbage collection, which an idle server may never run. Done in a child process instead
 * (pglite-child.ts), all of it goes back to the system when the child exits. From the sources the
 * child needs tsx's loader; the built one is plain JS in dist/.
 */
const CHILD = FROM_SOURCES ? path.join(APP_ROOT, 'src/store/pglite-child.ts') : path.join(DIST_DIR, 'store/pglite-child.js');

async function initInChild(args: string[]): Promise<void> {
  const child = fork(CHILD, args, { execArgv: FROM_SOURCES ? ['--import', 'tsx'] : [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`creating the PGlite database (${args.join(' ')}) failed (exit ${code}): ${stderr.trim().slice(-2000)}`);
}

/** What the child process runs: `--template` writes the shared template, else a new database at `target`. */
export async function runPgliteChild(mode: string | undefined, target: string | undefined): Promise<void> {
  if (mode === '--template') {
    const base = templateBase();
    if (!base) throw new Error('@electric-sql/pglite is not installed');
    await writeTemplate(base);
  } else {
    const client = await create(target!);
    await client.close();
  }
}
