// Each test file gets its own database: in-memory PGlite by default, or a fresh database on the
// real Postgres named by TEST_DATABASE_URL (created here, dropped afterwards), so the same suite
// runs against both drivers and files never see each other's rows.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll } from 'vitest';
import { openDatabase, type Database } from '../../src/store/db.js';
import { Repository } from '../../src/store/repository.js';

export interface TestDatabase {
  databaseUrl: string | null;
  dataDir: string;
  drop(): Promise<void>;
}

export const REAL_POSTGRES_URL = process.env.TEST_DATABASE_URL || null;

export async function createTestDatabase(dataDir = 'memory://'): Promise<TestDatabase> {
  if (!REAL_POSTGRES_URL) return { databaseUrl: null, dataDir, drop: async () => {} };
  const name = `tg_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(REAL_POSTGRES_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(REAL_POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    dataDir,
    async drop() {
      const a = postgres(REAL_POSTGRES_URL!, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/** A Repository on a test database of its own, migrated; close() closes and drops it. */
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
