// The 1-minute and 1-hour rollups are kept by the store's write door (Repository.writePoints) in
// the write's transaction: equal, to the last digit, to what the raw points give when summed in key
// order in JavaScript; unchanged by a re-write of the same points; updated by a changed value; none
// for step-keyed series.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PointWriteRow } from '../../src/store/repository.js';
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
