// Retention of raw points: the points older than the cut of one provider's time-keyed series are
// deleted in batches of series (Repository.dropRawPointsBatch, as the collector's lease holder runs
// it through CollectionStore.dropRawPoints), the rollups stay, each series that lost points says
// where its raw points now begin (series.raw_before, MetricSeries.rawSince), and a window reaching
// before it is answered from the rollups, to the last digit.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PointWriteRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, rollupRows, wave } from './rollup-fixtures.js';

const suite = useTestRepository();
const START = Date.UTC(2026, 10, 18, 0, 0, 0);
const DAY = 86_400_000;
const CUT = START + DAY + 30 * 60_000;

async function insertJob(id: string, providerId: string) {
  await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
    values (${id}, ${providerId}, ${`${providerId}:project:p`}, ${id}, ${id}, 'RUNNING', now(), now())`);
}

async function rawCount(seriesId: number, before: number) {
  const [row] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select count(*) as n from points where series_id = ${seriesId} and key < ${before}`);
  return Number(row!.n);
}

async function rawBefore(seriesId: number) {
  const [row] = await rowsOf<{ b: number | string | null }>(suite.db.db, sql`select raw_before::float8 as b from series where id = ${seriesId}`);
  return row!.b === null ? null : Number(row!.b);
}

describe('retention of raw points', () => {
  const written = new Map<number, PointWriteRow[]>();
  let ids: number[] = [];

  it("drops a provider's raw points before the cut, a batch of series at a time, and keeps the rollups", async () => {
    await insertJob('baseten-1:job:rollups', 'baseten-1');
    ids = await insertSeries(suite.db.db, ['retained-a', 'time'], ['retained-b', 'time'], ['retained-steps', 'step']);
    await insertJob('baseten-2:job:other', 'baseten-2');
    const [other] = await rowsOf<{ id: number }>(
      suite.db.db,
      sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
          values ('other', 'baseten-2:job:other', 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time') returning id::float8 as id`,
    );
    const otherId = Number(other!.id);
    for (const id of [ids[0]!, ids[1]!, otherId]) {
      written.set(id, wave(id, START, 5_000, (2 * DAY) / 5_000));
      await suite.repo.writePoints(written.get(id)!, { expectNew: true });
    }
    await suite.repo.writePoints([[ids[2]!, 3, START, 3, 0.5] as PointWriteRow]);
    const hoursBefore = await rollupRows(suite.db.db, 'points_1h', ids[0]!);

    // One series a statement: three batches for the provider's two time-keyed series.
    let after = 0;
    let deleted = 0;
    let batches = 0;
    for (;;) {
      const step = await suite.repo.dropRawPointsBatch('baseten-1', CUT, after, 1);
      deleted += step.deleted;
      batches++;
      if (step.last === null) break;
      after = step.last;
    }
    expect(batches).toBe(3);
    expect(deleted).toBe(2 * ((CUT - START) / 5_000));
    for (const id of [ids[0]!, ids[1]!]) {
      expect(await rawCount(id, CUT)).toBe(0);
      expect(await rawCount(id, START + 2 * DAY)).toBe((START + 2 * DAY - CUT) / 5_000);
      expect(await rawBefore(id)).toBe(CUT);
      expect(await rollupRows(suite.db.db, 'points_1m', id)).toEqual(handRollup(written.get(id)!, 60_000));
    }
    expect(await rollupRows(suite.db.db, 'points_1h', ids[0]!)).toEqual(hoursBefore);
    // Another provider's series, and a step-keyed one, keep everything.
    expect(await rawCount(otherId, CUT)).toBe((CUT - START) / 5_000);
    expect(await rawBefore(otherId)).toBeNull();
    expect(await rawCount(ids[2]!, CUT)).toBe(1);

    // Again with the same cut: nothing left to drop.
    expect((await suite.repo.dropRawPointsBatch('baseten-1', CUT, 0, 10)).deleted).toBe(0);
  });

  it('answers a window reaching before the cut from the rollups, exact', async () => {
    const id = ids[0]!;
    const points = written.get(id)!;
    const read = async (from: number, to: number, maxPoints: number) => {
      const r = await suite.repo.pointsAt([{ seriesId: id, keyedBy: 'time', from: new Date(from), to: new Date(to) }], maxPoints, 'AVG');
      return { rows: r.points.map((p) => [p.timestamp!.getTime(), p.value]), resolution: r.resolutions.get(id) ?? null };
    };
    const whole = await read(START, START + 2 * DAY - 1, 48);
    expect(whole.resolution).toBe(3600);
    expect(whole.rows).toEqual(handRollup(points, 3_600_000).map((r) => [r.bucket, r.sum! / r.n]));
    // An hour of the dropped day, at 100 points: its raw points are gone, its minutes answer.
    const hour = await read(START + 6 * 3_600_000, START + 7 * 3_600_000 - 1, 100);
    expect(hour.resolution).toBe(60);
    expect(hour.rows).toEqual(
      handRollup(points, 60_000)
        .filter((r) => r.bucket >= START + 6 * 3_600_000 && r.bucket < START + 7 * 3_600_000)
        .map((r) => [r.bucket, r.sum! / r.n]),
    );
    // A window wholly after the cut reads raw points, as before.
    const late = await read(CUT, CUT + 3_600_000 - 1, 1000);
    expect(late.resolution).toBeNull();
    expect(late.rows).toHaveLength(720);
  });
});
