// Retention of the rollups (docs/history.md, "Built: retention per resolution"): a provider's
// 1-minute rows older than collect.minuteRollupRetentionDays and 1-hour rows older than
// collect.hourRollupRetentionDays, deleted by the collector's lease holder in batches of series,
// as raw points are (repo-point-writes.ts, dropRawPointsBatch). Each resolution's dropping is one
// function here, so that a layout that later keeps the 1-minute rollup as chunk rows or
// partitions changes this function and nothing that calls it.
import { sql } from 'drizzle-orm';
import type { RepoContext } from './repo-context.js';
import { HOUR_MS } from './repo-point-writes.js';
import { rangeRowsWhere, rowsOf } from './sql-util.js';

/** The UTC hour holding `ms`' start: a rollup cut is a whole hour, so the 1-hour rows cover exactly what the 1-minute ones lost. */
export function hourCut(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/**
 * 1-minute rollup retention, one batch: the `points_1m` rows before `before` (epoch ms, taken down
 * to its UTC hour) of the next `batch` time-keyed series of a provider that have any (ids above
 * `after`, in id order) are deleted, and those series remember the cut (`minute_before`, never
 * moved back). A read reaching before it is answered from the 1-hour rollup
 * (repo-point-reads.ts, pointsAt). One statement, its own transaction, through the primary key
 * (a range per series, no table scan). Returns the last series id of the batch (null: none
 * left) and the rows deleted.
 */
export function dropMinuteRollupsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; deleted: number }> {
  return dropRollupBatch(ctx, 'minute', providerId, hourCut(before), after, batch);
}

/** 1-hour rollup retention, one batch: as dropMinuteRollupsBatch, on `points_1h` and `hour_before`. */
export function dropHourRollupsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; deleted: number }> {
  return dropRollupBatch(ctx, 'hour', providerId, hourCut(before), after, batch);
}

async function dropRollupBatch(
  ctx: RepoContext,
  which: 'minute' | 'hour',
  providerId: string,
  cut: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; deleted: number }> {
  const table = sql.raw(which === 'minute' ? 'points_1m' : 'points_1h');
  const column = sql.raw(which === 'minute' ? 'minute_before' : 'hour_before');
  const [row] = await rowsOf<{ last: number | string | null; deleted: number | string }>(
    ctx.db,
    sql`
    with s as materialized (
      -- Series with rows before the cut: one index probe each for the rest.
      select s.id from series s join jobs j on j.id = s.job_id
      where j.provider_id = ${providerId} and s.keyed_by = 'time' and s.id > ${after}
        and exists (select 1 from ${table} x where x.series_id = s.id and x.bucket < ${cut})
      order by s.id limit ${batch}
    ), d as (
      -- By the batch's bucket ranges (rangeRowsWhere): as a join of s, planned for 100 series, it scanned the table.
      delete from ${table} m where ${rangeRowsWhere(which === 'minute' ? 'points_1m' : 'points_1h', 'bucket', '(select s.id as series_id from s)', null, sql`${cut}::bigint`)}
      returning m.series_id
    ), u as (
      update series set ${column} = greatest(coalesce(${column}, ${cut}), ${cut})
      where id in (select distinct series_id from d) returning 1
    )
    select (select max(id) from s)::float8 as last, (select count(*) from d)::float8 as deleted, (select count(*) from u) as marked`,
  );
  return { last: row?.last == null ? null : Number(row.last), deleted: Number(row?.deleted ?? 0) };
}
