// Two replicas started at once on an empty PostgreSQL database: each runs the migrations at open.
// Without a lock both created the same tables together and one failed ("relation already exists",
// seen on `CREATE TABLE "fetch_errors"` when the replicas test started both at once). Under the
// migration lock one migrates, the other waits, finds them applied and opens. PGlite has one
// process and one connection: there is nothing to race.
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY, openDatabase, type Database } from '../../src/store/db.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';

describe.runIf(REAL_POSTGRES_URL)('migrations of two replicas opening one empty database at once (real Postgres) [needs TEST_DATABASE_URL]', () => {
  const opened: Database[] = [];
  let db: TestDatabase | undefined;
  afterAll(async () => {
    for (const d of opened) await d.close();
    await db?.drop();
  });

  it('one migrates while the other waits on the lock; both open on the migrated schema', async () => {
    db = await createTestDatabase(undefined, { empty: true });
    const url = db.databaseUrl!;
    // Hold the lock first, so both openings are certain to be waiting on it together, then let go.
    const holder = postgres(url, { max: 1, onnotice: () => {} });
    await holder.unsafe(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    const opening = [0, 1].map(() => openDatabase({ databaseUrl: url, maxConnections: 2, watchdogTimer: false }));
    const probe = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // Both are waiting on the lock: two sessions besides the holder ask for it and are not granted.
      await expect
        .poll(
          async () =>
            (
              await probe.unsafe(
                `select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${MIGRATION_LOCK_KEY % 2 ** 32} and not granted`,
              )
            )[0]!.n,
          { timeout: 60_000, interval: 20 },
        )
        .toBe(2);
      await holder.end();
      opened.push(...(await Promise.all(opening)));
      const [tables] = await probe.unsafe(
        `select count(*)::int as n from information_schema.tables where table_schema = 'public' and table_name in ('points', 'fetch_errors', 'series')`,
      );
      expect(tables!.n).toBe(3);
      const [applied] = await probe.unsafe(`select count(*)::int as n from drizzle.__drizzle_migrations`);
      expect(applied!.n).toBeGreaterThan(0);
      // Each migration applied once, not once per replica.
      const [distinct] = await probe.unsafe(`select count(distinct hash)::int as n from drizzle.__drizzle_migrations`);
      expect(distinct!.n).toBe(applied!.n);
    } finally {
      await probe.end();
    }
  });
});
