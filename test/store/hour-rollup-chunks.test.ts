// Compaction of the 1-hour rollup's settled days into rollup_chunks_1h (a row per series and UTC
// month, growing by the days that settle; a partition per UTC year): every read answered from the
// 1-hour rollup is the same before, half-way (a month and a half) and after (merged buckets in the four aggregations, buckets as stored where raw points
// and 1-minute rows were dropped, unbounded windows, windows across a year's partitions, and the
// rollup's rows themselves), a write into a compacted month keeps the rollup exact (the
// collector's overlap, a changed value, a first fetch again of a wholly compacted series, an hour
// that held nothing), a write after a month's chunk (its unsettled days) leaves the chunk alone, and 1-hour retention drops whole year partitions where only the provider's
// series are in them, else its months' chunk rows, and says where the rollup now begins.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Aggregation } from '../../src/domain/types.js';
import type { PointWriteRow, SeriesWindow } from '../../src/store/repository.js';
import { rollup1h } from '../../src/store/hour-rollups.js';
import { rollup1m } from '../../src/store/rollup-chunks.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { compactAllOf, handRollup, insertSeries, type RollupRow, rollupOf, wave } from './rollup-fixtures.js';

const suite = useTestRepository();
// November 2025 to mid-February 2026: four months in two year partitions.
const START = Date.UTC(2025, 10, 1);
const DAY = 86_400_000;
const HOUR = 3_600_000;
const MINUTE = 60_000;
const END = START + 100 * DAY;
const PROVIDERS = ['baseten-1', 'baseten-2', 'baseten-3'];

async function insertJob(id: string, providerId: string) {
  await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
    values (${id}, ${providerId}, ${`${providerId}:project:p`}, ${id}, ${id}, 'RUNNING', now(), now())`);
}

async function insertOwnSeries(key: string, jobId: string): Promise<number> {
  const [row] = await rowsOf<{ id: number }>(
    suite.db.db,
    sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
        values (${key}, ${jobId}, 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time') returning id::float8 as id`,
  );
  return Number(row!.id);
}

async function count(table: 'points_1h' | 'rollup_chunks_1h', seriesId: number, where = sql`true`): Promise<number> {
  const [row] = await rowsOf<{ n: number | string }>(
    suite.db.db,
    sql`select count(*)::int as n from ${sql.raw(table)} c where c.series_id = ${seriesId} and ${where}`,
  );
  return Number(row!.n);
}

/** A series' rollup at `width` as the store reads it (rows and chunks), in bucket order. */
function rolled(seriesId: number, width: number): Promise<RollupRow[]> {
  return rollupOf(suite.db.db, width === HOUR ? rollup1h(sql`${seriesId}::bigint`) : rollup1m(sql`${seriesId}::bigint`));
}

/** What the collector's chore compacts before `before`, of each of `providers` (compactAllOf). */
async function compactAll(before: number, providers = PROVIDERS): Promise<number> {
  let hours = 0;
  for (const providerId of providers) hours += await compactAllOf(suite.repo, providerId, before);
  return hours;
}

describe('compacted 1-hour rollups', () => {
  // a: every 20 min (three values an hour) with an hour left out in November and a -0; s: every
  // 50 min (mostly one value an hour: the sparse encoding), a -0 and a null each alone in their
  // hour; e: another provider's (baseten-3) every 10 min, its raw points and 1-minute rows all
  // dropped by retention (read from the 1-hour rollup only, as stored); other: baseten-2's, hourly,
  // with an hour left out in December.
  let a = 0;
  let s = 0;
  let e = 0;
  let other = 0;
  let aPoints: PointWriteRow[] = [];
  let sPoints: PointWriteRow[] = [];
  let ePoints: PointWriteRow[] = [];
  const GAP = START + 9 * DAY + 5 * HOUR;
  const OTHER_GAP = Date.UTC(2025, 11, 20, 5);
  let otherPoints: PointWriteRow[] = [];

  const t = (id: number, from?: number, to?: number): SeriesWindow => ({
    seriesId: id,
    keyedBy: 'time',
    from: from === undefined ? null : new Date(from),
    to: to === undefined ? null : new Date(to),
  });
  const windows = (): [SeriesWindow[], number, number | undefined][] => [
    // a over 30 days at 200: 720 hours merged 4 at a time.
    [[t(a, START + 5 * DAY, START + 35 * DAY - 1)], 200, 14_400],
    // a whole, and s with a to its end across the year's boundary.
    [[t(a)], 100, undefined],
    [[t(s, START, START + 60 * DAY), t(a, START + 50 * DAY)], 150, undefined],
    // e before its raw and 1-minute cuts: its hours as stored, and unbounded.
    [[t(e, START + 20 * DAY, START + 22 * DAY)], 1000, 3600],
    [[t(e, START + 40 * DAY + 30 * MINUTE, START + 70 * DAY)], 1000, 3600],
    [[t(e)], 150, undefined],
  ];

  async function answers() {
    const out: unknown[] = [];
    for (const [ws, maxPoints, width] of windows()) {
      for (const aggregation of ['AVG', 'MIN', 'MAX', 'LAST'] as Aggregation[]) {
        const r = await suite.repo.pointsAt(ws, maxPoints, aggregation);
        for (const w of ws) expect(r.resolutions.get(w.seriesId)).toBeGreaterThanOrEqual(3600);
        if (width !== undefined) expect(r.resolutions.get(ws[0]!.seriesId)).toBe(width);
        out.push([r.points, [...r.resolutions]]);
      }
    }
    for (const id of [a, s, e]) out.push(await rolled(id, HOUR));
    return out;
  }

  let before: unknown[] = [];

  it('answers every 1-hour rollup read the same once settled months are compacted, partly and wholly', async () => {
    await insertJob('baseten-1:job:rollups', 'baseten-1');
    [a, s] = (await insertSeries(suite.db.db, ['hour-a', 'time'], ['hour-s', 'time'])) as [number, number];
    await insertJob('baseten-2:job:other', 'baseten-2');
    other = await insertOwnSeries('hour-other', 'baseten-2:job:other');
    await insertJob('baseten-3:job:e', 'baseten-3');
    e = await insertOwnSeries('hour-e', 'baseten-3:job:e');
    aPoints = wave(a, START, 20 * MINUTE, 100 * 72)
      .filter(([, k]) => k < GAP || k >= GAP + HOUR)
      .map((p, i) => (i === 77 ? ([p[0], p[1], p[2], p[3], -0] as PointWriteRow) : p));
    await suite.repo.writePoints(aPoints, { expectNew: true });
    sPoints = wave(s, START, 50 * MINUTE, 2880).map((p, i) =>
      i === 5 ? ([p[0], p[1], p[2], p[3], -0] as PointWriteRow) : i === 9 ? ([p[0], p[1], p[2], p[3], null] as PointWriteRow) : p,
    );
    await suite.repo.writePoints(sPoints);
    ePoints = wave(e, START, 10 * MINUTE, 100 * 144);
    await suite.repo.writePoints(ePoints);
    otherPoints = wave(other, START, HOUR, 100 * 24).filter(([, k]) => k !== OTHER_GAP);
    await suite.repo.writePoints(otherPoints);
    for (let after = 0; ; ) {
      const step = await suite.repo.dropRawPointsBatch('baseten-3', END, after, 200);
      if (step.last === null) break;
      after = step.last;
    }
    for (let after = 0; ; ) {
      const step = await suite.repo.dropMinuteRollupsBatch('baseten-3', END, after, 200);
      if (step.last === null) break;
      after = step.last;
    }
    before = await answers();
    expect(await rolled(a, HOUR)).toEqual(handRollup(aPoints, HOUR));
    expect(await rolled(s, HOUR)).toEqual(handRollup(sPoints, HOUR));
    expect(await rolled(e, HOUR)).toEqual(handRollup(ePoints, HOUR));
    const rows = { a: await count('points_1h', a), s: await count('points_1h', s), e: await count('points_1h', e) };

    // Half-way: settled before December's 15th, November and December's first 14 days.
    expect(await compactAll(Date.UTC(2025, 11, 15, 6))).toBe(4 * 44 * 24 - 1);
    expect(await count('rollup_chunks_1h', a)).toBe(2);
    expect(await count('rollup_chunks_1h', a, sql`c.last_bucket = ${Date.UTC(2025, 11, 14, 23)}`)).toBe(1);
    expect(await count('points_1h', a)).toBe(rows.a - (44 * 24 - 1));
    expect((await suite.repo.hourRollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1h_2025']);
    // s's hours of one value keep a bit where their min, max and sum would be: fewer than half of its
    // mins are stored, in both its chunks; other's month at one spacing keeps its offsets as [first, spacing].
    expect(await count('rollup_chunks_1h', s, sql`cardinality(array_remove(c.mins, null)) < c.n / 2`)).toBe(2);
    expect(await count('rollup_chunks_1h', other, sql`cardinality(c.offs) = 2 and c.n = 720`)).toBe(1);
    expect(await answers()).toEqual(before);

    // After December's chunk (its unsettled days): the hour other left out is fresh, and a changed
    // value there is recomputed in points_1h; December's chunk stays as it is.
    const gap = wave(other, OTHER_GAP, HOUR, 1);
    await suite.repo.writePoints(gap);
    otherPoints = [...otherPoints, ...gap].sort((x, y) => x[1] - y[1]);
    const changed = otherPoints.map((p) => (p[1] === OTHER_GAP + DAY ? ([p[0], p[1], p[2], p[3], 99.5] as PointWriteRow) : p));
    await suite.repo.writePoints(changed.filter(([, k]) => k === OTHER_GAP + DAY));
    expect(await count('rollup_chunks_1h', other)).toBe(2);
    expect(await rolled(other, HOUR)).toEqual(handRollup(changed, HOUR));
    await suite.repo.writePoints(otherPoints.filter(([, k]) => k === OTHER_GAP + DAY));
    expect(await count('rollup_chunks_1h', other)).toBe(2);
    expect(await rolled(other, HOUR)).toEqual(handRollup(otherPoints, HOUR));

    // Again: nothing settled is left. Then every day (the clock past February): December's chunk grows.
    expect(await compactAll(Date.UTC(2025, 11, 15))).toBe(0);
    expect(await compactAll(Date.UTC(2026, 2, 1))).toBe(rows.a + rows.s + rows.e + 100 * 24 - (4 * 44 * 24 - 1));
    expect(await rolled(other, HOUR)).toEqual(handRollup(otherPoints, HOUR));
    for (const id of [a, s, e, other]) expect(await count('points_1h', id)).toBe(0);
    expect(await count('rollup_chunks_1h', a)).toBe(4);
    expect((await suite.repo.hourRollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1h_2025', 'rollup_chunks_1h_2026']);
    expect(await answers()).toEqual(before);
  });

  it('keeps the rollup exact on a write into a compacted month: the same points, a changed value, a first fetch, an hour that held nothing', async () => {
    // The collector's overlap, as stored, in a's December: its raw days come back, their hours are
    // rolled up again, and December's chunk comes back into points_1h; nothing changes.
    const dec = aPoints.findIndex(([, k]) => k >= Date.UTC(2025, 11, 10));
    await suite.repo.writePoints(aPoints.slice(dec, dec + 60));
    expect(await count('rollup_chunks_1h', a)).toBe(3);
    expect(await count('points_1h', a)).toBe(31 * 24);
    expect(await answers()).toEqual(before);
    await compactAll(Date.UTC(2026, 2, 1));
    expect(await count('points_1h', a)).toBe(0);

    // A changed value in s's November (an hour of one value) and in a's January (of three).
    const sChanged = sPoints.map((p, i) => (i === 300 ? ([p[0], p[1], p[2], p[3], 1234.5] as PointWriteRow) : p));
    const jan = aPoints.findIndex(([, k]) => k >= Date.UTC(2026, 0, 3));
    const aChanged = aPoints.map((p, i) => (i === jan + 1 ? ([p[0], p[1], p[2], p[3], -7.25] as PointWriteRow) : p));
    await suite.repo.writePoints([sChanged[300]!, aChanged[jan + 1]!]);
    expect(await rolled(s, HOUR)).toEqual(handRollup(sChanged, HOUR));
    expect(await rolled(a, HOUR)).toEqual(handRollup(aChanged, HOUR));
    expect(await rolled(a, MINUTE)).toEqual(handRollup(aChanged, MINUTE));
    await compactAll(Date.UTC(2026, 2, 1));
    expect(await rolled(s, HOUR)).toEqual(handRollup(sChanged, HOUR));
    expect(await rolled(a, HOUR)).toEqual(handRollup(aChanged, HOUR));
    // And back.
    await suite.repo.writePoints([sPoints[300]!, aPoints[jan + 1]!]);
    await compactAll(Date.UTC(2026, 2, 1));
    expect(await answers()).toEqual(before);

    // A first fetch again (expectNew) of the whole of a, whose raw days, minutes and months are all
    // compacted: nothing collides with a COPY any more, so the compacted months say it is not new,
    // and the merge writes it; nothing doubles.
    expect(await count('rollup_chunks_1h', a)).toBe(4);
    await suite.repo.writePoints(aPoints, { expectNew: true });
    expect(await count('rollup_chunks_1h', a)).toBe(0);
    expect(await count('points_1h', a)).toBe(100 * 24 - 1);
    expect(await rolled(a, HOUR)).toEqual(handRollup(aPoints, HOUR));
    expect(await rolled(a, MINUTE)).toEqual(handRollup(aPoints, MINUTE));
    expect(await answers()).toEqual(before);
    await compactAll(Date.UTC(2026, 2, 1));

    // The hour a left out, written now: it has no row, but its month is compacted, so it counts as
    // held (the month comes back and the hour is recomputed from its points), exact either way.
    const gap = wave(a, GAP, 20 * MINUTE, 3);
    await suite.repo.writePoints(gap);
    const filled = [...aPoints, ...gap].sort((x, y) => x[1] - y[1]);
    expect(await count('rollup_chunks_1h', a)).toBe(3);
    expect(await count('points_1h', a)).toBe(30 * 24);
    expect(await rolled(a, HOUR)).toEqual(handRollup(filled, HOUR));
    expect(await rolled(a, MINUTE)).toEqual(handRollup(filled, MINUTE));
    await compactAll(Date.UTC(2026, 2, 1));
    expect(await count('points_1h', a)).toBe(0);
    // November at one spacing now: its offsets as a run.
    expect(await count('rollup_chunks_1h', a, sql`cardinality(c.offs) = 2 and c.n = 720`)).toBe(1);
    expect(await rolled(a, HOUR)).toEqual(handRollup(filled, HOUR));
    aPoints = filled;
  });

  it('drops whole year partitions past a 1-hour retention cut where only the provider has chunks', async () => {
    const cut = Date.UTC(2026, 0, 20, 6, 30);
    const hourBefore = async (id: number) =>
      (await rowsOf<{ m: number | string | null }>(suite.db.db, sql`select hour_before::float8 as m from series where id = ${id}`))[0]!.m;
    // 2025 holds baseten-2's chunks too: baseten-1's and baseten-3's months of it go, the partition stays.
    expect(await suite.repo.dropHourRollupChunks('baseten-1', cut)).toEqual({ dropped: 0, deleted: 4 });
    expect(await suite.repo.dropHourRollupChunks('baseten-3', cut)).toEqual({ dropped: 0, deleted: 2 });
    expect((await suite.repo.hourRollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1h_2025', 'rollup_chunks_1h_2026']);
    expect(await count('rollup_chunks_1h', a)).toBe(2);
    expect(await count('rollup_chunks_1h', other)).toBe(4);
    // baseten-2's: 2025 is only its own now, and goes whole; January, where the cut falls, stays.
    expect(await suite.repo.dropHourRollupChunks('baseten-2', cut)).toEqual({ dropped: 1, deleted: 0 });
    expect((await suite.repo.hourRollupChunkPartitions()).map((p) => p.name)).toEqual(['rollup_chunks_1h_2026']);
    expect(await count('rollup_chunks_1h', other)).toBe(2);
    expect(await rolled(a, HOUR)).toEqual(
      handRollup(
        aPoints.filter(([, k]) => k >= Date.UTC(2026, 0, 1)),
        HOUR,
      ),
    );
    expect(await suite.repo.dropHourRollupChunks('baseten-1', cut)).toEqual({ dropped: 0, deleted: 0 });
    // Where each series' 1-hour rollup now begins: the month the cut falls in.
    for (const id of [a, s, e, other]) expect(Number(await hourBefore(id))).toBe(Date.UTC(2026, 0, 1));
    // e's read from before it starts at January.
    const read = await suite.repo.pointsAt([t(e, START, START + 70 * DAY)], 1000, 'AVG');
    expect(read.resolutions.get(e)).toBe(3600);
    expect(read.points[0]!.timestamp!.getTime()).toBe(Date.UTC(2026, 0, 1));
  });
});
