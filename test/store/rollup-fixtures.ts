// Series, points and hand-computed rollups for the rollup tests (rollups, history-reads, retention).
import { type SQL, sql } from 'drizzle-orm';
import type { Db } from '../../src/store/db.js';
import type { PointWriteRow, Repository } from '../../src/store/repository.js';
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
  return rollupOf(db, sql`(select bucket, n, min, max, sum, last from ${sql.raw(table)} where series_id = ${seriesId})`);
}

/** The rows of a rollup subquery (bucket, n, min, max, sum, last: rollup1h, rollup1m or a table's), in bucket order. */
export async function rollupOf(db: Db, rollup: SQL): Promise<RollupRow[]> {
  const rows = await rowsOf<Record<string, string | number | null>>(
    db,
    sql`select m.bucket::float8 as bucket, m.n, m.min, m.max, m.sum, m.last from ${rollup} m order by m.bucket`,
  );
  const num = (v: string | number | null | undefined) => (v == null ? null : Number(v));
  return rows.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n), min: num(r.min), max: num(r.max), sum: num(r.sum), last: num(r.last) }));
}

/**
 * What the collector's chore compacts of `providerId` before `before`: raw days, the 1-minute
 * rollup's days, the 1-hour rollup's months, in batches of one series. Returns the 1-hour rows moved.
 */
export async function compactAllOf(repo: Repository, providerId: string, before: number): Promise<number> {
  let hours = 0;
  for (const kind of ['raw', 'minute', 'hour'] as const) {
    for (let after = 0; ; ) {
      const step =
        kind === 'raw'
          ? await repo.compactRawPointsBatch(providerId, before, after, 1)
          : kind === 'minute'
            ? await repo.compactRollupsBatch(providerId, before, after, 1)
            : await repo.compactHourRollupsBatch(providerId, before, after, 1);
      if (kind === 'hour') hours += (step as { rows: number }).rows;
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
  }
  return hours;
}
