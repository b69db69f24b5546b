// The 1-minute and 1-hour rollups are kept by the store's write door (Repository.writePoints) in
// the write's transaction: equal, to the last digit, to what the raw points give when summed in key
// order in JavaScript; unchanged by a re-write of the same points; updated by a changed value; none
// for step-keyed series.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PointWriteRow } from '../../src/store/repository.js';
import { bucketOf } from '../../src/store/repo-point-writes.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, rollupRows, wave } from './rollup-fixtures.js';

const suite = useTestRepository();

describe('rollups kept on write', () => {
  it('equal the raw points, whichever write path, and a re-write changes nothing', async () => {
    const [timeId, stepId] = await insertSeries(suite.db.db, ['rollup-a', 'time'], ['rollup-b', 'step']);
    const start = Date.UTC(2026, 10, 20, 10, 59, 30);
    // Five hours begun (10:59:30 to 14:06), a sample every 7 s (so minutes hold 8 or 9), with a null among them.
    const points = wave(timeId!, start, 7_000, 1_600);
    points[100] = [timeId!, points[100]![1], points[100]![2], null, null];
    // The first half copied straight in (a new series), the second merged through the staging table.
    await suite.repo.writePoints(points.slice(0, 800), { expectNew: true });
    await suite.repo.writePoints(points.slice(800));
    await suite.repo.writePoints([[stepId!, 5, start, 5, 1.5] as PointWriteRow]);
    // Nor through a new series' write, whose rollup rows are copied straight in.
    await suite.repo.writePoints([[stepId!, 6, start, 6, 2.5] as PointWriteRow], { expectNew: true });

    const expected1m = handRollup(points, 60_000);
    const expected1h = handRollup(points, 3_600_000);
    expect(expected1h.length).toBe(5);
    expect(await rollupRows(suite.db.db, 'points_1m', timeId!)).toEqual(expected1m);
    expect(await rollupRows(suite.db.db, 'points_1h', timeId!)).toEqual(expected1h);

    // The same points again, through both paths: the rollups stay as they were.
    await suite.repo.writePoints(points.slice(0, 900), { expectNew: true });
    await suite.repo.writePoints(points.slice(700));
    expect(await rollupRows(suite.db.db, 'points_1m', timeId!)).toEqual(expected1m);
    expect(await rollupRows(suite.db.db, 'points_1h', timeId!)).toEqual(expected1h);

    // A changed value replaces its old one in both rollups.
    const changed = [...points];
    changed[5] = [timeId!, points[5]![1], points[5]![2], null, 1234.5];
    await suite.repo.writePoints([changed[5]!]);
    expect(await rollupRows(suite.db.db, 'points_1m', timeId!)).toEqual(handRollup(changed, 60_000));
    expect(await rollupRows(suite.db.db, 'points_1h', timeId!)).toEqual(handRollup(changed, 3_600_000));

    // A step-keyed series has no time buckets.
    const [row] = await rowsOf<{ n: number }>(
      suite.db.db,
      sql`select (select count(*) from points_1m where series_id = ${stepId}) + (select count(*) from points_1h where series_id = ${stepId}) as n`,
    );
    expect(Number(row!.n)).toBe(0);
  });
});

describe('rollups of hours a write appends to', () => {
  it('fold the new points into the held rows, to the last digit, without reading the hour back', async () => {
    const [id] = await insertSeries(suite.db.db, ['rollup-appended-sweeps', 'time']);
    const start = Date.UTC(2026, 10, 23, 9, 58, 0);
    // Values whose sum depends on the order of adding (1e16 + 1 loses the 1; 0.1 + 0.2 is not 0.3), and nulls.
    const values = [1e16, 1, -1e16, 0.1, 0.2, null, 0.3, 3.7, -2.5, 1e-9, null, 7, 1e16, 1, 1, -1e16];
    const points = Array.from({ length: 400 }, (_, i) => {
      const t = start + i * 13_000;
      return [id!, t, t, null, values[i % values.length]!] as PointWriteRow;
    });
    // As a collector writes: each sweep starts a little before its last reach (its overlap, stored
    // already), and ends inside a minute and an hour the next sweep continues.
    const texts: string[] = [];
    const unwatch = suite.db.watchStatements((text) => texts.push(text));
    let rollupStatements = 0;
    for (let end = 7; end <= points.length; end += 7) {
      texts.length = 0;
      await suite.repo.writePoints(points.slice(Math.max(0, end - 10), end));
      rollupStatements += texts.filter((t) => /delete from rollup_stage/.test(t)).length;
      const written = points.slice(0, end);
      expect(await rollupRows(suite.db.db, 'points_1m', id!)).toEqual(handRollup(written, 60_000));
      expect(await rollupRows(suite.db.db, 'points_1h', id!)).toEqual(handRollup(written, 3_600_000));
    }
    unwatch();
    // Only the writes that began an hour (no row yet: their rows are the batch's) staged rollup rows.
    const hoursBegun = new Set(points.slice(0, 399).map((p) => bucketOf(p[1], 3_600_000))).size;
    expect(rollupStatements).toBeLessThanOrEqual(hoursBegun);
    expect(rollupStatements).toBeGreaterThan(0);
  });
});

/** Both rollups of a series recomputed from its stored points by migration 0007's aggregates. */
async function recomputed(seriesId: number, width: number) {
  const rows = await rowsOf<Record<string, string | number | null>>(
    suite.db.db,
    sql`select p.key - ((p.key % ${width}) + ${width}) % ${width} as bucket, count(p.value)::int as n, min(p.value) as min, max(p.value) as max,
          sum(p.value order by p.key) as sum, (array_agg(p.value order by p.key desc) filter (where p.value is not null))[1] as last
        from points p where p.series_id = ${seriesId} group by 1 order by 1`,
  );
  const num = (v: string | number | null | undefined) => (v == null ? null : Number(v));
  return rows.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n), min: num(r.min), max: num(r.max), sum: num(r.sum), last: num(r.last) }));
}

describe('rollups of hours a write is the first to touch', () => {
  it('are computed from the batch exactly as the recompute from points gives them', async () => {
    const [id] = await insertSeries(suite.db.db, ['rollup-append', 'time']);
    const start = Date.UTC(2026, 10, 21, 8, 0, 0);
    // Sums whose order shows in the last digit (0.1 + 0.2 + 0.3 differs from 0.3 + 0.2 + 0.1), a
    // null among them, an hour of a single null value (n = 0), negative values and a -0.
    const values = (i: number) => (i % 97 === 13 ? null : [0.1, 0.2, 0.3, -1e-7, 1 / 3, -0, 12345.678][i % 7]! * (1 + (i % 11)));
    const points: PointWriteRow[] = Array.from({ length: 2_000 }, (_, i) => {
      const t = start + i * 11_000;
      return [id!, t, t, null, values(i)] as PointWriteRow;
    });
    const lonely = start + 10 * 3_600_000;
    points.push([id!, lonely, lonely, null, null]);
    // The collector's way: a new series' first fetch, then appends past the last stored point;
    // the first append starts inside an hour the fetch filled (that hour is read back), the
    // second at an hour of its own (computed from the batch).
    const hourOf = (i: number) => bucketOf(points[i]![1], 3_600_000);
    expect(hourOf(700)).toBe(hourOf(699));
    expect(hourOf(1_637)).toBeGreaterThan(hourOf(1_636));
    await suite.repo.writePoints(points.slice(0, 700), { expectNew: true });
    // Out of order (every other row, then the rest): taken in key order all the same.
    const middle = points.slice(700, 1_637);
    await suite.repo.writePoints([...middle.filter((_, i) => i % 2 === 1), ...middle.filter((_, i) => i % 2 === 0)]);
    // Newest first, as a caller may give rows.
    await suite.repo.writePoints(points.slice(1_637).reverse());
    const kept1m = await rollupRows(suite.db.db, 'points_1m', id!);
    const kept1h = await rollupRows(suite.db.db, 'points_1h', id!);
    expect(kept1h.at(-1)).toEqual({ bucket: lonely, n: 0, min: null, max: null, sum: null, last: null });
    expect(kept1m).toEqual(await recomputed(id!, 60_000));
    expect(kept1h).toEqual(await recomputed(id!, 3_600_000));
    expect(kept1m).toEqual(handRollup(points, 60_000));
    expect(kept1h).toEqual(handRollup(points, 3_600_000));

    // A re-write changes no stored point, so no hour is rolled up again: the same rows, digit for digit.
    await suite.repo.writePoints(points);
    expect(await rollupRows(suite.db.db, 'points_1m', id!)).toEqual(kept1m);
    expect(await rollupRows(suite.db.db, 'points_1h', id!)).toEqual(kept1h);
  });

  it('read no points back for an hour without rollup rows: a point stored behind the write door is not counted', async () => {
    const [id] = await insertSeries(suite.db.db, ['rollup-behind', 'time']);
    const hour = Date.UTC(2026, 10, 22, 3, 0, 0);
    await suite.db.db.execute(
      sql`insert into points (series_id, key, ts, step, value) values (${id}, ${hour}, ${new Date(hour).toISOString()}::timestamptz, null, 100)`,
    );
    await suite.repo.writePoints([[id!, hour + 60_000, hour + 60_000, null, 1] as PointWriteRow]);
    expect(await rollupRows(suite.db.db, 'points_1h', id!)).toEqual([{ bucket: hour, n: 1, min: 1, max: 1, sum: 1, last: 1 }]);
    // A write after every point the hour holds folds its points into the hour's rows: nothing is read back.
    await suite.repo.writePoints([[id!, hour + 120_000, hour + 120_000, null, 2] as PointWriteRow]);
    expect(await rollupRows(suite.db.db, 'points_1h', id!)).toEqual([{ bucket: hour, n: 2, min: 1, max: 2, sum: 3, last: 2 }]);
    // A write among the points the hour holds recomputes the hour from every stored point.
    await suite.repo.writePoints([[id!, hour + 30_000, hour + 30_000, null, 4] as PointWriteRow]);
    expect(await rollupRows(suite.db.db, 'points_1h', id!)).toEqual([{ bucket: hour, n: 4, min: 1, max: 100, sum: 107, last: 2 }]);
  });
});
