// DATABASE_POOL_SIZE bounds the connections a replica opens to Postgres: statements beyond it are
// pipelined on the open ones instead of each getting a backend of its own. A job list's page is
// read on a small client of its own (Database.shortReads), apart from that pool.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_DATABASE_POOL_SIZE, loadConfig } from '../../src/config/index.js';
import { openDatabase } from '../../src/store/db.js';
import { Repository } from '../../src/store/repository.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';

describe('DATABASE_POOL_SIZE', () => {
  it('defaults to DEFAULT_DATABASE_POOL_SIZE and takes a count of connections', () => {
    expect(loadConfig({}).databasePoolSize).toBe(DEFAULT_DATABASE_POOL_SIZE);
    expect(loadConfig({ DATABASE_POOL_SIZE: '4' }).databasePoolSize).toBe(4);
  });

  it('refuses what is not a count from 1 to 100, naming the key', () => {
    for (const bad of ['0', '101', '2.5', 'many']) {
      expect(() => loadConfig({ DATABASE_POOL_SIZE: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ DATABASE_POOL_SIZE: bad })).toThrow(/environment\.DATABASE_POOL_SIZE/);
    }
  });
});

describe.runIf(REAL_POSTGRES_URL)('the pool size on a real Postgres [needs TEST_DATABASE_URL]', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  /** The distinct backends that answered `statements` statements sent at once. */
  async function backendsFor(maxConnections: number, statements: number): Promise<number> {
    const db = await openDatabase({ databaseUrl: database.databaseUrl, maxConnections });
    try {
      const rows = await Promise.all(Array.from({ length: statements }, () => db.db.execute(sql`select pg_backend_pid() as pid`)));
      // postgres.js answers execute() with the rows themselves.
      return new Set(rows.map((r) => Number((r as unknown as { pid: number }[])[0]!.pid))).size;
    } finally {
      await db.close();
    }
  }

  it('sends statements beyond the pool over the connections it has', async () => {
    expect(await backendsFor(2, 8)).toBeLessThanOrEqual(2);
    // The bound is the setting's: a larger pool gives the same statements more backends.
    expect(await backendsFor(8, 8)).toBeGreaterThan(2);
  });

  it("reads a job list's page while every connection of the pool is taken", async () => {
    const db = await openDatabase({ databaseUrl: database.databaseUrl, maxConnections: 1 });
    try {
      const repo = Repository.of(db);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      // A long write holds the pool's only connection (as a cold answer's COPY holds one).
      const write = db.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        holding();
        await released;
      });
      await held;
      let otherRead = false;
      const other = repo.projectsOf(['bt']).then(() => (otherRead = true));
      expect(await repo.jobsPage({ filter: {}, limit: 20, cursor: null })).toEqual([]);
      // The page did not wait for the pool: a read of the pool is still queued behind the write.
      expect(otherRead).toBe(false);
      release();
      await Promise.all([write, other]);
      expect(otherRead).toBe(true);
    } finally {
      await db.close();
    }
  });
});
