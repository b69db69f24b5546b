// Each test file gets its own database: in-memory PGlite by default, or a fresh database on the
// real Postgres named by TEST_DATABASE_URL (created here, dropped when the run ends), so the same suite
// runs against both drivers and files never see each other's rows.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import { openDatabase, type Database } from '../../src/store/db.js';
import { Repository } from '../../src/store/repository.js';
import { memoryDataDir, migrationsHash } from './pglite-template.js';

export interface TestDatabase {
  databaseUrl: string | null;
  dataDir: string;
  /** The file is done with it: an in-memory PGlite goes with its client; a Postgres one when the run ends. */
  drop(): Promise<void>;
}

export const REAL_POSTGRES_URL = process.env.TEST_DATABASE_URL || null;

/**
 * The migrated database every Postgres test database is copied from, named by a hash of the
 * migrations (a worktree with other migrations gets its own). Running the migrations took 0.5-0.9 s
 * per database on the shared machine, `CREATE DATABASE ... TEMPLATE` of a migrated one about what
 * an empty CREATE DATABASE takes; the server's own migrate at open then finds nothing to do.
 */
function templateName(): string {
  return `tg_template_${migrationsHash()}`;
}

let template: Promise<string> | undefined;

/** Makes the template once (per Postgres and set of migrations): under an advisory lock, as every worker may ask at once. */
function migratedTemplate(admin: postgres.Sql): Promise<string> {
  template ??= (async () => {
    const name = templateName();
    await admin.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext(${name}))`;
      const [found] = await tx`select 1 from pg_database where datname = ${name}`;
      if (found) return;
      // Built under another name and renamed when migrated: a template is never seen half made.
      const partial = `${name}_partial`;
      await admin.unsafe(`drop database if exists ${partial} with (force)`);
      await admin.unsafe(`create database ${partial}`);
      const url = new URL(REAL_POSTGRES_URL!);
      url.pathname = `/${partial}`;
      const db = await openDatabase({ databaseUrl: url.toString(), watchdogTimer: false });
      await db.close();
      await admin.unsafe(`alter database ${partial} rename to ${name}`);
    });
    return name;
  })();
  template.catch(() => (template = undefined));
  return template;
}

/**
 * `empty`: a database with no tables (for a test of the migrations themselves); else a copy of the
 * migrated template (on PGlite, in memory unless given a folder: the migrated dump,
 * test/support/pglite-template.ts).
 */
export async function createTestDatabase(dataDir?: string, opts: { empty?: boolean } = {}): Promise<TestDatabase> {
  if (!REAL_POSTGRES_URL) return { databaseUrl: null, dataDir: dataDir ?? (opts.empty ? 'memory://' : memoryDataDir()), drop: async () => {} };
  // Tagged with the run (test/support/postgres-databases.ts drops the run's databases when it ends).
  const name = `${inject('testDatabasePrefix')}${randomBytes(6).toString('hex')}`;
  // Two connections: the template's advisory lock holds one in a transaction, CREATE DATABASE cannot run in one.
  const admin = postgres(REAL_POSTGRES_URL, { max: 2, onnotice: () => {} });
  try {
    await admin.unsafe(opts.empty ? `create database ${name}` : `create database ${name} template ${await migratedTemplate(admin)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(REAL_POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    dataDir: dataDir ?? 'memory://',
    // Nothing here: the run drops its databases after its last file (test/support/postgres-databases.ts),
    // as a DROP DATABASE waits for a checkpoint. The file has closed its own connections by now.
    async drop() {},
  };
}

/** A Repository on a test database of its own, migrated; close() closes it (and lets the database go: drop()). */
export async function openTestRepository(): Promise<{ db: Database; repo: Repository; close(): Promise<void> }> {
  const tdb = await createTestDatabase();
  const db = await openDatabase({ databaseUrl: tdb.databaseUrl, dataDir: tdb.dataDir });
  return {
    db,
    repo: Repository.of(db),
    async close() {
      await db.close();
      await tdb.drop();
    },
  };
}

/** A repository on a database of its own for the suite that calls this: opened before its tests, closed after them. */
export function useTestRepository(): { readonly db: Database; readonly repo: Repository } {
  let store: Awaited<ReturnType<typeof openTestRepository>> | undefined;
  beforeAll(async () => {
    store = await openTestRepository();
  });
  afterAll(() => store?.close());
  return {
    get db() {
      return store!.db;
    },
    get repo() {
      return store!.repo;
    },
  };
}
