// The store's downsample and summary, computed over points held in memory: the same buckets,
// aggregates and order as Repository.pointsOf and Repository.summariesOf compute in SQL, so an
// answer given from what upstream just returned (before its cache write commits) is the answer
// the cache gives once it has. Any change to the SQL must be mirrored here (the read-through test
// compares the two answers point for point).
import type { Aggregation } from '../domain/types.js';
import { bucketOf, HOUR_MS, HOURLY_FROM_MS, MINUTE_MS, ROLLUP_ABOVE_POINTS, type PointRow, type SeriesWindow, type SummaryRow } from './repository.js';
import type { PointBatch, PointRun } from './sql-util.js';

/**
 * A series' stored points as columns, sorted by key, one per key: `key` is epoch ms (time-keyed
 * series) or the step (step-keyed ones); NaN stands for null in ts, step and value. Views into
 * the batch being written: no object per point until an answer asks for its points.
 */
export interface HeldPoints {
  readonly length: number;
  readonly key: Float64Array;
  readonly ts: Float64Array;
  readonly step: Float64Array;
  readonly value: Float64Array;
}

/** The run's rows of a batch, as held points (views, no copy). */
export function heldOf(batch: PointBatch, run: PointRun): HeldPoints {
  return {
    length: run.end - run.start,
    key: batch.key.subarray(run.start, run.end),
    ts: batch.ts.subarray(run.start, run.end),
    step: batch.step.subarray(run.start, run.end),
    value: batch.value.subarray(run.start, run.end),
  };
}

const nullable = (x: number) => (Number.isNaN(x) ? null : x);

/**
 * The indexes of the window's points, in key order: the key range for time-keyed series (a binary
 * search: keys are sorted), the timestamp range otherwise.
 */
function inWindow(points: HeldPoints, w: SeriesWindow): { from: number; to: number } | number[] {
  const from = w.from?.getTime() ?? -Infinity;
  const to = w.to?.getTime() ?? Infinity;
  if (w.keyedBy === 'time') return { from: lowerBound(points.key, from), to: lowerBound(points.key, to, true) };
  if (!w.from && !w.to) return { from: 0, to: points.length };
  // SQL's `ts >= from` is unknown (so false) for a null ts; NaN compares false as well.
  const out: number[] = [];
  for (let i = 0; i < points.length; i++) {
    const t = points.ts[i]!;
    if (t >= from && t <= to) out.push(i);
  }
  return out;
}

/** The first index whose key is >= x (> x with `after`). */
function lowerBound(keys: Float64Array, x: number, after = false): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < x || (after && keys[mid]! === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The j-th index of a window's points. */
const at = (sel: { from: number; to: number } | number[], j: number) => (Array.isArray(sel) ? sel[j]! : sel.from + j);
const countOf = (sel: { from: number; to: number } | number[]) => (Array.isArray(sel) ? sel.length : Math.max(0, sel.to - sel.from));
const firstOf = (sel: { from: number; to: number } | number[]) => (Array.isArray(sel) ? sel[0]! : sel.from);
const lastOf = (sel: { from: number; to: number } | number[]) => (Array.isArray(sel) ? sel[sel.length - 1]! : sel.to - 1);

/** The Date of an instant, one per instant for all the series of an answer (`dates`). */
function dateOf(ms: number, dates: Map<number, Date>): Date | null {
  if (Number.isNaN(ms)) return null;
  let d = dates.get(ms);
  if (d === undefined) dates.set(ms, (d = new Date(ms)));
  return d;
}

/**
 * downsampleHeld, or where Repository.pointsAt would read a rollup (a long window of a time-keyed
 * series with many points), the same rollup computed from the held points, which are all the
 * series has: the same choice, buckets, sums and their order. `resolution`: as pointsAt's.
 */
export function shapeHeld(
  seriesId: number,
  points: HeldPoints,
  w: SeriesWindow,
  maxPoints: number,
  aggregation: Aggregation,
  dates: Map<number, Date> = new Map(),
): { points: PointRow[]; resolution: number | null } {
  const sel = inWindow(points, w);
  const count = countOf(sel);
  if (w.keyedBy !== 'time' || count === 0) return { points: downsampleHeld(seriesId, points, w, maxPoints, aggregation, dates), resolution: null };
  const lo = points.key[firstOf(sel)]!;
  const hi = points.key[lastOf(sel)]!;
  // The samples of the window's hours, as the 1-hour rollup counts them.
  const hoursFrom = w.from ? bucketOf(w.from.getTime(), HOUR_MS) : -Infinity;
  const hoursTo = w.to ? bucketOf(w.to.getTime(), HOUR_MS) + HOUR_MS : Infinity;
  let rn = 0;
  for (let i = lowerBound(points.key, hoursFrom); i < points.length && points.key[i]! < hoursTo; i++) if (!Number.isNaN(points.value[i]!)) rn++;
  if (!(rn > Math.max(ROLLUP_ABOVE_POINTS, 10 * maxPoints) && (hi - lo + 1) / maxPoints >= MINUTE_MS / 2)) {
    return { points: downsampleHeld(seriesId, points, w, maxPoints, aggregation, dates), resolution: null };
  }
  const r = (hi - lo + 1) / maxPoints >= HOURLY_FROM_MS ? HOUR_MS : MINUTE_MS;
  const base = bucketOf(lo, r);
  const hiR = bucketOf(hi, r);
  const width = r * Math.max(1, Math.ceil((hiR - base + r) / (r * maxPoints)));
  // The rollup's buckets of [base, hiR]: whole buckets, points outside the window's ends too.
  const buckets: { bucket: number; n: number; min: number; max: number; sum: number; last: number }[] = [];
  for (let i = lowerBound(points.key, base); i < points.length && points.key[i]! < hiR + r; i++) {
    const bucket = bucketOf(points.key[i]!, r);
    let b = buckets[buckets.length - 1];
    if (b?.bucket !== bucket) buckets.push((b = { bucket, n: 0, min: Number.NaN, max: Number.NaN, sum: Number.NaN, last: Number.NaN }));
    const v = points.value[i]!;
    if (Number.isNaN(v)) continue;
    b.n++;
    b.min = Number.isNaN(b.min) || v < b.min ? v : b.min;
    b.max = Number.isNaN(b.max) || v > b.max ? v : b.max;
    b.sum = Number.isNaN(b.sum) ? v : b.sum + v;
    b.last = v;
  }
  // Merged `width / r` at a time, as pointsAt's SQL: sums in bucket order, min, max, the last non-empty bucket's last.
  const out: PointRow[] = [];
  let j = 0;
  while (j < buckets.length) {
    const g = Math.floor((buckets[j]!.bucket - base) / width);
    let n = 0;
    let sum = Number.NaN;
    let min = Number.NaN;
    let max = Number.NaN;
    let last = Number.NaN;
    for (; j < buckets.length && Math.floor((buckets[j]!.bucket - base) / width) === g; j++) {
      const b = buckets[j]!;
      if (b.n === 0) continue;
      n += b.n;
      sum = Number.isNaN(sum) ? b.sum : sum + b.sum;
      min = Number.isNaN(min) || b.min < min ? b.min : min;
      max = Number.isNaN(max) || b.max > max ? b.max : max;
      last = b.last;
    }
    if (n === 0) continue;
    const value = aggregation === 'MIN' ? min : aggregation === 'MAX' ? max : aggregation === 'LAST' ? last : sum / n;
    out.push({ seriesId, timestamp: dateOf(base + g * width, dates), step: null, value });
  }
  return { points: out, resolution: width / 1000 };
}

/**
 * Points sorted by key, at most maxPoints: raw when few enough, else equal-width key buckets.
 * `dates` is shared by the series of one answer (they share their instants), as the SQL read does.
 */
export function downsampleHeld(
  seriesId: number,
  points: HeldPoints,
  w: SeriesWindow,
  maxPoints: number,
  aggregation: Aggregation,
  dates: Map<number, Date> = new Map(),
): PointRow[] {
  const sel = inWindow(points, w);
  const count = countOf(sel);
  if (count === 0) return [];
  if (count <= maxPoints) {
    const out: PointRow[] = new Array(count);
    for (let j = 0; j < count; j++) {
      const i = at(sel, j);
      out[j] = { seriesId, timestamp: dateOf(points.ts[i]!, dates), step: nullable(points.step[i]!), value: nullable(points.value[i]!) };
    }
    return out;
  }
  const lo = points.key[firstOf(sel)]!;
  const hi = points.key[lastOf(sel)]!;
  const width = Math.max(1, Math.ceil((hi - lo + 1) / maxPoints));
  const out: PointRow[] = [];
  let bucket = -1;
  let ts = Number.NaN;
  let step = Number.NaN;
  let sum = 0;
  let n = 0;
  let min = Number.NaN;
  let max = Number.NaN;
  let last = Number.NaN;
  const flush = () => {
    if (bucket < 0) return;
    const value = aggregation === 'MIN' ? min : aggregation === 'MAX' ? max : aggregation === 'LAST' ? last : n > 0 ? sum / n : Number.NaN;
    out.push({ seriesId, timestamp: dateOf(ts, dates), step: nullable(step), value: nullable(value) });
  };
  for (let j = 0; j < count; j++) {
    const i = at(sel, j);
    const b = Math.floor((points.key[i]! - lo) / width);
    if (b !== bucket) {
      flush();
      bucket = b;
      ts = Number.NaN;
      step = Number.NaN;
      sum = 0;
      n = 0;
      min = Number.NaN;
      max = Number.NaN;
    }
    // min(ts), min(step): nulls ignored, as in SQL.
    const t = points.ts[i]!;
    if (!Number.isNaN(t) && (Number.isNaN(ts) || t < ts)) ts = t;
    const s = points.step[i]!;
    if (!Number.isNaN(s) && (Number.isNaN(step) || s < step)) step = s;
    // LAST is the value of the bucket's highest key, null or not (array_agg keeps nulls).
    const v = points.value[i]!;
    last = v;
    if (!Number.isNaN(v)) {
      sum += v;
      n++;
      if (Number.isNaN(min) || v < min) min = v;
      if (Number.isNaN(max) || v > max) max = v;
    }
  }
  flush();
  return out;
}

/** Statistics over the raw points of the window, as Repository.summariesOf gives them (null: no points). */
export function summarizeHeld(seriesId: number, index: number, points: HeldPoints, w: SeriesWindow): SummaryRow | null {
  const sel = inWindow(points, w);
  const n = countOf(sel);
  if (n === 0) return null;
  let count = 0;
  let sum = 0;
  let min: number | null = null;
  let max: number | null = null;
  let last: number | null = null;
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  for (let j = 0; j < n; j++) {
    const i = at(sel, j);
    const t = points.ts[i]!;
    if (!Number.isNaN(t)) {
      if (firstAt === null || t < firstAt) firstAt = t;
      if (lastAt === null || t > lastAt) lastAt = t;
    }
    const v = points.value[i]!;
    if (Number.isNaN(v)) continue;
    count++;
    sum += v;
    if (min === null || v < min) min = v;
    if (max === null || v > max) max = v;
    last = v;
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
