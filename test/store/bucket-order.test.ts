// A downsampled bucket's average is summed in key order whatever plan reads it: downsampleHeld
// (the answer given before the cache write) sums in key order, and a float sum depends on its
// order, so a plan that reads in heap order (a bitmap or sequential scan, chosen once the
// statistics say so) would answer the same points with another last digit. Here the heap order is
// made unlike the key order for real (a series written in two parts, the second merged in) and
// index scans are turned off for the database, so no plan can give key order by accident.
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/db.js';
import { Repository, type PointWriteRow } from '../../src/store/repository.js';
import { downsampleHeld, type HeldPoints } from '../../src/store/shaping.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const SERIES = 4242;
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const N = 240;
// Values of very different sizes, so a sum's last digit depends on the order of its terms.
const valueAt = (i: number) => (i % 3 === 0 ? 1e6 + i / 7 : i % 3 === 1 ? 0.1 * i : 1 / (i + 3));
const rows: PointWriteRow[] = Array.from({ length: N }, (_, i) => [SERIES, T0 + i * 15_000, T0 + i * 15_000, null, valueAt(i)]);

describe('Repository.pointsOf averages a bucket in key order', () => {
  let tdb: TestDatabase;
  let db: Database;
  let repo: Repository;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    if (tdb.databaseUrl) {
      // Every connection the pool opens from here on plans without index scans.
      const admin = postgres(tdb.databaseUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`do $$ begin execute format('alter database %I set enable_indexscan = off', current_database()); end $$`);
      await admin.end();
    }
    db = await openDatabase({ databaseUrl: tdb.databaseUrl, dataDir: tdb.dataDir });
    // PGlite has one session: the setting holds for every statement after it.
    if (!tdb.databaseUrl) await db.db.execute(sql`set enable_indexscan = off`);
    repo = Repository.of(db);
    // Even keys copied first, odd keys merged in after them: the heap holds the series out of key order.
    await repo.writePoints(
      rows.filter((_, i) => i % 2 === 0),
      { expectNew: true },
    );
    await repo.writePoints(rows.filter((_, i) => i % 2 === 1));
  });
  afterAll(async () => {
    await db?.close();
    await tdb?.drop();
  });

  it('gives the held answer to the last digit, where heap order would not', async () => {
    // The premise, checked: a plain read comes back in heap order, not key order...
    const scanned = await rowsOf<{ key: string | number }>(db.db, sql`select key from points where series_id = ${SERIES}`);
    const heapKeys = scanned.map((r) => Number(r.key));
    expect(heapKeys).toHaveLength(N);
    expect(heapKeys).not.toEqual([...heapKeys].sort((a, b) => a - b));
    // ...and summed in that order a bucket's average differs from the key-ordered one.
    const maxPoints = 4;
    // The buckets pointsOf cuts: equal widths of the key range, from its first key.
    const width = Math.max(1, Math.ceil(((N - 1) * 15_000 + 1) / maxPoints));
    const bucketOf = (key: number) => Math.floor((key - T0) / width);
    const valueByKey = new Map(rows.map((r) => [r[1], r[4]!]));
    const heapAvg = (b: number) => {
      const vs = heapKeys.filter((k) => bucketOf(k) === b).map((k) => valueByKey.get(k)!);
      return vs.reduce((a, v) => a + v, 0) / vs.length;
    };

    const held: HeldPoints = {
      length: N,
      key: Float64Array.from(rows, (r) => r[1]),
      ts: Float64Array.from(rows, (r) => r[2]!),
      step: new Float64Array(N).fill(Number.NaN),
      value: Float64Array.from(rows, (r) => r[4]!),
    };
    const window = { seriesId: SERIES, from: null, to: null, keyedBy: 'time' as const };
    const expected = downsampleHeld(SERIES, held, window, maxPoints, 'AVG');
    expect(expected).toHaveLength(maxPoints);
    expect(expected.some((p, b) => p.value !== heapAvg(b))).toBe(true);

    const answered = await repo.pointsOf([window], maxPoints, 'AVG');
    expect(answered).toEqual(expected);
  });
});
