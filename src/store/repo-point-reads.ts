// Reads of series and their points over windows: downsampled in SQL (raw points, or the 1-minute
// and 1-hour rollups for long windows) and summarised, many series in one statement.
import { sql, type SQL } from 'drizzle-orm';
import type { Aggregation } from '../domain/types.js';
import type { RepoContext } from './repo-context.js';
import type { PointRow, SeriesRow, SeriesWindow, SummaryRow } from './repo-types.js';
import { HOUR_MS, MINUTE_MS } from './repo-point-writes.js';
import { rowsOf, textArray, toDate } from './sql-util.js';
import { CHUNK_MS, edgeRawPoint, rawPoints } from './raw-points.js';
import { edgeRollup1m, rollup1m } from './rollup-chunks.js';
import { edgeRollup1h, rollup1h } from './hour-rollups.js';

/** A numeric SQL array as a driver returns it: parsed, or in Postgres' text form. */
type NumberArray = readonly (number | string | null)[] | string;

/**
 * The numbers of a numeric SQL array (int or float8; NULL elements as null). postgres.js parses a
 * NULL element through the number parser, as NaN: stored values are finite or null (the adapters
 * map NaN to null), so NaN here is a NULL.
 */
function numbersOf(a: NumberArray): (number | null)[] {
  const items = typeof a === 'string' ? (a === '{}' ? [] : a.slice(1, -1).split(',')) : a;
  return items.map((x) => {
    if (x === null || x === 'NULL') return null;
    const n = Number(x);
    return Number.isNaN(n) ? null : n;
  });
}

const MIN_KEY = sql.raw('(-9223372036854775807)::bigint');

/**
 * A window reads a rollup only when its raw points are many (pointsAt): up to this many in the
 * window (and 10 x maxPoints), raw points answer as they always did, equal-width buckets and all;
 * a series' thousand points cost about a millisecond, and short windows keep their detail. Above
 * it the raw read grows with the samples (bench:history, 15-s samples: a fleet read of 1,000
 * series x 2,000 points took 18x its 1-hour rollup rows).
 */
export const ROLLUP_ABOVE_POINTS = 1_000;
/**
 * A rolled window whose raw equal-width bucket would be at least this wide (ms) reads the 1-hour
 * rollup, else the 1-minute one. With the rollup read only where that bucket is at least half a
 * minute, the answer's buckets (merged k at a time to stay within maxPoints) are never fewer than
 * half of maxPoints: the detail asked for, from fewer than 30 x maxPoints 1-minute rows.
 */
export const HOURLY_FROM_MS = 30 * MINUTE_MS;

/** SQL: the start of the `width`-ms bucket of `expr` (a bigint column; null stays the lowest key). */
function bucketSql(expr: string, width: number | string): SQL {
  return sql.raw(`case when ${expr} is null then (-9223372036854775807)::bigint else ${expr} - ((${expr} % ${width}) + ${width}) % ${width} end`);
}

/** SQL: the `aggregation` of the column `value`; LAST is its value at the highest `key`. */
export function aggregateSql(aggregation: Aggregation, value: string, key: string): SQL {
  return sql.raw(
    aggregation === 'MIN'
      ? `min(${value})`
      : aggregation === 'MAX'
        ? `max(${value})`
        : aggregation === 'LAST'
          ? `(array_agg(${value} order by ${key} desc))[1]`
          : `avg(${value})`,
  );
}

/** The windows as a relation (idx, series_id, k_from, k_to, t_from, t_to), bound as one JSON parameter. */
function windowsSql(windows: readonly SeriesWindow[]): SQL {
  const json = JSON.stringify(
    windows.map((w, idx) => {
      const from = w.from?.getTime() ?? null;
      const to = w.to?.getTime() ?? null;
      return w.keyedBy === 'time'
        ? [idx, w.seriesId, from, to, null, null, true]
        : [idx, w.seriesId, null, null, w.from?.toISOString() ?? null, w.to?.toISOString() ?? null, false];
    }),
  );
  return sql`select (r->>0)::int as idx, (r->>1)::bigint as series_id, (r->>2)::bigint as k_from, (r->>3)::bigint as k_to,
    (r->>4)::timestamptz as t_from, (r->>5)::timestamptz as t_to, (r->>6)::boolean as timed
    from jsonb_array_elements(${json}::jsonb) as r`;
}

/** A series' points as three arrays in key order (ts as epoch ms, steps, vals), from the rows of `rows`. */
function pointArrays(rows: string, orderBy: string): SQL {
  return sql.raw(`array_agg(floor(extract(epoch from ${rows}.ts) * 1000)::float8 order by ${orderBy}) as ts,
    array_agg(${rows}.step order by ${orderBy}) as steps,
    array_agg(${rows}.value::float8 order by ${orderBy}) as vals`);
}

export async function seriesOfJobs(ctx: RepoContext, jobIds: readonly string[], kind: 'system' | 'training'): Promise<SeriesRow[]> {
  if (jobIds.length === 0) return [];
  return ctx.read(() => ctx.reads.seriesOfJobs.execute({ ids: [...jobIds], kind }));
}

/**
 * Per job, the time of its training series' newest points: each series' point of the highest key
 * (one backwards step on the points' key index), the latest of those per job. A job without a
 * timed training point is absent. Where a step was logged again later (a resumed run), the highest
 * step's time is earlier than the newest point's: an earlier answer, never a later one.
 */
export async function lastTrainingPointTimes(ctx: RepoContext, jobIds: readonly string[]): Promise<Map<string, Date>> {
  if (jobIds.length === 0) return new Map();
  const rows = await ctx.read(() =>
    rowsOf<{ job_id: string; last_at: unknown }>(
      ctx.db,
      sql`select s.job_id, max(lp.ts) as last_at
        from series s
        cross join lateral ${edgeRawPoint(sql`s.id`, 'last')} lp
        where s.job_id = any(${textArray(jobIds)}) and s.kind = 'training'
        group by s.job_id`,
    ),
  );
  const out = new Map<string, Date>();
  for (const r of rows) {
    const at = toDate(r.last_at);
    if (at) out.set(r.job_id, at);
  }
  return out;
}

/**
 * Points of many series in one statement, each in its own window, downsampled in SQL to at most
 * `maxPoints` per series: a series with few enough points comes back raw, a larger one in
 * equal-width buckets of its key (time or step) aggregated by `aggregation`, each bucket
 * stamped with its first point.
 */
export async function pointsOf(ctx: RepoContext, windows: readonly SeriesWindow[], maxPoints: number, aggregation: Aggregation): Promise<PointRow[]> {
  return (await pointsAt(ctx, windows, maxPoints, aggregation)).points;
}

/**
 * pointsOf, and the resolution each series was answered at: a long window of a time-keyed series
 * whose raw points are many (more than ROLLUP_ABOVE_POINTS and 10 x maxPoints, counted from the
 * 1-hour rollup) is read from a rollup instead of its raw points, as is a window reaching before
 * the series' raw points were dropped by retention, when the raw equal-width bucket would be half
 * a minute or more. The rollup is the 1-hour one when that bucket would be 30 minutes or more,
 * or the window reaches before the series' 1-minute rows were dropped by retention
 * (series.minute_before), else the 1-minute one (HOURLY_FROM_MS); its buckets are answered
 * as stored when they number at most maxPoints (min, max, count, last and avg = sum / count equal
 * the raw points' to the last digit), else merged k at a time (avg = the sum of their sums / their
 * count). `resolutions` holds the bucket width in seconds of each series read from a rollup;
 * series read from raw points are absent. One statement, as before.
 */
export async function pointsAt(
  ctx: RepoContext,
  windows: readonly SeriesWindow[],
  maxPoints: number,
  aggregation: Aggregation,
): Promise<{ points: PointRow[]; resolutions: Map<number, number> }> {
  if (windows.length === 0) return { points: [], resolutions: new Map() };
  const agg = aggregateSql(aggregation, 'pt.value', 'pt.key');
  const aggOrdered = aggregation === 'AVG' ? sql.raw('avg(pt.value order by pt.key)') : agg;
  // The key range of each window comes from the primary-key index ends. Each series' first
  // maxPoints + 1 points in the window are then read once, in key order, into arrays: a series
  // with no more than maxPoints is answered from them as is (no count first and a second read of
  // the same points: a warm dashboard read each of its million points twice); a larger one is read
  // with one index range scan per bucket, so its points arrive in key order and nothing is sorted
  // or spilled (bench: 1M points, 0.99 s -> ~0.35 s). The per-series CTEs are materialised so
  // their subqueries run once per series, never per point. Each bucket aggregates a subquery
  // ordered by key (the index's order, no sort), so an average sums as downsampleHeld does
  // whatever plan the statistics choose: a bitmap scan reads in heap order, which merged points
  // leave unlike key order (test/store/bucket-order.test.ts). PostgreSQL keeps a lone
  // subquery's order into its aggregate; `avg(... order by key)` would sort each bucket again
  // (1M points: 0.23 -> 0.47 s on PostgreSQL 15; the subquery costs 3-4%).
  const inWindow = (a: string) => sql.raw(`(w.t_from is null or ${a}.ts >= w.t_from) and (w.t_to is null or ${a}.ts <= w.t_to)`);
  // One row per series with its points as arrays (instants as epoch ms): a dashboard reads about
  // a million points, and a row per point cost the drivers a row's parsing each (PGlite, whose
  // protocol is parsed in JavaScript, took 3.3x the hand-written floor over rows; postgres.js parses
  // each column of each row).
  const ragg =
    aggregation === 'MIN'
      ? sql`min(u.min)`
      : aggregation === 'MAX'
        ? sql`max(u.max)`
        : aggregation === 'LAST'
          ? sql`(array_agg(u.last order by u.bucket desc) filter (where u.n > 0))[1]`
          : sql`sum(u.sum order by u.bucket) / sum(u.n)`;
  const rollUpAbove = Math.max(ROLLUP_ABOVE_POINTS, 10 * maxPoints);
  const rows = await ctx.rows<{ series_id: number | string; ts: NumberArray; steps: NumberArray; vals: NumberArray; res: number | string | null }>(
    sql`
    with w as materialized (${windowsSql(windows)}),
    e as materialized (
      select w.*, e.lo, e.hi, e.rn, s.raw_before, s.minute_before,
        -- Compacted days in the window (time-keyed series only): read through rawPoints.
        w.timed and e.lo is not null and exists (select 1 from point_chunks c where c.series_id = w.series_id
          and c.chunk_start > e.lo - ${CHUNK_MS} and c.chunk_start <= e.hi) as chunked
      from w left join series s on s.id = w.series_id cross join lateral (
        select
          case when w.t_from is null and w.t_to is null
            then (select x.key from ${edgeRawPoint(sql`w.series_id`, 'first', { lo: sql`w.k_from` })} x)
            else (select min(x.key) from ${rawPoints(sql`w.series_id`)} x where ${inWindow('x')}) end as lo,
          case when w.t_from is null and w.t_to is null
            then (select x.key from ${edgeRawPoint(sql`w.series_id`, 'last', { hi: sql`w.k_to` })} x)
            else (select max(x.key) from ${rawPoints(sql`w.series_id`)} x where ${inWindow('x')}) end as hi,
          -- The samples of the window's hours, from the 1-hour rollup (what decides a rollup read).
          case when w.timed then (select coalesce(sum(h.n), 0) from ${rollup1h(sql`w.series_id`, bucketSql('w.k_from', HOUR_MS), sql`w.k_to`)} h) else 0 end as rn
        -- Computed once a window: without the fence the planner pulls this subquery up and runs
        -- each edge again wherever it is named (the filter below, chunked's range), and an edge
        -- in a compacted day decodes the day (the fleet read of 1,000 series at a sample a minute
        -- spent 4.2 of its 4.3 s here, computing each lower edge three times and each upper one twice).
        offset 0
      ) e
      where e.lo is not null or e.rn > 0
    ), b as materialized (
      select e.*, coalesce(e.timed and e.rn > 0 and (e.raw_before > coalesce(e.k_from, ${MIN_KEY})
        or (e.rn > ${rollUpAbove} and (e.hi - e.lo + 1)::float8 / ${maxPoints} >= ${MINUTE_MS / 2})), false) as rolled
      from e
    ), cp as materialized (
      -- The points of the raw windows with compacted days, decoded once (the firsts and the
      -- buckets below read them from here), with the window's start and bucket width.
      select w.series_id, w.lo, greatest(1, ceil((w.hi - w.lo + 1)::float8 / ${maxPoints}))::bigint as width, pt.key, pt.ts, pt.step, pt.value
      from b as w cross join lateral ${rawPoints(sql`w.series_id`, sql`w.lo`, sql`w.hi`)} pt
      where w.chunked and not w.rolled and ${inWindow('pt')}
    ), firsts as materialized (
      select w.*, greatest(1, ceil((w.hi - w.lo + 1)::float8 / ${maxPoints}))::bigint as width, f.n, f.ts, f.steps, f.vals
      from b as w cross join lateral (
        select count(*) as n, ${pointArrays('r', 'r.key')}
        from (select pt.key, pt.ts, pt.step, pt.value from points pt
          where pt.series_id = w.series_id and pt.key between w.lo and w.hi and ${inWindow('pt')}
          order by pt.key limit ${maxPoints + 1}) r
      ) f
      where not w.rolled and not w.chunked
      union all
      select w.*, greatest(1, ceil((w.hi - w.lo + 1)::float8 / ${maxPoints}))::bigint, f.n, f.ts, f.steps, f.vals
      from b as w join (select r.series_id, count(*) as n, ${pointArrays('r', 'r.key')} from cp r group by r.series_id) f on f.series_id = w.series_id
      where not w.rolled and w.chunked
    ), bucketed as (
      select w.series_id, w.lo + g * w.width as k, x.ts, x.step, x.value
      from firsts as w
      cross join lateral generate_series(0, ((w.hi - w.lo) / w.width)::int) as g
      cross join lateral (
        select min(pt.ts) as ts, min(pt.step) as step, ${agg}::float8 as value, count(*) as c from (
          select pt.key, pt.ts, pt.step, pt.value from points pt
          where pt.series_id = w.series_id and pt.key >= w.lo + g * w.width and pt.key < w.lo + (g + 1) * w.width and ${inWindow('pt')}
          order by pt.key
        ) pt
      ) x
      where w.n > ${maxPoints} and x.c > 0 and not w.chunked
      union all
      -- A window with compacted days: grouped by bucket from cp, each bucket's aggregate in key
      -- order (the decoded days come in no index's order).
      select pt.series_id, pt.lo + (pt.key - pt.lo) / pt.width * pt.width as k, min(pt.ts), min(pt.step), ${aggOrdered}::float8
      from cp pt
      where pt.series_id in (select f.series_id from firsts f where f.n > ${maxPoints} and f.chunked)
      group by pt.series_id, pt.lo, pt.width, (pt.key - pt.lo) / pt.width
    ), ends as materialized (
      -- A rolled window's extent: its raw points', or where raw points were dropped before the
      -- window's start, from its first 1-minute bucket (its first 1-hour one where the 1-minute
      -- rows were dropped before it too); the rollup (r, ms) by the raw bucket width, the 1-hour
      -- one whatever the width where the window reaches before minute_before.
      select v.series_id, v.lo, v.hi,
        case when v.hourly or (v.hi - v.lo + 1)::float8 / ${maxPoints} >= ${HOURLY_FROM_MS} then ${HOUR_MS} else ${MINUTE_MS} end::bigint as r
      from (
        select b.series_id, c.hourly,
          case when b.lo is not null and not coalesce(b.raw_before > coalesce(b.k_from, ${MIN_KEY}), false) then b.lo
            when c.hourly then ${edgeRollup1h(sql`b.series_id`, 'first', bucketSql('b.k_from', HOUR_MS))}
            else ${edgeRollup1m(sql`b.series_id`, 'first', bucketSql('b.k_from', MINUTE_MS))} end as lo,
          coalesce(b.hi,
            ${edgeRollup1m(sql`b.series_id`, 'last', sql`b.k_to`)},
            ${edgeRollup1h(sql`b.series_id`, 'last', sql`b.k_to`)}) as hi
        from b cross join lateral (select coalesce(b.minute_before > coalesce(b.k_from, ${MIN_KEY}), false) as hourly) c
        where b.rolled
      ) v
      where v.lo is not null
    ), rw as materialized (
      -- Buckets of width r x k from the window's first r-bucket: k the fewest that give at most maxPoints.
      select x.*, x.r * greatest(1, ceil((x.hi_r - x.base + x.r)::float8 / (x.r * ${maxPoints})))::bigint as width
      from (select ends.series_id, ends.r, ${bucketSql('ends.lo', 'ends.r')} as base, ${bucketSql('ends.hi', 'ends.r')} as hi_r from ends) x
    ), rolled as (
      select rw.series_id, rw.width, rw.base + v.i * rw.width as k, v.value
      from rw cross join lateral (
        select (u.bucket - rw.base) / rw.width as i, ${ragg}::float8 as value
        from (
          select m.bucket, m.n, m.min, m.max, m.sum, m.last from ${rollup1m(sql`rw.series_id`, sql`rw.base`, sql`rw.hi_r`)} m
            where rw.r = ${MINUTE_MS}
          union all
          select h.bucket, h.n, h.min, h.max, h.sum, h.last from ${rollup1h(sql`rw.series_id`, sql`rw.base`, sql`rw.hi_r`)} h
            where rw.r = ${HOUR_MS}
        ) u
        group by 1
        having sum(u.n) > 0
      ) v
    )
    select series_id::float8 as series_id, ts, steps, vals, null::float8 as res from firsts where n between 1 and ${maxPoints}
    union all
    select series_id::float8, ${pointArrays('bucketed', 'k')}, null::float8
    from bucketed
    group by series_id
    union all
    select series_id::float8, array_agg(k::float8 order by k), array_agg(null::int order by k), array_agg(value order by k), max(width) / 1000.0::float8
    from rolled
    group by series_id
    order by series_id`,
  );
  // The series of a job share their instants: one Date per instant in an answer.
  const dates = new Map<number, Date>();
  const out: PointRow[] = [];
  const resolutions = new Map<number, number>();
  for (const r of rows) {
    const seriesId = Number(r.series_id);
    if (r.res !== null) resolutions.set(seriesId, Number(r.res));
    const ts = numbersOf(r.ts);
    const steps = numbersOf(r.steps);
    const vals = numbersOf(r.vals);
    for (let i = 0; i < ts.length; i++) {
      const ms = ts[i]!;
      let d: Date | null = null;
      if (ms !== null) {
        d = dates.get(ms) ?? null;
        if (d === null) dates.set(ms, (d = new Date(ms)));
      }
      out.push({ seriesId, timestamp: d, step: steps[i]!, value: vals[i]! });
    }
  }
  return { points: out, resolutions };
}

/**
 * Statistics of many series over their own windows, in one statement. The average sums in key
 * order, as summarizeHeld does: a float sum depends on its order, and in scan order two reads of
 * the same points could differ in the last digit whenever the plan changed (and a warm answer
 * from the one given before the write).
 */
export async function summariesOf(ctx: RepoContext, windows: readonly SeriesWindow[]): Promise<SummaryRow[]> {
  if (windows.length === 0) return [];
  const rows = await ctx.rows<Record<string, unknown>>(
    sql`
    with w as (${windowsSql(windows)})
    select w.idx, count(pt.value)::int as count, min(pt.value) as min, max(pt.value) as max, avg(pt.value order by pt.key)::float8 as avg,
      (array_agg(pt.value order by pt.key desc) filter (where pt.value is not null))[1] as last, min(pt.ts) as first_at, max(pt.ts) as last_at
    from w cross join lateral ${rawPoints(sql`w.series_id`, sql`w.k_from`, sql`w.k_to`)} pt
    where (w.t_from is null or pt.ts >= w.t_from) and (w.t_to is null or pt.ts <= w.t_to)
    group by w.idx`,
  );
  return rows.map((r) => ({
    seriesId: windows[Number(r.idx)]!.seriesId,
    index: Number(r.idx),
    count: Number(r.count),
    min: r.min === null ? null : Number(r.min),
    max: r.max === null ? null : Number(r.max),
    avg: r.avg === null ? null : Number(r.avg),
    last: r.last === null ? null : Number(r.last),
    firstAt: toDate(r.first_at),
    lastAt: toDate(r.last_at),
  }));
}
