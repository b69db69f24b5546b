// Compaction of the 1-minute rollup's settled days into rollup_chunks_1m (a row per series and UTC
// day): every read answered from the 1-minute rollup is the same before, half-way and after (the
// buckets as stored and merged, in the four aggregations, windows reaching before raw retention's
// cut, unbounded ones), a write into a compacted day keeps the rollup exact (the same points, a
// changed value, a first fetch again, an hour that held nothing), and 1-minute retention drops
// whole month partitions where only the provider's series are in them.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Aggregation } from '../../src/domain/types.js';
import type { PointWriteRow, SeriesWindow } from '../../src/store/repository.js';
import { rollup1m } from '../../src/store/rollup-chunks.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, type RollupRow, rollupRows, wave } from './rollup-fixtures.js';

const suite = useTestRepository();
// Two days of October and two of November: two month partitions.
const START = Date.UTC(2026, 9, 30, 0, 0, 0);
const DAY = 86_400_000;
const HOUR = 3_600_000;
const MINUTE = 60_000;

async function insertJob(id: string, providerId: string) {
  await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
    values (${id}, ${providerId}, ${`${providerId}:project:p`}, ${id}, ${id}, 'RUNNING', now(), now())`);
}

async function count(table: 'points_1m' | 'rollup_chunks_1m', seriesId: number, where = sql`true`): Promise<number> {
  const [row] = await rowsOf<{ n: number | string }>(
    suite.db.db,
    sql`select count(*)::int as n from ${sql.raw(table)} c where c.series_id = ${seriesId} and ${where}`,
  );
  return Number(row!.n);
}

/** A series' 1-minute rollup as the store reads it (points_1m and the chunks), in bucket order. */
async function minuteRows(seriesId: number): Promise<RollupRow[]> {
  const rows = await rowsOf<Record<string, string | number | null>>(
    suite.db.db,
    sql`select m.bucket::float8 as bucket, m.n, m.min, m.max, m.sum, m.last from ${rollup1m(sql`${seriesId}::bigint`)} m order by m.bucket`,
  );
  const num = (v: string | number | null | undefined) => (v == null ? null : Number(v));
  return rows.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n), min: num(r.min), max: num(r.max), sum: num(r.sum), last: num(r.last) }));
}

/** The 1-minute rollup's settled days of baseten-1 and baseten-3 (or the providers given), in batches of one series. */
async function compactAll(before: number, providers = ['baseten-1', 'baseten-3']): Promise<number> {
  let moved = 0;
  for (const providerId of providers) {
    for (let after = 0; ; ) {
      const step = await suite.repo.compactRollupsBatch(providerId, before, after, 1);
      moved += step.rows;
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
  }
  return moved;
}

async function compactRaw(before: number): Promise<void> {
  for (const providerId of ['baseten-1', 'baseten-3']) {
    for (let after = 0; ; ) {
      const step = await suite.repo.compactRawPointsBatch(providerId, before, after, 5);
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
  }
}

async function insertOwnSeries(key: string, jobId: string): Promise<number> {
  const [row] = await rowsOf<{ id: number }>(
    suite.db.db,
    sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
        values (${key}, ${jobId}, 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time') returning id::float8 as id`,
  );
  return Number(row!.id);
}

describe('compacted 1-minute rollups', () => {
  // a: a sample a minute over four days (a bucket a point), with an hour left out on day 2 and a
  // -0; b: every 5 s over two days (twelve a bucket), a null among them; e: every 10 s over two
  // days, another provider's (baseten-3), its raw points dropped by retention up to the second
  // day's noon; other: a third provider's.
  let a = 0;
  let b = 0;
  let e = 0;
  let other = 0;
  let aPoints: PointWriteRow[] = [];
  let bPoints: PointWriteRow[] = [];
  const GAP = START + DAY + 5 * HOUR;

  const t = (id: number, from?: number, to?: number): SeriesWindow => ({
    seriesId: id,
    keyedBy: 'time',
    from: from === undefined ? null : new Date(from),
    to: to === undefined ? null : new Date(to),
  });
  const windows = (): [SeriesWindow[], number, number | undefined][] => [
    // a over two days at 200: 14.4-minute raw buckets, the 1-minute rollup merged 15 at a time.
    [[t(a, START + HOUR, START + 2 * DAY + HOUR)], 200, 900],
    // b's 100 minutes at 100: its buckets as stored.
    [[t(b, START + DAY - 50 * MINUTE, START + DAY + 50 * MINUTE - 1)], 100, 60],
    [[t(b, START + 3 * HOUR + 7_000, START + 20 * HOUR)], 150, 420],
    // b and a together, a to its end.
    [[t(b, START, START + 2 * DAY), t(a, START + DAY)], 300, undefined],
    // e reaching before its raw cut: from the rollups whatever the size.
    [[t(e, START + DAY, START + DAY + 14 * HOUR)], 1000, 60],
    [[t(e)], 150, undefined],
  ];

  /** Every window's read and each series' minutes; `widths`: each window's resolution checked as listed. */
  async function answers({ widths = true } = {}) {
    const out: unknown[] = [];
    for (const [ws, maxPoints, width] of windows()) {
      for (const aggregation of ['AVG', 'MIN', 'MAX', 'LAST'] as Aggregation[]) {
        const r = await suite.repo.pointsAt(ws, maxPoints, aggregation);
        if (widths && width !== undefined) expect(r.resolutions.get(ws[0]!.seriesId)).toBe(width);
        out.push([r.points, [...r.resolutions]]);
      }
    }
    for (const id of [a, b, e]) out.push(await minuteRows(id));
    return out;
  }

  let before: unknown[] = [];

  it('answers every 1-minute rollup read the same once settled days are compacted, partly and wholly', async () => {
    await insertJob('baseten-1:job:rollups', 'baseten-1');
    [a, b] = (await insertSeries(suite.db.db, ['roll-a', 'time'], ['roll-b', 'time'])) as [number, number];
    await insertJob('baseten-2:job:other', 'baseten-2');
    other = await insertOwnSeries('roll-other', 'baseten-2:job:other');
    await insertJob('baseten-3:job:e', 'baseten-3');
    e = await insertOwnSeries('roll-e', 'baseten-3:job:e');
    aPoints = wave(a, START, MINUTE, 4 * 1440)
      .filter(([, k]) => k < GAP || k >= GAP + HOUR)
      .map((p, i) => (i === 77 ? ([p[0], p[1], p[2], p[3], -0] as PointWriteRow) : p));
    await suite.repo.writePoints(aPoints, { expectNew: true });
    bPoints = wave(b, START, 5_000, 2 * 17_280).map((p, i) =>
      i === 1_000 || (i >= 2_400 && i < 2_412) ? ([p[0], p[1], p[2], p[3], null] as PointWriteRow) : p,
    );
    await suite.repo.writePoints(bPoints);
    await suite.repo.writePoints(wave(e, START, 10_000, 2 * 8_640));
    await suite.repo.writePoints(wave(other, START, MINUTE, 2 * 1440));
    for (let after = 0; ; ) {
      const step = await suite.repo.dropRawPointsBatch('baseten-3', START + DAY + 12 * HOUR, after, 200);
      if (step.last === null) break;
      after = step.last;
    }
    before = await answers();
    const rows = { a: await count('points_1m', a), b: await count('points_1m', b), e: await count('points_1m', e) };
    expect(await minuteRows(a)).toEqual(handRollup(aPoints, MINUTE));
    expect(await minuteRows(b)).toEqual(handRollup(bPoints, MINUTE));

    // The first day of every series, in batches of one series; raw points' days too, as the collector's chore does.
    await compactRaw(START + DAY + HOUR);
    const moved = await compactAll(START + DAY + HOUR);
    expect(moved).toBe(3 * 1440);
    expect(await count('rollup_chunks_1m', a)).toBe(1);
    expect(await count('points_1m', a)).toBe(rows.a - 1440);
    expect(await count('points_1m', other)).toBe(2 * 1440);
    expect((await suite.repo.rollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1m_202610']);
    // A day of one value a bucket keeps one value array and its offsets as a run; b's day, all five.
    expect(await count('rollup_chunks_1m', a, sql`c.counts is null and cardinality(c.offs) = 2 and c.n = 1440`)).toBe(1);
    expect(await count('rollup_chunks_1m', b, sql`c.counts is not null and c.sums is not null`)).toBe(1);
    expect(await answers()).toEqual(before);

    // Again: nothing settled is left. Then every day of every series.
    expect(await compactAll(START + DAY + HOUR)).toBe(0);
    await compactRaw(START + 5 * DAY);
    expect(await compactAll(START + 5 * DAY)).toBe(rows.a + rows.b + rows.e - 3 * 1440);
    for (const id of [a, b, e]) expect(await count('points_1m', id)).toBe(0);
    // a's day 2 lacks an hour: its offsets are kept one by one.
    expect(await count('rollup_chunks_1m', a, sql`c.counts is null and c.n = 1380 and cardinality(c.offs) = 1380`)).toBe(1);
    expect((await suite.repo.rollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1m_202610', 'rollup_chunks_1m_202611']);
    expect(await answers()).toEqual(before);
  });

  it('keeps the rollup exact on a write into a compacted day: the same points, a changed value, a first fetch, an hour that held nothing', async () => {
    // The collector's overlap, as stored, in a's second day: its raw day comes back (every hour of
    // it rolled up again), and with it the rollup's; nothing changes.
    await suite.repo.writePoints(aPoints.slice(2 * 1440 - 150, 2 * 1440 - 90));
    expect(await count('rollup_chunks_1m', a)).toBe(3);
    expect(await count('points_1m', a)).toBe(1380);
    expect(await answers()).toEqual(before);
    await compactAll(START + 5 * DAY);
    expect(await count('points_1m', a)).toBe(0);

    // A changed value in b's first day (a bucket of twelve) and in a's third.
    const bChanged = bPoints.map((p, i) => (i === 500 ? ([p[0], p[1], p[2], p[3], 1234.5] as PointWriteRow) : p));
    const aChanged = aPoints.map((p, i) => (i === 2 * 1440 + 10 ? ([p[0], p[1], p[2], p[3], -7.25] as PointWriteRow) : p));
    await suite.repo.writePoints([bChanged[500]!, aChanged[2 * 1440 + 10]!]);
    expect(await count('rollup_chunks_1m', b)).toBe(1);
    expect(await minuteRows(b)).toEqual(handRollup(bChanged, MINUTE));
    expect(await minuteRows(a)).toEqual(handRollup(aChanged, MINUTE));
    expect(await rollupRows(suite.db.db, 'points_1h', b)).toEqual(handRollup(bChanged, HOUR));
    await compactRaw(START + 5 * DAY);
    await compactAll(START + 5 * DAY);
    expect(await minuteRows(b)).toEqual(handRollup(bChanged, MINUTE));
    // And back.
    await suite.repo.writePoints([bPoints[500]!, aPoints[2 * 1440 + 10]!]);
    await compactRaw(START + 5 * DAY);
    await compactAll(START + 5 * DAY);
    expect(await answers()).toEqual(before);

    // A first fetch again (expectNew) of the whole of a: its hours' rows exist, so the merge writes it; nothing doubles.
    await suite.repo.writePoints(aPoints, { expectNew: true });
    expect(await count('rollup_chunks_1m', a)).toBe(0);
    expect(await rollupRows(suite.db.db, 'points_1m', a)).toEqual(handRollup(aPoints, MINUTE));
    expect(await answers()).toEqual(before);
    await compactAll(START + 5 * DAY);

    // The hour a left out, written now (a's raw points are in `points` again): it held nothing, so
    // its minutes go to points_1m beside the day's chunk (no move back), are read with it, and the
    // next compaction merges them in.
    const gap = wave(a, GAP, MINUTE, 60);
    await suite.repo.writePoints(gap);
    const filled = [...aPoints, ...gap].sort((x, y) => x[1] - y[1]);
    expect(await count('rollup_chunks_1m', a)).toBe(4);
    expect(await count('points_1m', a)).toBe(60);
    expect(await minuteRows(a)).toEqual(handRollup(filled, MINUTE));
    await compactAll(START + 5 * DAY);
    expect(await count('points_1m', a)).toBe(0);
    expect(await count('rollup_chunks_1m', a, sql`c.counts is null and c.n = 1440 and cardinality(c.offs) = 2`)).toBe(4);
    expect(await minuteRows(a)).toEqual(handRollup(filled, MINUTE));
    expect(await rollupRows(suite.db.db, 'points_1h', a)).toEqual(handRollup(filled, HOUR));
  });

  it('hides the days past a 1-minute retention cut, and drops a month partition once every chunk in it is hidden', async () => {
    await compactAll(START + 5 * DAY, ['baseten-2']);
    expect(await count('rollup_chunks_1m', other)).toBe(2);
    const cut = Date.UTC(2026, 10, 1, 6);
    // Every read without the listed resolutions' checks: a window reaching before the cut is read
    // from the 1-hour rollup now.
    const reads = () => answers({ widths: false });
    // October holds baseten-2's chunks too: baseten-1's and baseten-3's days of it are hidden,
    // not deleted (a deleted row's space in a past month is reused by nothing), the partition stays.
    expect(await suite.repo.dropRollupChunks('baseten-1', cut)).toEqual({ dropped: 0, hidden: 2 });
    expect(await suite.repo.dropRollupChunks('baseten-3', cut)).toEqual({ dropped: 0, hidden: 1 });
    expect((await suite.repo.rollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1m_202610', 'rollup_chunks_1m_202611']);
    expect(await count('rollup_chunks_1m', a)).toBe(4);
    expect(await count('rollup_chunks_1m', other)).toBe(2);
    // Every read answers as it does with those days' rows deleted.
    const hidden = await reads();
    await suite.db.db.execute(sql`delete from rollup_chunks_1m where series_id in (${a}, ${b}, ${e}) and chunk_start < ${Date.UTC(2026, 10, 1)}`);
    expect(await count('rollup_chunks_1m', a)).toBe(2);
    expect(await reads()).toEqual(hidden);
    // baseten-2's: October, all hidden now, goes whole.
    expect(await suite.repo.dropRollupChunks('baseten-2', cut)).toEqual({ dropped: 1, hidden: 1 });
    expect((await suite.repo.rollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1m_202611']);
    expect(await count('rollup_chunks_1m', other)).toBe(0);
    // The day the cut falls in stays, its minutes before the cut's hour hidden.
    expect(await minuteRows(a)).toEqual(
      handRollup(
        aPoints.filter(([, k]) => k >= cut),
        MINUTE,
      ),
    );
    // Nothing is left to hide or drop.
    expect(await suite.repo.dropRollupChunks('baseten-1', cut)).toEqual({ dropped: 0, hidden: 0 });
    // The series that lost chunks remember the cut (its hour), by a row delete or a partition drop,
    // and a window reaching before it is answered from the 1-hour rollup, not from a gap.
    const minuteBefore = async (id: number) =>
      (await rowsOf<{ m: number | string | null }>(suite.db.db, sql`select minute_before::float8 as m from series where id = ${id}`))[0]!.m;
    expect(Number(await minuteBefore(a))).toBe(cut);
    expect(Number(await minuteBefore(other))).toBe(cut);
    expect(Number(await minuteBefore(b))).toBe(cut);
    const read = await suite.repo.pointsAt([t(a, START + HOUR, START + 2 * DAY + HOUR)], 200, 'AVG');
    expect(read.resolutions.get(a)).toBe(3600);
    expect(read.points.filter((p) => p.seriesId === a).length).toBeGreaterThan(24);
  });
});

describe('1-minute retention of a series whose chunks begin on the cut day', () => {
  it("marks only series with a day wholly before the cut, as the deletes did: one whose chunks begin on the cut's day keeps its minutes", async () => {
    const cut = Date.UTC(2026, 11, 1, 6);
    await insertJob('baseten-9:job:late', 'baseten-9');
    const late = await insertOwnSeries('late', 'baseten-9:job:late');
    const early = await insertOwnSeries('early', 'baseten-9:job:late');
    // late: 10:00 to 12:00 of the cut's day; early: from 04:00 of that day, so two hours before the cut.
    const latePoints = wave(late, Date.UTC(2026, 11, 1, 10), MINUTE, 120);
    const earlyPoints = wave(early, Date.UTC(2026, 11, 1, 4), MINUTE, 480);
    await suite.repo.writePoints([...latePoints, ...earlyPoints], { expectNew: true });
    await compactAll(Date.UTC(2026, 11, 3), ['baseten-9']);
    expect(await count('rollup_chunks_1m', late)).toBe(1);
    expect(await count('rollup_chunks_1m', early)).toBe(1);
    // Neither has a day wholly before the cut: neither is marked, nothing is hidden.
    expect(await suite.repo.dropRollupChunks('baseten-9', cut)).toEqual({ dropped: 0, hidden: 0 });
    const minuteBefore = async (id: number) =>
      (await rowsOf<{ m: number | string | null }>(suite.db.db, sql`select minute_before::float8 as m from series where id = ${id}`))[0]!.m;
    expect(await minuteBefore(late)).toBeNull();
    expect(await minuteRows(late)).toEqual(handRollup(latePoints, MINUTE));
    expect(await minuteRows(early)).toEqual(handRollup(earlyPoints, MINUTE));
    // A day later the cut's day is wholly before the next cut: both are marked, their day hidden.
    expect(await suite.repo.dropRollupChunks('baseten-9', cut + DAY)).toEqual({ dropped: 0, hidden: 2 });
    expect(Number(await minuteBefore(late))).toBe(cut + DAY);
    expect(await minuteRows(late)).toEqual([]);
  });
});
