// The migrated dump every in-memory test database loads (test/support/pglite-template-child.ts)
// carries a WAL segment cut after its last written page: a database started from it must take
// writes past the cut, checkpoints and segment switches as any database does, and come back whole.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PGlite } from '@electric-sql/pglite';
import { openPglite } from '../../src/store/pglite.js';
import { memoryDataDir } from '../support/pglite-template.js';

describe('the migrated PGlite dump', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await openPglite(memoryDataDir());
  });
  afterAll(() => db?.close());

  it('starts from a short WAL segment, with the migrated tables', async () => {
    expect(memoryDataDir()).toMatch(/^memory:\/\/\/.+\.tar$/);
    const wal = (await db.query<{ size: string }>(`select size::text from pg_ls_waldir()`)).rows;
    expect(wal).toHaveLength(1);
    expect(Number(wal[0]!.size)).toBeLessThan(1024 * 1024);
    const tables = (await db.query<{ n: number }>(`select count(*)::int as n from pg_tables where tablename in ('series', 'points', 'jobs')`)).rows;
    expect(tables[0]!.n).toBe(3);
  });

  it('takes writes past the cut, across checkpoints and new segments, and reads them back', async () => {
    // About 40 MB of WAL: past the cut segment's 16 MB and into the next two.
    await db.exec(`create table wal_probe (i int primary key, pad text);
      insert into wal_probe select g, repeat('x', 200) from generate_series(1, 100000) g;
      checkpoint;
      update wal_probe set pad = repeat('y', 200);
      checkpoint;`);
    await db.query('select pg_switch_wal()');
    await db.exec(`insert into wal_probe select g, 'z' from generate_series(100001, 100100) g; checkpoint;`);
    const r = (await db.query<{ n: number; ys: number }>(`select count(*)::int as n, count(*) filter (where pad like 'y%')::int as ys from wal_probe`))
      .rows[0]!;
    expect(r).toEqual({ n: 100_100, ys: 100_000 });
  });
});
