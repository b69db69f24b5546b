// Fetched points travel as columns (store/repository.ts pointBatch, store/shaping.ts): one run per
// series, sorted by key, one point per key (the later wins), points without a key left out; the
// same from an adapter's columns as from SeriesPoints; and the answer shaped from the held run is
// the one SeriesPoints gave before (raw, bucketed, windowed by key and by time).
import { describe, expect, it } from 'vitest';
import { pointsOfColumns, seriesWithColumns, type SeriesData, type SeriesPoint } from '../../src/domain/types.js';
import { pointBatch, seriesIdentity, type JobRow } from '../../src/store/repository.js';
import { downsampleHeld, heldOf, summarizeHeld } from '../../src/store/shaping.js';

const job = { id: 'bt:job:j1', externalId: 'j1' } as JobRow;
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);

function seriesOf(name: string, points: SeriesPoint[], keyedBy: 'time' | 'step' = 'time'): SeriesData {
  return {
    kind: keyedBy === 'time' ? 'system' : 'training',
    name,
    rawName: null,
    unit: 'RATIO',
    scope: 'JOB',
    nodeExternalId: null,
    gpuIndex: null,
    source: 'baseten',
    stage: null,
    keyedBy,
    meta: {},
    points,
  };
}

function asColumns(s: SeriesData): SeriesData {
  const n = s.points.length;
  const num = (x: number | null) => x ?? Number.NaN;
  const { points, ...rest } = s;
  return seriesWithColumns(rest, {
    length: n,
    ts: Float64Array.from(points, (p) => p.timestamp?.getTime() ?? Number.NaN),
    step: points.some((p) => p.step !== null) ? Float64Array.from(points, (p) => num(p.step)) : null,
    value: Float64Array.from(points, (p) => num(p.value)),
  });
}

const at = (i: number) => new Date(T0 + i * 15_000);
const rising = seriesOf(
  'GPU_UTILIZATION',
  Array.from({ length: 50 }, (_, i) => ({ timestamp: at(i), step: null, value: i % 7 === 3 ? null : i / 10 })),
);
const shuffled = seriesOf('CPU_USAGE', [
  { timestamp: at(3), step: null, value: 3 },
  { timestamp: at(1), step: null, value: 1 },
  { timestamp: null, step: null, value: 99 },
  { timestamp: at(3), step: null, value: 33 },
  { timestamp: at(2), step: null, value: null },
]);
const steps = seriesOf(
  'loss',
  [
    { timestamp: at(0), step: 10, value: 2.5 },
    { timestamp: null, step: 20, value: 2.0 },
    { timestamp: at(2), step: null, value: 1.0 },
    { timestamp: at(3), step: 30, value: 1.5 },
  ],
  'step',
);

function batchOf(series: SeriesData[]) {
  const ids = new Map<string, number>();
  for (const s of series) {
    const key = seriesIdentity('bt', job, s).key;
    if (!ids.has(key)) ids.set(key, ids.size + 1);
  }
  return pointBatch('bt', [{ job, series }], ids);
}

const rowsOf = (r: ReturnType<typeof batchOf>, id: number) => {
  const run = r.runs.get(id)!;
  return Array.from({ length: run.end - run.start }, (_, j) => {
    const i = run.start + j;
    return [r.batch.key[i], r.batch.ts[i], r.batch.step[i], r.batch.value[i]];
  });
};

describe('pointBatch', () => {
  it('keeps one point per key in key order, the later of a repeated key, and leaves out points without a key', () => {
    const r = batchOf([rising, shuffled, steps]);
    expect(rowsOf(r, 1)).toHaveLength(50);
    expect(rowsOf(r, 2)).toEqual([
      [at(1).getTime(), at(1).getTime(), Number.NaN, 1],
      [at(2).getTime(), at(2).getTime(), Number.NaN, Number.NaN],
      [at(3).getTime(), at(3).getTime(), Number.NaN, 33],
    ]);
    expect(rowsOf(r, 3)).toEqual([
      [10, at(0).getTime(), 10, 2.5],
      [20, Number.NaN, 20, 2.0],
      [30, at(3).getTime(), 30, 1.5],
    ]);
    expect(r.batch.length).toBe(56);
  });

  it('gives the same batch from an adapter columns as from its SeriesPoints', () => {
    const a = batchOf([rising, shuffled, steps]);
    const b = batchOf([rising, shuffled, steps].map(asColumns));
    expect([...b.batch.key]).toEqual([...a.batch.key]);
    expect([...b.batch.ts]).toEqual([...a.batch.ts]);
    expect([...b.batch.step]).toEqual([...a.batch.step]);
    expect([...b.batch.value]).toEqual([...a.batch.value]);
    expect(b.batch.runs).toEqual(a.batch.runs);
  });

  it('merges two fetches of one series in a batch: the later wins a shared key', () => {
    const first = seriesOf(
      'GPU_UTILIZATION',
      [0, 1, 2].map((i) => ({ timestamp: at(i), step: null, value: i })),
    );
    const second = seriesOf(
      'GPU_UTILIZATION',
      [2, 3].map((i) => ({ timestamp: at(i), step: null, value: i * 100 })),
    );
    const r = batchOf([first, second]);
    const run = r.runs.get(1)!;
    expect([...r.batch.value.subarray(run.start, run.end)]).toEqual([0, 1, 200, 300]);
  });

  it('makes SeriesPoints from a series columns when asked for them, and copies of the series carry only those', () => {
    const c = asColumns(shuffled);
    expect(c.points).toEqual(shuffled.points);
    expect(pointsOfColumns(c.columns!)).toEqual(shuffled.points);
    expect({ ...c }).toEqual(shuffled);
  });
});

describe('answers shaped from held columns', () => {
  const r = batchOf([rising, shuffled, steps]);
  const held = (id: number) => heldOf(r.batch, r.runs.get(id)!);
  const point = (p: SeriesPoint) => ({ seriesId: 1, timestamp: p.timestamp, step: p.step, value: p.value });

  it('answers raw points inside a time window (the key range, bounds included)', () => {
    const w = { seriesId: 1, keyedBy: 'time' as const, from: at(10), to: at(19) };
    expect(downsampleHeld(1, held(1), w, 100, 'AVG')).toEqual(rising.points.slice(10, 20).map(point));
    expect(downsampleHeld(1, held(1), { ...w, from: new Date(at(10).getTime() + 1) }, 100, 'AVG')).toHaveLength(9);
    expect(downsampleHeld(1, held(1), { seriesId: 1, keyedBy: 'time', from: at(60), to: null }, 100, 'AVG')).toEqual([]);
  });

  it('buckets like the SQL: equal-width key buckets stamped with their first point, nulls ignored, LAST keeps a null', () => {
    const w = { seriesId: 1, keyedBy: 'time' as const, from: null, to: null };
    const avg = downsampleHeld(1, held(1), w, 10, 'AVG');
    expect(avg).toHaveLength(10);
    // Bucket 0 holds points 0..4 (width 5 steps of 15 s); point 3 is a gap.
    expect(avg[0]).toEqual({ seriesId: 1, timestamp: at(0), step: null, value: (0 + 0.1 + 0.2 + 0.4) / 4 });
    expect(downsampleHeld(1, held(1), w, 10, 'LAST')[4]!.value).toBeNull(); // point 24 is a gap
    expect(downsampleHeld(1, held(1), w, 10, 'LAST')[3]!.value).toBe(1.9);
    expect(downsampleHeld(1, held(1), w, 10, 'MAX')[0]!.value).toBe(0.4);
    expect(downsampleHeld(1, held(1), w, 10, 'MIN')[0]!.value).toBe(0);
    // Every series of an answer shares one Date per instant.
    const dates = new Map<number, Date>();
    const a = downsampleHeld(1, held(1), w, 100, 'AVG', dates);
    const b = downsampleHeld(1, held(1), w, 100, 'AVG', dates);
    expect(a[5]!.timestamp).toBe(b[5]!.timestamp);
  });

  it('windows a step-keyed series by time: points without a time are outside any bounded window', () => {
    const w = { seriesId: 3, keyedBy: 'step' as const, from: at(0), to: at(3) };
    expect(downsampleHeld(3, held(3), w, 100, 'AVG').map((p) => p.step)).toEqual([10, 30]);
    expect(downsampleHeld(3, held(3), { ...w, from: null, to: null }, 100, 'AVG').map((p) => p.step)).toEqual([10, 20, 30]);
    expect(summarizeHeld(3, 0, held(3), { ...w, from: null, to: null })).toEqual({
      seriesId: 3,
      index: 0,
      count: 3,
      min: 1.5,
      max: 2.5,
      avg: 2,
      last: 1.5,
      firstAt: at(0),
      lastAt: at(3),
    });
  });
});
