// Retention of raw points: the points older than the cut of one provider's time-keyed series are
// deleted in batches of series (Repository.dropRawPointsBatch, as the collector's lease holder runs
// it through CollectionStore.dropRawPoints), the rollups stay, each series that lost points says
// where its raw points now begin (series.raw_before, MetricSeries.rawSince), and a window reaching
// before it is answered from the rollups, to the last digit. Then the 1-minute rollup's own
// retention (Repository.dropMinuteRollupsBatch, series.minute_before: a window reaching before it
// is answered from the 1-hour rollup, exact), the 1-hour one's (untouched unless asked), and a
// finished job's raw points kept past the raw cut until its own keep ends, in `points` and in
// point_chunks (a month partition holding them is not dropped whole; the other series' days in it
// are hidden by their cut, not deleted).
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PointWriteRow } from '../../src/store/repository.js';
import { rawPoints } from '../../src/store/raw-points.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, type RollupRow, rollupRows, wave } from './rollup-fixtures.js';

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

async function cutOf(seriesId: number, column: 'minute_before' | 'hour_before') {
  const [row] = await rowsOf<{ b: number | string | null }>(suite.db.db, sql`select ${sql.raw(column)}::float8 as b from series where id = ${seriesId}`);
  return row!.b === null ? null : Number(row!.b);
}

async function readAvg(id: number, from: number, to: number, maxPoints: number) {
  const r = await suite.repo.pointsAt([{ seriesId: id, keyedBy: 'time', from: new Date(from), to: new Date(to) }], maxPoints, 'AVG');
  return { rows: r.points.map((p) => [p.timestamp!.getTime(), p.value]), resolution: r.resolutions.get(id) ?? null };
}

const HOUR = 3_600_000;
const avgRows = (rows: RollupRow[], from: number, to: number) => rows.filter((r) => r.bucket >= from && r.bucket < to).map((r) => [r.bucket, r.sum! / r.n]);

describe('retention of the 1-minute and 1-hour rollups', () => {
  // The series of the describe above: raw points before CUT dropped already.
  let ids: number[] = [];
  const MINUTE_CUT = START + 12 * HOUR;

  it("drops a provider's 1-minute rows before the cut (taken to its hour), a batch of series at a time; the 1-hour rows stay", async () => {
    const rows = await rowsOf<{ id: number | string }>(
      suite.db.db,
      sql`select id::float8 as id from series where series_key in ('retained-a', 'retained-b', 'other') order by id`,
    );
    ids = rows.map((r) => Number(r.id));
    expect(ids).toHaveLength(3);
    const [a, b, other] = ids as [number, number, number];
    const minutes = new Map<number, RollupRow[]>();
    const hours = new Map<number, RollupRow[]>();
    for (const id of ids) {
      minutes.set(id, await rollupRows(suite.db.db, 'points_1m', id));
      hours.set(id, await rollupRows(suite.db.db, 'points_1h', id));
    }
    let after = 0;
    let deleted = 0;
    let batches = 0;
    for (;;) {
      // 20 minutes past the hour: the cut is the hour's start.
      const step = await suite.repo.dropMinuteRollupsBatch('baseten-1', MINUTE_CUT + 20 * 60_000, after, 1);
      deleted += step.deleted;
      batches++;
      if (step.last === null) break;
      after = step.last;
    }
    expect(batches).toBe(3);
    // 5-s samples: every minute of the 12 hours had a row, in each of the two series.
    expect(deleted).toBe(2 * 12 * 60);
    for (const id of [a, b]) {
      expect(await rollupRows(suite.db.db, 'points_1m', id)).toEqual(minutes.get(id)!.filter((r) => r.bucket >= MINUTE_CUT));
      expect(await cutOf(id, 'minute_before')).toBe(MINUTE_CUT);
      expect(await rollupRows(suite.db.db, 'points_1h', id)).toEqual(hours.get(id));
      expect(await cutOf(id, 'hour_before')).toBeNull();
    }
    // Another provider's series keeps its minutes.
    expect(await rollupRows(suite.db.db, 'points_1m', other)).toEqual(minutes.get(other));
    expect(await cutOf(other, 'minute_before')).toBeNull();
    expect((await suite.repo.dropMinuteRollupsBatch('baseten-1', MINUTE_CUT, 0, 10)).deleted).toBe(0);
  });

  it('answers a window reaching before the 1-minute cut from the 1-hour rollup, exact; after it from the 1-minute one', async () => {
    const id = ids[0]!;
    const hours = handRollup(written(id), HOUR);
    const minutes = handRollup(written(id), 60_000);
    // An hour before the minute cut, at 100 points: 1-minute rows would answer it, they are gone.
    const early = await readAvg(id, START + 6 * HOUR, START + 7 * HOUR - 1, 100);
    expect(early.resolution).toBe(3600);
    expect(early.rows).toEqual(avgRows(hours, START + 6 * HOUR, START + 7 * HOUR));
    // Two hours across the minute cut: the 1-hour rollup for the whole window.
    const across = await readAvg(id, MINUTE_CUT - HOUR, MINUTE_CUT + HOUR - 1, 100);
    expect(across.resolution).toBe(3600);
    expect(across.rows).toEqual(avgRows(hours, MINUTE_CUT - HOUR, MINUTE_CUT + HOUR));
    // An hour after the minute cut and before the raw cut: its minutes, as before.
    const later = await readAvg(id, START + 13 * HOUR, START + 14 * HOUR - 1, 100);
    expect(later.resolution).toBe(60);
    expect(later.rows).toEqual(avgRows(minutes, START + 13 * HOUR, START + 14 * HOUR));
    // The whole two days at 48 points: hourly, unchanged.
    const whole = await readAvg(id, START, START + 2 * DAY - 1, 48);
    expect(whole.resolution).toBe(3600);
    expect(whole.rows).toEqual(avgRows(hours, START, START + 2 * DAY));
    // After the raw cut: raw points.
    expect((await readAvg(id, CUT, CUT + HOUR - 1, 1000)).resolution).toBeNull();
  });

  it("drops a provider's 1-hour rows only when asked, before the cut", async () => {
    const [a, b, other] = ids as [number, number, number];
    const hours = await rollupRows(suite.db.db, 'points_1h', a);
    expect(hours[0]!.bucket).toBe(START);
    const step = await suite.repo.dropHourRollupsBatch('baseten-1', START + 3 * HOUR + 59 * 60_000, 0, 10);
    expect(step.deleted).toBe(2 * 3);
    expect(await rollupRows(suite.db.db, 'points_1h', a)).toEqual(hours.filter((r) => r.bucket >= START + 3 * HOUR));
    for (const id of [a, b]) expect(await cutOf(id, 'hour_before')).toBe(START + 3 * HOUR);
    expect(await cutOf(other, 'hour_before')).toBeNull();
    expect((await rollupRows(suite.db.db, 'points_1h', other))[0]!.bucket).toBe(START);
  });

  function written(id: number): PointWriteRow[] {
    return wave(id, START, 5_000, (2 * DAY) / 5_000);
  }
});

describe("a finished job's raw points kept longer (finishedJobRawRetentionDays)", () => {
  // October: the month's partition of point_chunks holds this provider's series alone.
  const T0 = Date.UTC(2026, 9, 20);
  const RAW_CUT = T0 + DAY;
  const KEEP_SINCE = Date.UTC(2026, 10, 1);
  const FINISHED = Date.UTC(2026, 10, 4);
  let done = 0;
  let ended = 0;
  let running = 0;
  const before = new Map<number, { rows: (number | null)[][]; resolution: number | null }>();

  async function seriesOf(job: string, status: string, finishedAt: number | null) {
    await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, finished_at, sort_at, seen_at)
      values (${job}, 'keep-1', 'keep-1:project:p', ${job}, ${job}, ${status}, ${finishedAt === null ? null : new Date(finishedAt).toISOString()}::timestamptz, now(), now())`);
    const [row] = await rowsOf<{ id: number }>(
      suite.db.db,
      sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
          values (${job}, ${job}, 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time') returning id::float8 as id`,
    );
    const id = Number(row!.id);
    await suite.repo.writePoints(wave(id, T0, 60_000, (2 * DAY) / 60_000), { expectNew: true });
    return id;
  }

  async function chunkRows(id: number) {
    const [row] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select count(*) as n from point_chunks where series_id = ${id}`);
    return Number(row!.n);
  }

  it('the points delete skips the series of jobs that finished after the keep began, not a running or long-finished one', async () => {
    done = await seriesOf('keep-1:job:done', 'SUCCEEDED', FINISHED);
    ended = await seriesOf('keep-1:job:ended', 'FAILED', T0 + 2 * DAY);
    running = await seriesOf('keep-1:job:running', 'RUNNING', null);
    for (const id of [done, ended, running]) before.set(id, await readAvg(id, T0, T0 + 2 * DAY - 1, 5000));
    let after = 0;
    for (;;) {
      const step = await suite.repo.dropRawPointsBatch('keep-1', RAW_CUT, after, 10, KEEP_SINCE);
      if (step.last === null) break;
      after = step.last;
    }
    expect(await rawCount(done, RAW_CUT)).toBe(1440);
    expect(await rawBefore(done)).toBeNull();
    for (const id of [ended, running]) {
      expect(await rawCount(id, RAW_CUT)).toBe(0);
      expect(await rawCount(id, T0 + 2 * DAY)).toBe(1440);
      expect(await rawBefore(id)).toBe(RAW_CUT);
    }
    // The kept series answers its raw points, as before the run.
    const kept = await readAvg(done, T0, T0 + 2 * DAY - 1, 5000);
    expect(kept).toEqual(before.get(done));
    expect(kept.resolution).toBeNull();
    expect(kept.rows).toHaveLength(2 * 1440);
  });

  /** The raw points a read sees of series `id` (retention's cut hides what is before it). */
  async function visibleRaw(id: number) {
    const [row] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select count(*) as n from ${rawPoints(sql`${id}::bigint`)} p`);
    return Number(row!.n);
  }

  it('compacted: the partition holding a kept series is not dropped whole, the days of the others are hidden; dropped once the keep ends', async () => {
    let after = 0;
    for (;;) {
      const step = await suite.repo.compactRawPointsBatch('keep-1', T0 + 3 * DAY, after, 10);
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
    expect(await rawCount(done, T0 + 2 * DAY)).toBe(0);
    expect(await chunkRows(done)).toBe(2);
    expect(await chunkRows(ended)).toBe(1);
    expect(await chunkRows(running)).toBe(1);
    const partitions = async () => (await suite.repo.chunkPartitions()).map((p) => p.name);
    expect(await partitions()).toContain('point_chunks_202610');

    // A cut past October's end: the month is wholly before it, but holds the kept series.
    const cut = Date.UTC(2026, 10, 5);
    expect(await suite.repo.dropRawChunks('keep-1', cut, KEEP_SINCE)).toEqual({ dropped: 0, hidden: 2 });
    expect(await partitions()).toContain('point_chunks_202610');
    expect(await chunkRows(done)).toBe(2);
    expect(await visibleRaw(done)).toBe(2 * 1440);
    expect(await rawBefore(done)).toBeNull();
    for (const id of [ended, running]) {
      // Still stored (the partition stays for the kept series), no longer read.
      expect(await chunkRows(id)).toBe(1);
      expect(await visibleRaw(id)).toBe(0);
      expect(await rawBefore(id)).toBe(cut);
    }
    expect(await readAvg(done, T0, T0 + 2 * DAY - 1, 5000)).toEqual(before.get(done));

    // The keep has ended (it began after the job's end): the month goes whole.
    expect(await suite.repo.dropRawChunks('keep-1', cut, FINISHED + 1)).toEqual({ dropped: 1, hidden: 1 });
    for (const id of [done, ended, running]) expect(await chunkRows(id)).toBe(0);
    expect(await partitions()).not.toContain('point_chunks_202610');
    expect(await rawBefore(done)).toBe(cut);
    // What is left of the series is its rollups, answered exactly.
    const rolled = await readAvg(done, T0, T0 + 2 * DAY - 1, 48);
    expect(rolled.resolution).toBe(3600);
    expect(rolled.rows).toEqual(avgRows(handRollup(wave(done, T0, 60_000, (2 * DAY) / 60_000), HOUR), T0, T0 + 2 * DAY));
  });
});
