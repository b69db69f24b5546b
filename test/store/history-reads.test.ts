// A long window of a time-keyed series with many raw points is read from a rollup (pointsAt says
// which, as a bucket width in seconds), and its answer equals what the raw points give computed by
// hand: min, max, last and avg (the sum in key order over the count) to the last digit where the
// rollup's buckets are answered as stored; where k of them are merged to stay within maxPoints,
// min, max and last are still exact and avg is the sum of the stored sums over their count.
import { describe, expect, it } from 'vitest';
import type { Aggregation } from '../../src/domain/types.js';
import type { PointWriteRow } from '../../src/store/repository.js';
import { heldOf, shapeHeld, summarizeHeld } from '../../src/store/shaping.js';
import { pointBatchOfRows } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { handRollup, insertSeries, type RollupRow, wave } from './rollup-fixtures.js';

const suite = useTestRepository();
const START = Date.UTC(2026, 10, 18, 0, 0, 0);
const DAY = 86_400_000;

/** The hand rollup's buckets merged k at a time from the first, as [bucket, min, max, avg, last]. */
function merged(rows: RollupRow[], width: number, k: number) {
  const base = rows[0]!.bucket;
  const out = new Map<number, { n: number; sum: number; min: number; max: number; last: number }>();
  for (const r of rows) {
    if (r.n === 0) continue;
    const b = base + Math.floor((r.bucket - base) / (width * k)) * width * k;
    const m = out.get(b);
    if (!m) out.set(b, { n: r.n, sum: r.sum!, min: r.min!, max: r.max!, last: r.last! });
    else Object.assign(m, { n: m.n + r.n, sum: m.sum + r.sum!, min: Math.min(m.min, r.min!), max: Math.max(m.max, r.max!), last: r.last! });
  }
  return [...out.entries()].map(([b, m]) => ({ bucket: b, min: m.min, max: m.max, avg: m.sum / m.n, last: m.last }));
}

describe('reads pick the resolution', () => {
  let id = 0;
  let points: PointWriteRow[] = [];

  async function read(from: number, to: number, maxPoints: number, aggregation: Aggregation) {
    const { points: rows, resolutions } = await suite.repo.pointsAt(
      [{ seriesId: id, keyedBy: 'time', from: new Date(from), to: new Date(to) }],
      maxPoints,
      aggregation,
    );
    return { rows: rows.map((r) => [r.timestamp!.getTime(), r.value]), resolution: resolutions.get(id) ?? null };
  }

  it('writes two days of samples 5 s apart', async () => {
    id = (await insertSeries(suite.db.db, ['history-reads', 'time']))[0]!;
    points = wave(id!, START, 5_000, (2 * DAY) / 5_000);
    await suite.repo.writePoints(points, { expectNew: true });
  });

  it('two days at 48 points: the 1-hour rollup as stored, exact against the raw points', async () => {
    const hours = handRollup(points, 3_600_000);
    expect(hours).toHaveLength(48);
    for (const [aggregation, pick] of [
      ['MIN', (r: RollupRow) => r.min],
      ['MAX', (r: RollupRow) => r.max],
      ['AVG', (r: RollupRow) => r.sum! / r.n],
      ['LAST', (r: RollupRow) => r.last],
    ] as const) {
      const answer = await read(START, START + 2 * DAY - 1, 48, aggregation);
      expect(answer.resolution).toBe(3600);
      expect(answer.rows).toEqual(hours.map((r) => [r.bucket, pick(r)]));
    }
    // The hand avg of the first hour, from the raw points themselves (720 of them, summed in key order).
    const first = points.filter((p) => p[1] < START + 3_600_000).map((p) => p[4]!);
    const avg = first.reduce((a, b) => a + b, 0) / first.length;
    expect((await read(START, START + 2 * DAY - 1, 48, 'AVG')).rows[0]).toEqual([START, avg]);
  });

  it('two days at 24 and 16 points: 1-hour buckets merged two and three at a time', async () => {
    // Two at a time is a day's 25 hours at 24 points, the fleet's usual read: its buckets are
    // aggregated without an order (rpair); three at a time in bucket order (ragg).
    for (const [maxPoints, k] of [
      [24, 2],
      [16, 3],
    ] as const) {
      const buckets = merged(handRollup(points, 3_600_000), 3_600_000, k);
      expect(buckets).toHaveLength(48 / k);
      for (const aggregation of ['MIN', 'MAX', 'AVG', 'LAST'] as const) {
        const answer = await read(START, START + 2 * DAY - 1, maxPoints, aggregation);
        expect(answer.resolution).toBe(3600 * k);
        const key = aggregation === 'MIN' ? 'min' : aggregation === 'MAX' ? 'max' : aggregation === 'AVG' ? 'avg' : 'last';
        expect(answer.rows).toEqual(buckets.map((r) => [r.bucket, r[key]]));
      }
    }
  });

  it('two days at 2,880 points: the 1-minute rollup as stored', async () => {
    const minutes = handRollup(points, 60_000);
    const answer = await read(START, START + 2 * DAY - 1, 2880, 'AVG');
    expect(answer.resolution).toBe(60);
    expect(answer.rows).toEqual(minutes.map((r) => [r.bucket, r.sum! / r.n]));
  });

  it('two days at 2,000 points: 1-minute buckets merged two at a time, within maxPoints', async () => {
    const two = merged(handRollup(points, 60_000), 60_000, 2);
    expect(two).toHaveLength(1440);
    for (const aggregation of ['MIN', 'MAX', 'AVG', 'LAST'] as const) {
      const answer = await read(START, START + 2 * DAY - 1, 2000, aggregation);
      expect(answer.resolution).toBe(120);
      const key = aggregation === 'MIN' ? 'min' : aggregation === 'MAX' ? 'max' : aggregation === 'AVG' ? 'avg' : 'last';
      expect(answer.rows).toEqual(two.map((r) => [r.bucket, r[key]]));
    }
    // The merged avg is the raw avg up to the order of the additions.
    const answer = await read(START, START + 2 * DAY - 1, 2000, 'AVG');
    const raw = points.slice(0, 24).map((p) => p[4]!);
    expect(answer.rows[0]![1]).toBeCloseTo(raw.reduce((a, b) => a + b, 0) / raw.length, 12);
  });

  it('a short window, or few raw points, reads raw points as before', async () => {
    const hour = await read(START, START + 3_600_000 - 1, 100, 'AVG');
    expect(hour.resolution).toBeNull();
    expect(hour.rows).toHaveLength(100);
    // Two days at 4,000 points: 34,560 raw points are fewer than 10 x maxPoints.
    const many = await read(START, START + 2 * DAY - 1, 4000, 'MAX');
    expect(many.resolution).toBeNull();
    expect(many.rows).toHaveLength(4000);
  });

  it('one read of windows that each take another path: each answered as the held points answer it alone', async () => {
    // pointsAt decides every window in a first statement and answers there what it read to decide
    // (two days from the 1-hour rollup, four minutes' 48 raw points); a second reads the rest (six
    // hours from the 1-minute rollup, an hour's 720 raw points in 48 buckets). With a step-keyed
    // series' window among them, the first statement decides both kinds of window.
    const [stepId] = await insertSeries(suite.db.db, ['history-reads-steps', 'step']);
    const stepPoints = Array.from({ length: 500 }, (_, i) => [stepId!, i + 1, START + i * 60_000, i + 1, (i * 37) % 101] as PointWriteRow);
    await suite.repo.writePoints(stepPoints, { expectNew: true });
    const timed = (from: number, to: number) => ({ seriesId: id, keyedBy: 'time' as const, from: new Date(from), to: new Date(to) });
    const windows = [
      timed(START + 6 * 3_600_000, START + 12 * 3_600_000 - 1),
      timed(START, START + 2 * DAY - 1),
      { seriesId: stepId!, keyedBy: 'step' as const, from: null, to: null },
      timed(START + 3_600_000, START + 2 * 3_600_000 - 1),
      timed(START + 60_000, START + 5 * 60_000 - 1),
    ];
    const held = heldOf(pointBatchOfRows(points), pointBatchOfRows(points).runs[0]!);
    const heldSteps = heldOf(pointBatchOfRows(stepPoints), pointBatchOfRows(stepPoints).runs[0]!);
    // What the first statement answers takes no second: a dashboard's short raw windows and a long
    // window from the 1-hour rollup are one statement each, as before the split.
    const statements = async (ws: typeof windows) => {
      const before = suite.db.statementCount();
      await suite.repo.pointsAt(ws, 48, 'AVG');
      return suite.db.statementCount() - before;
    };
    expect(await statements([windows[1]!, windows[4]!])).toBe(1);
    expect(await statements(windows)).toBe(2);
    for (const aggregation of ['MIN', 'MAX', 'AVG', 'LAST'] as const) {
      const together = await suite.repo.pointsAt(windows, 48, aggregation);
      const alone = windows.map((w) => shapeHeld(w.seriesId, w.seriesId === id ? held : heldSteps, w, 48, aggregation));
      expect(alone.map((a) => a.resolution)).toEqual([60 * 8, 3600, null, null, null]);
      expect(alone.map((a) => a.points.length)).toEqual([45, 48, 46, 48, 48]);
      // One series' windows come back in the order the store answers them: compare as sets of points per window.
      const got = together.points.filter((p) => p.seriesId === stepId);
      expect(got).toEqual(alone[2]!.points);
      const mine = together.points
        .filter((p) => p.seriesId === id)
        .map((p) => JSON.stringify(p))
        .sort();
      expect(mine).toEqual(alone.flatMap((a, i) => (i === 2 ? [] : a.points.map((p) => JSON.stringify(p)))).sort());
    }
  });

  it('summarises each window as the held points do: with values, without any, and empty', async () => {
    // Each window is aggregated on its own: a window of points without a value still has a row
    // (no count, its first and last instants), an empty one has none.
    const [sparse] = await insertSeries(suite.db.db, ['history-reads-nulls', 'time']);
    const rows = wave(sparse!, START, 60_000, 120).map((p, i) => [p[0], p[1], p[2], p[3], i >= 60 && i < 90 ? null : p[4]] as PointWriteRow);
    await suite.repo.writePoints(rows, { expectNew: true });
    const t = (seriesId: number, from: number, to: number) => ({ seriesId, keyedBy: 'time' as const, from: new Date(from), to: new Date(to) });
    const windows = [
      t(sparse!, START, START + 2 * 3_600_000),
      t(sparse!, START + 61 * 60_000, START + 80 * 60_000),
      t(sparse!, START + 5 * 3_600_000, START + 6 * 3_600_000),
      t(id, START + 3_600_000, START + DAY),
    ];
    const batch = pointBatchOfRows(rows);
    const held = [heldOf(batch, batch.runs[0]!), heldOf(pointBatchOfRows(points), pointBatchOfRows(points).runs[0]!)];
    const expected = windows.map((w, i) => summarizeHeld(w.seriesId, i, held[w.seriesId === id ? 1 : 0]!, w)).filter((r) => r !== null);
    expect(expected.map((r) => r.count)).toEqual([90, 0, (3_600 * 23) / 5 + 1]);
    const got = await suite.repo.summariesOf(windows);
    expect([...got].sort((a, b) => a.index - b.index)).toEqual(expected);
  });

  it("answers the same from points held in memory (a fetch's answer before its write commits)", async () => {
    const batch = pointBatchOfRows(points);
    const held = heldOf(batch, batch.runs[0]!);
    const cases: [number, number, number, Aggregation][] = [
      [START, START + 2 * DAY - 1, 48, 'AVG'],
      [START + 1_234_567, START + 2 * DAY - 7_654_321, 48, 'LAST'],
      [START, START + 2 * DAY - 1, 2880, 'MIN'],
      [START + 90_000, START + 2 * DAY - 1, 2000, 'AVG'],
      [START, START + 2 * DAY - 1, 4000, 'MAX'],
      [START, START + 3_600_000 - 1, 100, 'AVG'],
    ];
    for (const [from, to, maxPoints, aggregation] of cases) {
      const window = { seriesId: id, keyedBy: 'time' as const, from: new Date(from), to: new Date(to) };
      const fromSql = await suite.repo.pointsAt([window], maxPoints, aggregation);
      const fromMemory = shapeHeld(id, held, window, maxPoints, aggregation);
      expect(fromMemory.resolution).toBe(fromSql.resolutions.get(id) ?? null);
      expect(fromMemory.points).toEqual(fromSql.points);
    }
  });
});
