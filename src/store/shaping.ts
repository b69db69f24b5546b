// The store's downsample and summary, computed over points held in memory: the same buckets,
// aggregates and order as Repository.pointsOf and Repository.summariesOf compute in SQL, so an
// answer given from what upstream just returned (before its cache write commits) is the answer
// the cache gives once it has. Any change to the SQL must be mirrored here (the read-through test
// compares the two answers point for point).
import type { Aggregation } from '../domain/types.js';
import type { PointRow, SeriesWindow, SummaryRow } from './repository.js';

/** One stored point: `key` is epoch ms (time-keyed series) or the step (step-keyed ones). */
export interface HeldPoint {
  key: number;
  ts: Date | null;
  step: number | null;
  value: number | null;
}

/** The points of the window: the key range for time-keyed series, the timestamp range otherwise. */
function inWindow(points: readonly HeldPoint[], w: SeriesWindow): HeldPoint[] {
  if (w.keyedBy === 'time') {
    const from = w.from?.getTime() ?? -Infinity;
    const to = w.to?.getTime() ?? Infinity;
    return points.filter((p) => p.key >= from && p.key <= to);
  }
  if (!w.from && !w.to) return points as HeldPoint[];
  const from = w.from?.getTime() ?? -Infinity;
  const to = w.to?.getTime() ?? Infinity;
  // SQL's `ts >= from` is unknown (so false) for a null ts.
  return points.filter((p) => p.ts !== null && p.ts.getTime() >= from && p.ts.getTime() <= to);
}

/** Points sorted by key, at most maxPoints: raw when few enough, else equal-width key buckets. */
export function downsampleHeld(seriesId: number, points: readonly HeldPoint[], w: SeriesWindow, maxPoints: number, aggregation: Aggregation): PointRow[] {
  const pts = inWindow(points, w);
  if (pts.length === 0) return [];
  if (pts.length <= maxPoints) return pts.map((p) => ({ seriesId, ts: p.ts, step: p.step, value: p.value }));
  const lo = pts[0]!.key;
  const hi = pts[pts.length - 1]!.key;
  const width = Math.max(1, Math.ceil((hi - lo + 1) / maxPoints));
  const out: PointRow[] = [];
  let bucket = -1;
  let ts: number | null = null;
  let step: number | null = null;
  let sum = 0;
  let n = 0;
  let min: number | null = null;
  let max: number | null = null;
  let last: number | null = null;
  const flush = () => {
    if (bucket < 0) return;
    const value = aggregation === 'MIN' ? min : aggregation === 'MAX' ? max : aggregation === 'LAST' ? last : n > 0 ? sum / n : null;
    out.push({ seriesId, ts: ts === null ? null : new Date(ts), step, value });
  };
  for (const p of pts) {
    const b = Math.floor((p.key - lo) / width);
    if (b !== bucket) {
      flush();
      bucket = b;
      ts = null;
      step = null;
      sum = 0;
      n = 0;
      min = null;
      max = null;
    }
    // min(ts), min(step): nulls ignored, as in SQL.
    if (p.ts !== null && (ts === null || p.ts.getTime() < ts)) ts = p.ts.getTime();
    if (p.step !== null && (step === null || p.step < step)) step = p.step;
    // LAST is the value of the bucket's highest key, null or not (array_agg keeps nulls).
    last = p.value;
    if (p.value !== null) {
      sum += p.value;
      n++;
      if (min === null || p.value < min) min = p.value;
      if (max === null || p.value > max) max = p.value;
    }
  }
  flush();
  return out;
}

/** Statistics over the raw points of the window, as Repository.summariesOf gives them (null: no points). */
export function summarizeHeld(seriesId: number, index: number, points: readonly HeldPoint[], w: SeriesWindow): SummaryRow | null {
  const pts = inWindow(points, w);
  if (pts.length === 0) return null;
  let count = 0;
  let sum = 0;
  let min: number | null = null;
  let max: number | null = null;
  let last: number | null = null;
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  for (const p of pts) {
    if (p.ts !== null) {
      const t = p.ts.getTime();
      if (firstAt === null || t < firstAt) firstAt = t;
      if (lastAt === null || t > lastAt) lastAt = t;
    }
    if (p.value === null) continue;
    count++;
    sum += p.value;
    if (min === null || p.value < min) min = p.value;
    if (max === null || p.value > max) max = p.value;
    last = p.value;
  }
  return {
    seriesId,
    index,
    count,
    min,
    max,
    avg: count > 0 ? sum / count : null,
    last,
    firstAt: firstAt === null ? null : new Date(firstAt),
    lastAt: lastAt === null ? null : new Date(lastAt),
  };
}
