// Compaction of settled raw points into point_chunks (a row per series and UTC day): the store
// answers every read the same before and after (raw windows, equal-width buckets, rollup windows,
// a window's first and last point, summaries), a re-write into a compacted day moves it back and
// stays idempotent (a changed value replaces its old one, rollups included), and retention drops
// whole month partitions where only the provider's series are in them.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Aggregation } from '../../src/domain/types.js';
import type { PointWriteRow, SeriesWindow } from '../../src/store/repository.js';
import { rawPoints } from '../../src/store/raw-points.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, rollupRows, wave } from './rollup-fixtures.js';

const suite = useTestRepository();
// Two days of October and two of November: two month partitions.
const START = Date.UTC(2026, 9, 30, 0, 0, 0);
const DAY = 86_400_000;
const HOUR = 3_600_000;

async function insertJob(id: string, providerId: string) {
  await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
    values (${id}, ${providerId}, ${`${providerId}:project:p`}, ${id}, ${id}, 'RUNNING', now(), now())`);
}

/** A job `name` of provider `providerId` with one time-keyed series, `chunk-<name>`: the series' id. */
async function insertJobSeries(providerId: string, name: string): Promise<number> {
  const jobId = `${providerId}:job:${name}`;
  await insertJob(jobId, providerId);
  const [row] = await rowsOf<{ id: number }>(
    suite.db.db,
    sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
        values (${`chunk-${name}`}, ${jobId}, 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time') returning id::float8 as id`,
  );
  return Number(row!.id);
}

async function count(table: 'points' | 'point_chunks', seriesId: number): Promise<number> {
  const [row] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select count(*)::int as n from ${sql.raw(table)} where series_id = ${seriesId}`);
  return Number(row!.n);
}

async function compactAll(providerId: string, before: number): Promise<number> {
  let after = 0;
  let moved = 0;
  for (;;) {
    const step = await suite.repo.compactRawPointsBatch(providerId, before, after, 1);
    moved += step.points;
    if (step.last === null) return moved;
    if (step.done) after = step.last;
  }
}

describe('compacted raw points', () => {
  let a = 0;
  let b = 0;
  let steps = 0;
  let other = 0;
  let aPoints: PointWriteRow[] = [];

  const windowsOf = (): [SeriesWindow[], number][] => {
    const t = (id: number, from?: number, to?: number): SeriesWindow => ({
      seriesId: id,
      keyedBy: 'time',
      from: from === undefined ? null : new Date(from),
      to: to === undefined ? null : new Date(to),
    });
    return [
      [[t(a, START + HOUR, START + 2 * HOUR)], 1000],
      [[t(a, START + DAY - 30 * 60_000, START + DAY + 30 * 60_000)], 1000],
      [[t(a, START, START + DAY - 1)], 500],
      [[t(a, START, START + DAY - 1)], 2000],
      [[t(a, START, START + 4 * DAY)], 48],
      [[t(a)], 1000],
      [[t(a, START + 2 * DAY)], 100],
      [[t(b), t(a, undefined, START + DAY + 7)], 300],
      [[t(b, START + 3 * HOUR, START + 30 * HOUR)], 20],
      // Edges in a day that holds no point of the window: b's second day begins 7 ms after
      // midnight, so the last point up to +3 ms is the first day's, and the first from -3 ms the second's.
      [[t(b, undefined, START + DAY + 3)], 300],
      [[t(b, START + DAY - 3, START + 2 * DAY)], 300],
      [[{ seriesId: steps, keyedBy: 'step', from: null, to: null }], 10],
      // Windows a first count could misjudge (it decides how compacted days are first read): 20
      // minutes of a's hour of 60 samples at 30 points (as they are), and b's first hour, 12 points
      // and a null among them, at 11 (in buckets). The describe below misjudges on purpose.
      [[t(a, START + HOUR + 10 * 60_000, START + HOUR + 30 * 60_000)], 30],
      [[t(b, START, START + HOUR - 1)], 11],
    ];
  };

  async function answers() {
    const out: unknown[] = [];
    for (const [windows, maxPoints] of windowsOf()) {
      for (const aggregation of ['AVG', 'MIN', 'MAX', 'LAST'] as Aggregation[]) {
        const r = await suite.repo.pointsAt(windows, maxPoints, aggregation);
        out.push([r.points, [...r.resolutions]]);
      }
      out.push(await suite.repo.summariesOf(windows));
    }
    out.push((await suite.repo.rawPointsInWindow([a, b], new Date(START + 10 * HOUR), new Date(START + 40 * HOUR))).sort((x, y) => x.seriesId - y.seriesId));
    return out;
  }

  let before: unknown[] = [];

  it('answers every read the same once settled days are compacted, partly and wholly', async () => {
    await insertJob('baseten-1:job:rollups', 'baseten-1');
    const made = await insertSeries(suite.db.db, ['chunk-a', 'time'], ['chunk-b', 'time'], ['chunk-steps', 'step']);
    [a, b, steps] = made as [number, number, number];
    other = await insertJobSeries('baseten-2', 'other');
    // a: one sample a minute over four days; b: every 5 minutes over two days but one, a null and steps among them.
    aPoints = wave(a, START, 60_000, 4 * 1440);
    await suite.repo.writePoints(aPoints, { expectNew: true });
    const bPoints = wave(b, START + 7, 300_000, 576)
      .map((p, i) => [p[0], p[1], p[2], i % 50 === 0 ? i : null, i === 10 ? null : p[4]] as PointWriteRow)
      .filter((_, i) => i !== 200);
    await suite.repo.writePoints(bPoints);
    await suite.repo.writePoints(Array.from({ length: 100 }, (_, i) => [steps, i + 1, START + i * 60_000, i + 1, i / 10] as PointWriteRow));
    await suite.repo.writePoints(wave(other, START, 600_000, 144));
    before = await answers();

    // The first two days of a and b (b wholly), in batches of one series.
    expect(await compactAll('baseten-1', START + 2 * DAY + HOUR)).toBe(2 * 1440 + 575);
    expect(await count('points', a)).toBe(2 * 1440);
    expect(await count('point_chunks', a)).toBe(2);
    expect(await count('points', b)).toBe(0);
    expect(await count('point_chunks', b)).toBe(2);
    expect(await count('points', steps)).toBe(100);
    expect(await count('points', other)).toBe(144);
    expect((await suite.repo.chunkPartitions()).map((p) => p.name)).toEqual(['point_chunks_202610']);
    expect(await answers()).toEqual(before);

    // Again: nothing settled is left.
    expect(await compactAll('baseten-1', START + 2 * DAY + HOUR)).toBe(0);
    // Every day of a.
    expect(await compactAll('baseten-1', START + 5 * DAY)).toBe(2 * 1440);
    expect(await count('points', a)).toBe(0);
    expect((await suite.repo.chunkPartitions()).map((p) => p.name)).toEqual(['point_chunks_202610', 'point_chunks_202611']);
    expect(await answers()).toEqual(before);
  });

  it('moves a compacted day back on a write into it: the same points change nothing, a changed value replaces its old one', async () => {
    const hours = await rollupRows(suite.db.db, 'points_1h', a);
    // The collector's overlap: the end of day 2 and the start of day 3, as stored.
    await suite.repo.writePoints(aPoints.slice(2 * 1440 - 30, 2 * 1440 + 30));
    expect(await count('points', a)).toBe(2 * 1440);
    expect(await count('point_chunks', a)).toBe(2);
    expect(await answers()).toEqual(before);
    expect(await rollupRows(suite.db.db, 'points_1h', a)).toEqual(hours);
    // A first fetch again (expectNew) of the whole series: nothing doubles.
    await suite.repo.writePoints(aPoints, { expectNew: true });
    expect(await count('points', a)).toBe(4 * 1440);
    expect(await count('point_chunks', a)).toBe(0);
    expect(await answers()).toEqual(before);

    await compactAll('baseten-1', START + 5 * DAY);
    expect(await count('point_chunks', a)).toBe(4);
    const changed = aPoints.map((p, i) => (i === 100 ? ([p[0], p[1], p[2], p[3], 1234.5] as PointWriteRow) : p));
    await suite.repo.writePoints([changed[100]!]);
    expect(await count('points', a)).toBe(1440);
    expect(await rollupRows(suite.db.db, 'points_1m', a)).toEqual(handRollup(changed, 60_000));
    expect(await rollupRows(suite.db.db, 'points_1h', a)).toEqual(handRollup(changed, HOUR));
    const [raw] = (
      await suite.repo.pointsAt([{ seriesId: a, keyedBy: 'time', from: new Date(START), to: new Date(START + HOUR * 3) }], 1000, 'AVG')
    ).points.filter((p) => p.timestamp!.getTime() === changed[100]![1]);
    expect(raw!.value).toBe(1234.5);
    await compactAll('baseten-1', START + 5 * DAY);
    expect(await count('points', a)).toBe(0);
    expect(await count('point_chunks', a)).toBe(4);
    await suite.repo.writePoints([aPoints[100]!]);
    await compactAll('baseten-1', START + 5 * DAY);
    expect(await answers()).toEqual(before);
  });

  it('hides the days past the retention cut, and drops a month partition once every chunk in it is hidden', async () => {
    await compactAll('baseten-2', START + 5 * DAY);
    expect(await count('point_chunks', other)).toBe(1);
    const cut = Date.UTC(2026, 10, 1, 6);
    const hiddenDays = async () => {
      // The hidden days are answered from the rollups, their chunks unread; the rest as before.
      const r = await suite.repo.pointsAt([{ seriesId: a, keyedBy: 'time', from: new Date(START), to: new Date(START + 4 * DAY - 1) }], 96, 'AVG');
      expect(r.resolutions.get(a)).toBe(3600);
      expect(r.points.map((p) => [p.timestamp!.getTime(), p.value])).toEqual(handRollup(aPoints, HOUR).map((h) => [h.bucket, h.sum! / h.n]));
      const raw = await suite.repo.pointsAt([{ seriesId: a, keyedBy: 'time', from: new Date(START), to: new Date(START + 4 * DAY - 1) }], 100_000, 'AVG');
      // At a point a minute: the 1-minute rollup, not the hidden raw points.
      expect(raw.resolutions.get(a)).toBe(60);
      expect(raw.points.map((p) => [p.timestamp!.getTime(), p.value])).toEqual(handRollup(aPoints, 60_000).map((h) => [h.bucket, h.sum! / h.n]));
      const [first] = await rowsOf<{ key: number | string | null }>(suite.db.db, sql`select min(p.key)::float8 as key from ${rawPoints(sql`${a}::bigint`)} p`);
      expect(Number(first!.key)).toBe(Date.UTC(2026, 10, 1));
    };
    // October holds baseten-2's chunk too: baseten-1's days of it (series a and b) are hidden, not deleted (a
    // deleted row's space in a past month is reused by nothing), and the partition stays.
    expect(await suite.repo.dropRawChunks('baseten-1', cut)).toEqual({ dropped: 0, hidden: 2 });
    expect((await suite.repo.chunkPartitions()).map((p) => p.name)).toEqual(['point_chunks_202610', 'point_chunks_202611']);
    expect(await count('point_chunks', a)).toBe(4);
    expect(await count('point_chunks', other)).toBe(1);
    await hiddenDays();
    // Every read answers as it did when retention deleted those days' rows.
    const hidden = await answers();
    await suite.db.db.execute(sql`delete from point_chunks where series_id in (${a}, ${b}) and chunk_start < ${Date.UTC(2026, 10, 1)}`);
    expect(await count('point_chunks', a)).toBe(2);
    expect(await answers()).toEqual(hidden);
    // Again: nothing more to hide, nothing to drop.
    expect(await suite.repo.dropRawChunks('baseten-1', cut)).toEqual({ dropped: 0, hidden: 0 });
    // baseten-2's retention: its own day is hidden too, and October, all hidden now, goes whole.
    expect(await suite.repo.dropRawChunks('baseten-2', cut)).toEqual({ dropped: 1, hidden: 1 });
    expect((await suite.repo.chunkPartitions()).map((p) => p.name)).toEqual(['point_chunks_202611']);
    expect(await count('point_chunks', a)).toBe(2);
    expect(await count('point_chunks', other)).toBe(0);
    await hiddenDays();
    const [marks] = await rowsOf<{ a: number; o: number }>(
      suite.db.db,
      sql`select (select raw_before from series where id = ${a})::float8 as a, (select raw_before from series where id = ${other})::float8 as o`,
    );
    expect([Number(marks!.a), Number(marks!.o)]).toEqual([Date.UTC(2026, 10, 1), Date.UTC(2026, 10, 1)]);
    const late = await suite.repo.pointsAt(
      [{ seriesId: a, keyedBy: 'time', from: new Date(START + 2 * DAY), to: new Date(START + 2 * DAY + HOUR) }],
      1000,
      'AVG',
    );
    expect(late.resolutions.get(a)).toBeUndefined();
    expect(late.points).toHaveLength(61);
  });
});

describe('a compacted window read first as its count says, then the other way where the count misjudged it', () => {
  // One day sampled unevenly (100 samples in its first hour, one a null, and one at 23:00),
  // compacted; the next day's five samples left uncompacted. A window whose hours are all in
  // compacted days is counted by its days' samples prorated to its extent; one that reaches
  // uncompacted points, by its 1-hour rollup (whole hours, values only). Each window below is
  // misjudged by its count, so its answer comes from the second read the other way.
  const D1 = Date.UTC(2026, 10, 10);
  const D2 = D1 + DAY;
  let x = 0;
  const t = (from: number, to: number): SeriesWindow[] => [{ seriesId: x, keyedBy: 'time', from: new Date(from), to: new Date(to) }];
  const windows = (): [string, SeriesWindow[], number][] => [
    // Prorated: 101 x 22.5 h / 24 h = 95 over 60; it holds 51.
    ['days prorated, more than it holds', t(D1 + 30 * 60_000, D1 + 23 * HOUR), 60],
    // Prorated: 101 x 59.4 min / 24 h = 4 under 60; it holds 100.
    ['days prorated, fewer than it holds', t(D1, D1 + HOUR - 1), 60],
    // Its hours count 99 + 1 + 5 = 105 values over 60; it holds 51 + 5 = 56.
    ['1-hour rollup, whole hours', t(D1 + 30 * 60_000, D2 + HOUR), 60],
    // Its hours count 105 values, at most 105; it holds 106 points, the null among them.
    ['1-hour rollup, values only', t(D1, D2 + HOUR), 105],
  ];

  async function answersOf() {
    const out: Record<string, unknown> = {};
    for (const [name, w, maxPoints] of windows()) {
      for (const aggregation of ['AVG', 'MIN', 'MAX', 'LAST'] as Aggregation[]) {
        const r = await suite.repo.pointsAt(w, maxPoints, aggregation);
        out[`${name} ${aggregation}`] = r.points.map((p) => [p.timestamp!.getTime(), p.value]);
      }
    }
    return out;
  }

  it('answers each such window as the uncompacted points did', async () => {
    x = await insertJobSeries('baseten-3', 'uneven');
    const first = wave(x, D1, 36_000, 100).map((p, i) => (i === 5 ? ([p[0], p[1], p[2], null, null] as PointWriteRow) : p));
    await suite.repo.writePoints([...first, ...wave(x, D1 + 23 * HOUR, HOUR, 1), ...wave(x, D2 + 10 * 60_000, 10 * 60_000, 5)]);
    const before = await answersOf();
    // Each window answers in full: the points it holds (51, 56) where they are at most maxPoints,
    // else buckets (100 at 60: 60; 106 at 105: 9 of 851,429 ms).
    expect(Object.values(before).map((v) => (v as unknown[]).length)).toEqual([51, 60, 56, 9].flatMap((n) => [n, n, n, n]));
    expect(await compactAll('baseten-3', D2 + HOUR)).toBe(101);
    expect(await count('point_chunks', x)).toBe(1);
    expect(await count('points', x)).toBe(5);
    expect(await answersOf()).toEqual(before);
  });
});

describe('a compacted window with instants between milliseconds', () => {
  // Platforms report instants finer than a millisecond (Runicorn's are float seconds): a
  // time-keyed point's key is its instant floored to the millisecond. A raw window's buckets are
  // stamped from their first point's instant (floor(extract(epoch from ts) * 1000)), a window
  // with compacted days from its first point's key. A day holding such a point stays in `points`
  // (compaction moves only days whose instants are their keys'), so a window with compacted days
  // meets them beside its chunks: the two stamps must agree.
  it('stamps its buckets as the uncompacted points did', async () => {
    const D = Date.UTC(2026, 10, 12);
    const id = await insertJobSeries('baseten-4', 'fine');
    // Two days at a sample every 10 minutes: the first on whole milliseconds, the second each
    // 0.375 or 0.625 ms past one (exact binary fractions), the key as the adapters give it: the
    // instant itself.
    const points = wave(id, D, 600_000, 288).map((p, i) => {
      const at = p[2]! + (i < 144 ? 0 : i % 2 === 0 ? 0.375 : 0.625);
      return [p[0], at, at, null, p[4]] as PointWriteRow;
    });
    await suite.repo.writePoints(points, { expectNew: true });
    const windows: [SeriesWindow[], number][] = [
      [[{ seriesId: id, keyedBy: 'time', from: new Date(D), to: new Date(D + 2 * DAY) }], 50],
      [[{ seriesId: id, keyedBy: 'time', from: new Date(D + 7 * HOUR), to: new Date(D + 31 * HOUR) }], 24],
    ];
    const read = async () => {
      const out: unknown[] = [];
      for (const [w, maxPoints] of windows) {
        for (const aggregation of ['AVG', 'LAST'] as Aggregation[]) {
          out.push((await suite.repo.pointsAt(w, maxPoints, aggregation)).points.map((p) => [p.timestamp!.getTime(), p.value]));
        }
      }
      return out;
    };
    const before = await read();
    // Bucketed (288 and 145 points at 50 and 24), each stamped at its first point's instant
    // floored to the millisecond.
    expect((before[0] as unknown[]).length).toBe(50);
    const stamps = (before[0] as [number][]).map(([t]) => t);
    expect(stamps.every((t) => (t - D) % 600_000 === 0)).toBe(true);
    expect(await compactAll('baseten-4', D + 2 * DAY)).toBe(144);
    expect(await count('point_chunks', id)).toBe(1);
    expect(await count('points', id)).toBe(144);
    expect(await read()).toEqual(before);
  });
});

describe("a window's extent from its compacted days' keys", () => {
  // A window whose hours hold no uncompacted point takes its first and last points' keys from its
  // days' stored offsets (a day at one spacing by arithmetic, a day of one or two samples as they
  // are) instead of walking to its edges; the others walk. Each window starts or ends between two
  // samples, on one, or in a day with none of its points; at 3 and 4 points (equal-width buckets from
  // its first point to its last: a wrong extent moves them) and at 1,000 (as they are).
  const D1 = Date.UTC(2026, 10, 14);
  const MIN = 60_000;
  let spaced = 0;
  let warm = 0;
  let cut = 0;
  const t = (id: number, from: number | null, to: number | null): SeriesWindow => ({
    seriesId: id,
    keyedBy: 'time',
    from: from === null ? null : new Date(from),
    to: to === null ? null : new Date(to),
  });
  const windows = (): [string, SeriesWindow][] => [
    ['from and to between samples of a day at one spacing', t(spaced, D1 + 20 * MIN, D1 + 10 * HOUR)],
    ['from and to on samples', t(spaced, D1 + 42 * MIN, D1 + 79 * MIN)],
    ["from after a day's last sample, to on the next day's only one", t(spaced, D1 + 23 * HOUR + 40 * MIN, D1 + DAY + 13 * HOUR)],
    ["from just past a day's only sample, to on a day's second of two", t(spaced, D1 + DAY + 13 * HOUR + 1, D1 + 2 * DAY + 20 * HOUR)],
    ['one instant, on the first of two samples', t(spaced, D1 + 2 * DAY + 2 * HOUR, D1 + 2 * DAY + 2 * HOUR)],
    ["from between a day's two samples, to between two of a day at one spacing", t(spaced, D1 + 2 * DAY + 3 * HOUR, D1 + 3 * DAY + 45 * MIN)],
    ['to before the first sample of a day at one spacing', t(spaced, D1 + 2 * DAY + 3 * HOUR, D1 + 3 * DAY + 10 * MIN)],
    ['to past the last sample of a day at one spacing', t(spaced, D1 + 3 * DAY + 10 * HOUR, D1 + 3 * DAY + 20 * HOUR)],
    ['no point in it', t(spaced, D1 + DAY + 14 * HOUR, D1 + 2 * DAY + HOUR)],
    ['every day, unbounded', t(spaced, null, null)],
    ['hours holding uncompacted points (the edges walk)', t(warm, D1 + 30 * MIN, D1 + 4 * DAY + 2 * HOUR)],
    ['days at several spacings (the edges walk)', t(warm, D1 + DAY + 30 * MIN, D1 + 2 * DAY + 30 * MIN)],
    ["from before the series' retention cut", t(cut, D1 + 5 * MIN, D1 + 2 * DAY + 21 * HOUR)],
  ];

  async function answersOf() {
    const out: Record<string, unknown> = {};
    for (const [name, w] of windows()) {
      for (const maxPoints of [3, 4, 1000]) {
        for (const aggregation of ['AVG', 'LAST'] as Aggregation[]) {
          const r = await suite.repo.pointsAt([w], maxPoints, aggregation);
          out[`${name}, ${maxPoints} ${aggregation}`] = [r.points.map((p) => [p.timestamp!.getTime(), p.value]), [...r.resolutions]];
        }
      }
    }
    return out;
  }

  it('answers each window as the uncompacted points did', async () => {
    spaced = await insertJobSeries('baseten-5', 'spaced');
    warm = await insertJobSeries('baseten-5', 'warm');
    cut = await insertJobSeries('baseten-5', 'cut');
    // Day 1: 39 samples 37 minutes apart from 00:05; day 2: one at 13:00; day 3: two, at 02:00
    // and 20:00; day 4: 100 every 10 minutes from 00:30 to 17:00.
    const days = (id: number): PointWriteRow[] => [
      ...wave(id, D1 + 5 * MIN, 37 * MIN, 39),
      ...wave(id, D1 + DAY + 13 * HOUR, HOUR, 1),
      ...wave(id, D1 + 2 * DAY + 2 * HOUR, 18 * HOUR, 2),
      ...wave(id, D1 + 3 * DAY + 30 * MIN, 10 * MIN, 100),
    ];
    await suite.repo.writePoints(days(spaced));
    await suite.repo.writePoints(days(cut));
    // warm: day 2 at two spacings, and day 5's points left uncompacted.
    await suite.repo.writePoints([
      ...wave(warm, D1, 30 * MIN, 48),
      ...wave(warm, D1 + DAY, 20 * MIN, 30),
      ...wave(warm, D1 + DAY + 10 * HOUR, 30 * MIN, 28),
      ...wave(warm, D1 + 4 * DAY, 15 * MIN, 8),
    ]);
    // Retention's cut of `cut`'s raw points (a day's start, as retention sets it): before it the
    // window reads the rollups; its raw extent starts at the cut.
    await suite.db.db.execute(sql`update series set raw_before = ${D1 + DAY} where id = ${cut}`);
    const before = await answersOf();
    // The points each window holds (the spaced day's from 00:42 to 09:55: 16); the last is read
    // from the rollups before the cut (the 1-hour buckets from 00:00 of day 1, with raw points after it).
    const held = (name: string) => ((before[`${name}, 1000 AVG`] as [unknown[]])[0] ?? []).length;
    expect(windows().map(([name]) => held(name))).toEqual([16, 2, 1, 2, 1, 3, 1, 43, 0, 142, 113, 56, 42]);
    expect(await compactAll('baseten-5', D1 + 4 * DAY)).toBe(2 * 142 + 48 + 30 + 28);
    expect(await count('point_chunks', spaced)).toBe(4);
    expect(await count('points', warm)).toBe(8);
    expect(await answersOf()).toEqual(before);
  });
});
