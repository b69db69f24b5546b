// Series, points and hand-computed rollups for the rollup tests (rollups, history-reads, retention).
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/store/db.js';
import type { PointWriteRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';

export interface RollupRow {
  bucket: number;
  n: number;
  min: number | null;
  max: number | null;
  sum: number | null;
  last: number | null;
}

/** Series rows (key, keyed_by) of one job; returns their ids in order. */
export async function insertSeries(db: Db, ...series: [string, 'time' | 'step'][]): Promise<number[]> {
  const ids: number[] = [];
  for (const [key, keyedBy] of series) {
    const [row] = await rowsOf<{ id: number }>(
      db,
      sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
          values (${key}, 'baseten-1:job:rollups', ${keyedBy === 'time' ? 'system' : 'training'}, 'gpu_utilization', 'RATIO', 'GPU', 'baseten', ${keyedBy})
          returning id::float8 as id`,
    );
    ids.push(Number(row!.id));
  }
  return ids;
}

/** `count` samples of a series from `start`, `every` ms apart: a GPU-utilisation-like percentage with two decimals. */
export function wave(seriesId: number, start: number, every: number, count: number): PointWriteRow[] {
  return Array.from({ length: count }, (_, i) => {
    const t = start + i * every;
    return [seriesId, t, t, null, Math.round((50 + 40 * Math.sin(i / 37) + ((i * 7919) % 13)) * 100) / 100] as PointWriteRow;
  });
}

/** The rollup of `points` (of one series, in key order) at `width` ms, as the store must keep it: the sum in key order. */
export function handRollup(points: readonly PointWriteRow[], width: number): RollupRow[] {
  const out = new Map<number, RollupRow>();
  for (const [, key, , , value] of points) {
    const bucket = key - (((key % width) + width) % width);
    let r = out.get(bucket);
    if (!r) out.set(bucket, (r = { bucket, n: 0, min: null, max: null, sum: null, last: null }));
    if (value === null) continue;
    r.n++;
    r.min = r.min === null ? value : Math.min(r.min, value);
    r.max = r.max === null ? value : Math.max(r.max, value);
    r.sum = r.sum === null ? value : r.sum + value;
    r.last = value;
  }
  return [...out.values()].sort((a, b) => a.bucket - b.bucket);
}

export async function rollupRows(db: Db, table: 'points_1m' | 'points_1h', seriesId: number): Promise<RollupRow[]> {
  const rows = await rowsOf<Record<string, string | number | null>>(
    db,
    sql`select bucket::float8 as bucket, n, min, max, sum, last from ${sql.raw(table)} where series_id = ${seriesId} order by bucket`,
  );
  const num = (v: string | number | null | undefined) => (v == null ? null : Number(v));
  return rows.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n), min: num(r.min), max: num(r.max), sum: num(r.sum), last: num(r.last) }));
}
