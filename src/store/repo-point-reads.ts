// Reads of series and their points over windows: downsampled in SQL (raw points, or the 1-minute
// and 1-hour rollups for long windows) and summarised, many series in one statement.
import { sql, type SQL } from 'drizzle-orm';
import type { Aggregation } from '../domain/types.js';
import type { RepoContext } from './repo-context.js';
import type { PointRow, SeriesRow, SeriesWindow, SummaryRow } from './repo-types.js';
import { HOUR_MS, MINUTE_MS } from './repo-point-writes.js';
import { rowsOf, textArray, toDate } from './sql-util.js';
import { CHUNK_MS, chunkKeysIn, edgeRawPoint, rawPoints, visibleFrom } from './raw-points.js';
import { edgeRollup1m, rollup1m } from './rollup-chunks.js';
import { edgeRollup1h, rollup1h } from './hour-rollups.js';
import type { RollupColumn } from './point-chunks.js';

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
const MAX_KEY = sql.raw('9223372036854775807::bigint');

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

/** A window as the row windowsSql makes of it: idx, series_id, k_from, k_to, t_from, t_to, timed. */
function windowTuple(w: SeriesWindow, idx: number): (string | number | boolean | null)[] {
  const from = w.from?.getTime() ?? null;
  const to = w.to?.getTime() ?? null;
  return w.keyedBy === 'time'
    ? [idx, w.seriesId, from, to, null, null, true]
    : [idx, w.seriesId, null, null, w.from?.toISOString() ?? null, w.to?.toISOString() ?? null, false];
}

/** The windows as a relation (idx, series_id, k_from, k_to, t_from, t_to, timed), bound as one JSON parameter. */
function windowsSql(windows: readonly SeriesWindow[]): SQL {
  const json = JSON.stringify(windows.map(windowTuple));
  return sql`select ${WINDOW_COLUMNS} from jsonb_array_elements(${json}::jsonb) as r`;
}

/** The columns of a window row `r` (windowTuple's JSON array): idx, series_id, k_from, k_to, t_from, t_to, timed. */
const WINDOW_COLUMNS = sql.raw(`(r->>0)::int as idx, (r->>1)::bigint as series_id, (r->>2)::bigint as k_from, (r->>3)::bigint as k_to,
    (r->>4)::timestamptz as t_from, (r->>5)::timestamptz as t_to, (r->>6)::boolean as timed`);

/** SQL: the width of window `a`'s raw equal-width buckets (columns lo, hi): the fewest keys a bucket that give at most maxPoints. */
function rawBucketWidth(a: string, maxPoints: number): SQL {
  return sql`greatest(1, ceil((${sql.raw(a)}.hi - ${sql.raw(a)}.lo + 1)::float8 / ${maxPoints}))::bigint`;
}

/** SQL: the width of a rollup read's buckets, `r` x k from its first r-bucket `base` to its last `hiR`: k the fewest that give at most maxPoints. */
function rollupBucketWidth(base: SQL, hiR: SQL, r: SQL, maxPoints: number): SQL {
  return sql`${r} * greatest(1, ceil((${hiR} - ${base} + ${r})::float8 / (${r} * ${maxPoints}::bigint)))::bigint`;
}

/**
 * SQL: a lateral subquery of window `w` (a row of pointsAt's `d`): where the window is counted,
 * its 1-hour rows from `hourFrom` (its count, rn, what decides it) and, where it has raw points,
 * those of its raw extent's hours merged into buckets of 1 hour x k from its first hour (k the
 * fewest that give at most maxPoints; width) by `merge`, as arrays in bucket order (ks, vs;
 * null: none with a value): the answer of a window that turns out hourly. Each window's hours are
 * merged apart, a few dozen rows at a time; merging every window's hours at once (a join of them
 * all to their windows, then one sort and grouping of every row) was 28 of a fleet read's 80 ms
 * (1,000 series x 24 h at 24 points, a sample a minute: docs/history.md).
 */
function hourlyOf(timed: boolean, hourFrom: SQL, merge: SQL, needs: readonly RollupColumn[]): SQL {
  if (!timed) return sql`(select null::numeric as rn, null::float8[] as ks, null::float8[] as vs where false)`;
  // The arrays take the buckets in the order the grouping gives them (its sort, or the subquery's
  // order by): a lone subquery's order reaches its aggregate, and no array sorts again.
  return sql`(
    select sum(g.n) as rn, array_agg(g.k::float8) filter (where g.k is not null and g.n > 0) as ks,
      array_agg(g.value) filter (where g.k is not null and g.n > 0) as vs
    from (
      select case when u.bucket >= w.base and u.bucket <= w.hi_r then w.base + (u.bucket - w.base) / w.width * w.width end as k,
        sum(u.n) as n, ${merge}::float8 as value
      from ${rollup1h(sql`w.series_id`, hourFrom, sql`w.k_to`, needs)} u
      where w.counted
      group by 1
      order by 1
    ) g
  )`;
}

/**
 * SQL: columns base, hi_r and width of a window of pointsAt's `d` (its raw extent e.lo, e.hi):
 * the hours holding its first and last raw points, and the width of its buckets were it read
 * from the 1-hour rollup (1 hour x k from base, k the fewest that give at most maxPoints); null
 * without raw points. Worked out once a window, not once an hour.
 */
function hourlyBuckets(maxPoints: number): SQL {
  const base = sql`case when e.lo is not null and e.hi is not null then ${bucketSql('e.lo', HOUR_MS)} end`;
  const hiR = sql`case when e.lo is not null and e.hi is not null then ${bucketSql('e.hi', HOUR_MS)} end`;
  return sql`${base} as base, ${hiR} as hi_r, ${rollupBucketWidth(base, hiR, sql.raw(`${HOUR_MS}::bigint`), maxPoints)} as width`;
}

/** The 1-hour buckets from the hour holding `from` to the one holding `to`, both counted. */
function hoursSpanned(from: Date, to: Date): number {
  return Math.floor(to.getTime() / HOUR_MS) - Math.floor(from.getTime() / HOUR_MS) + 1;
}

/**
 * A series' points as three arrays in key order (ts as epoch ms, steps, vals), from the rows of
 * `rows`: ordered by `orderBy`, or, where it is null, in the order the rows come (a lone subquery's).
 */
function pointArrays(rows: string, orderBy: string | null): SQL {
  const order = orderBy === null ? '' : ` order by ${orderBy}`;
  return sql.raw(`array_agg(floor(extract(epoch from ${rows}.ts) * 1000)::float8${order}) as ts,
    array_agg(${rows}.step${order}) as steps,
    array_agg(${rows}.value::float8${order}) as vals`);
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
 * Points of many series in one or two statements (pointsAt), each in its own window,
 * downsampled in SQL to at most `maxPoints` per series: a series with few enough points comes
 * back raw, a larger one in equal-width buckets of its key (time or step) aggregated by
 * `aggregation`, each bucket stamped with its first point.
 */
export async function pointsOf(ctx: RepoContext, windows: readonly SeriesWindow[], maxPoints: number, aggregation: Aggregation): Promise<PointRow[]> {
  return (await pointsAt(ctx, windows, maxPoints, aggregation)).points;
}

/**
 * pointsOf, and the resolution each series was answered at: a long window of a time-keyed series
 * whose raw points are many (more than ROLLUP_ABOVE_POINTS and 10 x maxPoints, counted from the
 * 1-hour rollup, or known fewer from the stored counts of its compacted days) is read from a
 * rollup instead of its raw points, as is a window reaching before the series' raw points were
 * dropped by retention, when the raw equal-width bucket would be half a minute or more. The
 * rollup is the 1-hour one when that bucket would be 30 minutes or more, or the window reaches
 * before the series' 1-minute rows were dropped by retention (series.minute_before), else the
 * 1-minute one (HOURLY_FROM_MS); its buckets are answered as stored when they number at most
 * maxPoints (min, max, count, last and avg = sum / count equal the raw points' to the last
 * digit), else merged k at a time (avg = the sum of their sums / their count). `resolutions`
 * holds the bucket width in seconds of each series read from a rollup; series read from raw
 * points are absent. One statement, or two when a window has compacted days or reads the
 * 1-minute rollup.
 */
export async function pointsAt(
  ctx: RepoContext,
  windows: readonly SeriesWindow[],
  maxPoints: number,
  aggregation: Aggregation,
): Promise<{ points: PointRow[]; resolutions: Map<number, number> }> {
  if (windows.length === 0) return { points: [], resolutions: new Map() };
  const { agg, ragg, rpair, needs } = aggregatesOf(aggregation);
  // The merge of a window's hours into its buckets: without an order where no window's buckets
  // can hold more than two hours (a day's 25 hours at 24 points), else each bucket sorted by hour.
  const pairs = windows.every((w) => w.keyedBy !== 'time' || (w.from !== null && w.to !== null && hoursSpanned(w.from, w.to) <= 2 * maxPoints));
  const merge = pairs ? rpair : ragg;
  const rollUpAbove = Math.max(ROLLUP_ABOVE_POINTS, 10 * maxPoints);
  // Two statements, each planned for what its windows need: a statement naming every fragment
  // (raw points, compacted days, both rollups and their edges) planned in 13.7 ms for a 30-day read
  // that then ran in 5.9 (986 lines of plan: each fragment over its partitions), and read the
  // window's 1-hour rollup twice, once to decide and once to answer. The first decides every
  // window, answering those it can from what deciding read (a rolled window from the 1-hour rows
  // it counted, a short raw one from its first maxPoints + 1 points); the second, only when some
  // window is left, reads the rest with only the parts those windows need.
  const timed = windows.some((w) => w.keyedBy === 'time');
  const byEdges = (w: SeriesWindow) => w.keyedBy === 'time' || (!w.from && !w.to);
  const edgeOnly = windows.every(byEdges);
  const rangeOnly = !windows.some(byEdges);
  const loEdge = sql`(select x.key from ${edgeRawPoint(sql`w.series_id`, 'first', { lo: sql`w.k_from`, keyOnly: true, rawBefore: sql`s.raw_before` })} x)`;
  const hiEdge = sql`(select x.key from ${edgeRawPoint(sql`w.series_id`, 'last', { hi: sql`w.k_to`, keyOnly: true, rawBefore: sql`s.raw_before` })} x)`;
  const loRange = sql`(select min(x.key) from ${rawPoints(sql`w.series_id`, null, null, sql`s.raw_before`)} x where ${inWindow('x')})`;
  const hiRange = sql`(select max(x.key) from ${rawPoints(sql`w.series_id`, null, null, sql`s.raw_before`)} x where ${inWindow('x')})`;
  const whichever = (edge: SQL, range: SQL) =>
    edgeOnly ? edge : rangeOnly ? range : sql`case when w.t_from is null and w.t_to is null then ${edge} else ${range} end`;
  const hourFrom = bucketSql('w.k_from', HOUR_MS);
  // A time-keyed window's keys as rawPoints sees them: from its start or the series' retention cut.
  const windowFrom = visibleFrom(sql`w.series_id`, sql`coalesce(w.k_from, ${MIN_KEY})`, 'raw_before', sql`s.raw_before`);
  const windowTo = sql`coalesce(w.k_to, ${MAX_KEY})`;
  const decided = await ctx.preparedRows<DecidedRow>(
    sql`
    with w as materialized (${windowsSql(windows)}),
    d as materialized (
      select w.*, e.lo, e.hi, s.raw_before, s.minute_before, coalesce(x.chunked, false) as chunked, x.est, ${hourlyBuckets(maxPoints)},
        -- Whether the window's 1-hour rollup is read to decide it: not where its hours are all in
        -- compacted days whose samples are too few to roll it whatever the rollup counts (the
        -- rollup counts values only, of no hour outside those days), nor before retention dropped
        -- raw points. Such a window is raw; reading its hours only to learn so was the cost of its
        -- rollup read again (bench:history, a fleet read of 1,000 series x 24 h at 1M points:
        -- 162 ms against 75 for the rollup alone).
        w.timed and (e.lo is null or coalesce(s.raw_before > coalesce(w.k_from, ${MIN_KEY}), false)
          or not coalesce(x.cold, false) or x.cn is null or x.cn > ${rollUpAbove}) as counted
      from w left join series s on s.id = w.series_id
      left join lateral (
        -- The compacted days of the window's hours (time-keyed series only), by their stored
        -- counts and offsets, no values read: whether no raw point of those hours is uncompacted
        -- (cold); their samples (cn); whether some may hold a point of the window (chunked: read
        -- through rawPoints); the window's samples in them (est: how its points are read first),
        -- counted in a day whose keys are known from its offsets alone (chunkKeysIn: a day at one
        -- spacing, or of one or two samples), else the day's samples spread evenly over it; and
        -- where every day's keys are known (known), the keys of the window's first and last points
        -- in them (lo, hi). Not the days retention hid behind the series' cut (raw_before), as
        -- rawPoints reads them.
        select case when w.timed then not exists (select 1 from points p where p.series_id = w.series_id and p.key >= ${hourFrom}
            and p.key <= case when w.k_to is null then ${MAX_KEY} else ${bucketSql('w.k_to', HOUR_MS)} + ${HOUR_MS - 1} end) end as cold,
          sum(c.n) as cn, bool_or(not k.known or k.n > 0) as chunked, coalesce(bool_and(k.known), true) as known,
          sum(case when k.known then k.n else c.n::float8 * greatest(0, least(${windowTo}, c.chunk_start + ${CHUNK_MS - 1}) + 1 - greatest(${windowFrom}, c.chunk_start)) / ${CHUNK_MS} end) as est,
          min(k.lo) as lo, max(k.hi) as hi
        from point_chunks c
        cross join lateral ${chunkKeysIn(windowFrom, windowTo)} k
        where w.timed and c.series_id = w.series_id
          and c.chunk_start > greatest(${hourFrom}, coalesce(s.raw_before, ${MIN_KEY}), (-9223372036854775807 + ${CHUNK_MS})::bigint) - ${CHUNK_MS}
          and c.chunk_start <= coalesce(w.k_to, ${MAX_KEY})
      ) x on true
      cross join lateral (
        -- The window's raw extent: from its days' keys where it is cold and they are known, else
        -- its edges. The edge walks were two thirds of the first statement (bench:history, a fleet
        -- read of 1,000 series x 24 h at 1M points: docs/history.md).
        select case when x.cold and x.known then x.lo else ${whichever(loEdge, loRange)} end as lo,
          case when x.cold and x.known then x.hi else ${whichever(hiEdge, hiRange)} end as hi
        -- Computed once a window: without the fence the planner pulls this subquery up and runs
        -- each edge again wherever it is named, and an edge in a compacted day decodes the day
        -- (the fleet read of 1,000 series at a sample a minute spent 4.2 of its 4.3 s here,
        -- computing each lower edge three times and each upper one twice).
        offset 0
      ) e
    ),
    e as materialized (
      select w.*, case when w.counted then coalesce(hh.rn, 0) else coalesce(round(w.est), 0) end as rn, hh.ks, hh.vs
      from d as w left join lateral ${hourlyOf(timed, hourFrom, merge, needs)} hh on true
      where w.lo is not null or coalesce(hh.rn, 0) > 0
    ), b as materialized (
      select x.*,
        -- Read from the 1-hour rows above: rolled, its extent its raw points' (as in the second
        -- statement's ends), and the 1-hour rollup the one it reads.
        x.rolled and x.lo is not null and not coalesce(x.raw_before > coalesce(x.k_from, ${MIN_KEY}), false)
          and (coalesce(x.minute_before > coalesce(x.k_from, ${MIN_KEY}), false) or (x.hi - x.lo + 1)::float8 / ${maxPoints} >= ${HOURLY_FROM_MS}) as hourly
      from (
        select e.*, coalesce(e.timed and e.rn > 0 and (e.raw_before > coalesce(e.k_from, ${MIN_KEY})
          or (e.rn > ${rollUpAbove} and (e.hi - e.lo + 1)::float8 / ${maxPoints} >= ${MINUTE_MS / 2})), false) as rolled
        from e
      ) x
    ), fr as (
      -- A raw window without compacted days: its first maxPoints + 1 points, in key order (the
      -- answer when they are all there are).
      select w.idx, w.series_id, w.lo, w.hi, w.t_from, w.t_to, f.n, f.ts, f.steps, f.vals
      from b as w cross join lateral (
        select count(*) as n, ${pointArrays('r', 'r.key')}
        from (select pt.key, pt.ts, pt.step, pt.value from points pt
          where pt.series_id = w.series_id and pt.key between w.lo and w.hi and ${inWindow('pt')}
          order by pt.key limit ${maxPoints + 1}) r
      ) f
      where not w.rolled and not w.chunked
    ), bu as (
      -- A raw window without compacted days whose points are more than maxPoints: equal-width
      -- buckets, each read by one index range scan, so its points arrive in key order and nothing
      -- is sorted or spilled (bench: 1M points, 0.99 s -> ~0.35 s). Each bucket aggregates a
      -- subquery ordered by key (the index's order, no sort), so an average sums as downsampleHeld
      -- does whatever plan the statistics choose: a bitmap scan reads in heap order, which merged
      -- points leave unlike key order (test/store/bucket-order.test.ts). PostgreSQL keeps a lone
      -- subquery's order into its aggregate; avg(... order by key) would sort each bucket again
      -- (1M points: 0.23 -> 0.47 s on PostgreSQL 15; the subquery costs 3-4%).
      select w.idx, w.series_id, w.lo + g * w.width as k, x.ts, x.step, x.value
      from (select fr.*, ${rawBucketWidth('fr', maxPoints)} as width from fr where fr.n > ${maxPoints}) w
      cross join lateral generate_series(0, ((w.hi - w.lo) / w.width)::int) as g
      cross join lateral (
        select min(pt.ts) as ts, min(pt.step) as step, ${agg}::float8 as value, count(*) as c from (
          select pt.key, pt.ts, pt.step, pt.value from points pt
          where pt.series_id = w.series_id and pt.key >= w.lo + g * w.width and pt.key < w.lo + (g + 1) * w.width and ${inWindow('pt')}
          order by pt.key
        ) pt
      ) x
      where x.c > 0
    )
    -- The decisions, then the answers, as rows of their own: no join of these relations, whose
    -- sizes the planner cannot know (a nested loop over two of them is quadratic in the windows).
    select true as decision, b.idx, b.series_id::float8 as series_id, b.lo::text as lo, b.hi::text as hi, b.raw_before::text as raw_before,
      b.minute_before::text as minute_before, b.rn::text as rn, b.chunked, b.rolled, b.hourly, null as ts, null as steps, null as vals, null::float8 as res
    from b
    union all
    select false, fr.idx, fr.series_id::float8, null, null, null, null, null, null, null, null, fr.ts, fr.steps, fr.vals, null
    from fr where fr.n <= ${maxPoints}
    union all
    select false, bu.idx, bu.series_id::float8, null, null, null, null, null, null, null, null, ${pointArrays('bu', 'k')}, null
    from bu group by bu.idx, bu.series_id
    union all
    select false, b.idx, b.series_id::float8, null, null, null, null, null, null, null, null, b.ks, null, b.vs, b.width / 1000.0::float8
    from b where b.hourly and b.ks is not null`,
  );
  // A window whose decision the first statement answered (a raw one without compacted days, or
  // one rolled to the 1-hour rows it read) has its answer there or has no points; the rest are read now.
  const rows: AnswerRow[] = [];
  const rest: DecidedRow[] = [];
  for (const d of decided) {
    if (!d.decision) rows.push(d);
    else if (!d.hourly && (d.rolled || d.chunked)) rest.push(d);
  }
  if (rest.length > 0) rows.push(...(await restOfWindows(ctx, windows, rest, maxPoints, aggregation)));
  rows.sort((a, b) => Number(a.series_id) - Number(b.series_id));
  // The series of a job share their instants: one Date per instant in an answer.
  const dates = new Map<number, Date>();
  const out: PointRow[] = [];
  const resolutions = new Map<number, number>();
  for (const r of rows) {
    if (r.ts === null || r.vals === null) continue;
    const seriesId = Number(r.series_id);
    if (r.res !== null) resolutions.set(seriesId, Number(r.res));
    const ts = numbersOf(r.ts);
    // A rollup's buckets have no step.
    const steps = r.steps === null ? null : numbersOf(r.steps);
    const vals = numbersOf(r.vals);
    for (let i = 0; i < ts.length; i++) {
      const ms = ts[i]!;
      let d: Date | null = null;
      if (ms !== null) {
        d = dates.get(ms) ?? null;
        if (d === null) dates.set(ms, (d = new Date(ms)));
      }
      out.push({ seriesId, timestamp: d, step: steps === null ? null : steps[i]!, value: vals[i]! });
    }
  }
  return { points: out, resolutions };
}

/** A window as the first statement of pointsAt decided it, with its answer where that statement gave one. */
interface DecidedRow extends AnswerRow {
  /** A decision row (the answers come in rows of their own, with idx and series_id). */
  decision: boolean;
  idx: number | string;
  /** Keys (bigint as text): the window's raw extent, and where the series' raw and 1-minute rows were dropped before. */
  lo: string | null;
  hi: string | null;
  raw_before: string | null;
  minute_before: string | null;
  /**
   * About the window's raw points' count: its samples as its 1-hour rollup counts them (whole
   * hours, values only), or, for a window whose rollup was not read (its hours all in compacted
   * days too few to roll it), its days' samples prorated to its extent.
   */
  rn: string | null;
  chunked: boolean;
  rolled: boolean;
  /** Answered from the 1-hour rows the first statement read. */
  hourly: boolean;
}

/** A series' answer: its points as arrays in key order (steps null for a rollup's buckets), and the bucket width in seconds of a rollup read. */
interface AnswerRow {
  series_id: number | string;
  ts: NumberArray | null;
  steps: NumberArray | null;
  vals: NumberArray | null;
  res: number | string | null;
}

/**
 * The aggregates of a read: `agg` of raw points `pt` in a bucket whose rows come in key order
 * (from a lone subquery ordered by key: no sort of its own, LAST the bucket's last row), `ragg` of
 * rollup buckets `u` (avg = the sum of their sums / their count, in bucket order), `rpair` equal
 * to `ragg` of at most two buckets without an order (a sum of two floats is the same either way;
 * the last is the newest non-empty bucket's, found by comparing [bucket, last] pairs).
 */
function aggregatesOf(aggregation: Aggregation): { agg: SQL; ragg: SQL; rpair: SQL; needs: readonly RollupColumn[] } {
  const agg = aggregation === 'LAST' ? sql.raw('(array_agg(pt.value))[count(*)]') : aggregateSql(aggregation, 'pt.value', 'pt.key');
  const ragg =
    aggregation === 'MIN'
      ? sql`min(u.min)`
      : aggregation === 'MAX'
        ? sql`max(u.max)`
        : aggregation === 'LAST'
          ? sql`(array_agg(u.last order by u.bucket desc) filter (where u.n > 0))[1]`
          : sql`sum(u.sum order by u.bucket) / sum(u.n)`;
  const rpair =
    aggregation === 'LAST' ? sql`(max(array[u.bucket::float8, u.last]) filter (where u.n > 0))[2]` : aggregation === 'AVG' ? sql`sum(u.sum) / sum(u.n)` : ragg;
  // The rollup columns `ragg` and `rpair` read besides n and last: a chunk's other float arrays are
  // not fetched (a fleet read at a sample a minute fetched five arrays of every series' month to use three).
  const needs: readonly RollupColumn[] = aggregation === 'MIN' ? ['min'] : aggregation === 'MAX' ? ['max'] : aggregation === 'LAST' ? [] : ['sum'];
  return { agg, ragg, rpair, needs };
}

/** SQL: whether row `a`'s ts lies in window `w`'s instants (a step-keyed window's; a time-keyed one has none). */
const inWindow = (a: string) => sql.raw(`(w.t_from is null or ${a}.ts >= w.t_from) and (w.t_to is null or ${a}.ts <= w.t_to)`);

/**
 * The second statement of pointsAt: the windows the first decided but did not answer, each read
 * by the part its decision names (`part`): C, a raw window with compacted days, its points
 * decoded once, as they are or in buckets as its count (rn) says (read again the other way
 * where that count misjudged them); M, a rolled window not read from the first statement's
 * 1-hour rows (its extent from a rollup's edges where raw points were dropped, or the 1-minute
 * rollup). Only the parts some window needs are in the statement.
 */
async function restOfWindows(
  ctx: RepoContext,
  windows: readonly SeriesWindow[],
  rest: readonly DecidedRow[],
  maxPoints: number,
  aggregation: Aggregation,
): Promise<AnswerRow[]> {
  const { agg, ragg, needs } = aggregatesOf(aggregation);
  const partOf = (d: DecidedRow) => (d.rolled ? 'M' : 'C');
  const parts = new Set(rest.map(partOf));
  const json = JSON.stringify(
    rest.map((d) => [...windowTuple(windows[Number(d.idx)]!, Number(d.idx)), d.lo, d.hi, d.raw_before, d.minute_before, partOf(d), d.rn]),
  );
  const ctes: SQL[] = [];
  const answers: SQL[] = [];
  if (parts.has('C')) {
    // Each window with compacted days: its points decoded once, in a sort of its own (a few
    // hundred rows: in memory), as they are where its count (rn) is at most maxPoints, else
    // grouped by bucket; with their count, which sends the few windows that count misjudged (the
    // rollup's: a window cutting its first and last hours, or points without a value; the days'
    // prorated: a day sampled unevenly) to a second read the other way. One sort of every
    // window's points at once (for the count, then again by bucket) spilled to disk: a fleet read
    // of 1,000 series x 334 points took 640 ms, two external sorts 190 ms of it; 320-460 ms now
    // (docs/history.md). The decoded days come in no index's order: each window's points are
    // sorted once, by bucket and key, and every aggregate above takes them in that order from its
    // lone subquery (as `bu` does), so none sorts again: an ordered aggregate sorts each group on
    // its own (a fleet read of 1,000 series x 24 h at 24 points: 24 sorts a window for its
    // averages, 3 more for its arrays). The points are read from the retention cut the first
    // statement decided by (raw_before), not from the series' row looked up again per window.
    const windowPoints = rawPoints(sql`w.series_id`, sql`w.lo`, sql`w.hi`, sql`w.raw_before`);
    const asIs = sql`(
      select count(*) as n, ${pointArrays('r', null)}
      from (select r.key, r.ts, r.step, r.value from ${windowPoints} r where ${inWindow('r')} order by r.key) r
    )`;
    // A bucket is stamped with its first point's key: these windows are time-keyed (compacted days
    // and rollups are of time-keyed series only), whose key is the point's instant in whole
    // milliseconds, floored (copyBinary's int8; a day's chunk gives its points' instants back from
    // the keys), as the raw paths' floor(extract(epoch from ts) * 1000) is. That numeric
    // conversion of every bucket's instant was about 12 of a fleet read's 95 ms (1,000 series x
    // 24 h at 24 points, a sample every 50 minutes: docs/history.md).
    const bucketed = sql`(
      select sum(g.c) as n, array_agg(g.ts) as ts, array_agg(g.step) as steps, array_agg(g.value) as vals
      from (
        select pt.k, min(pt.key)::float8 as ts, min(pt.step) as step, ${agg}::float8 as value, count(*) as c
        from (
          select w.lo + (pt.key - w.lo) / w.width * w.width as k, pt.key, pt.ts, pt.step, pt.value
          from ${windowPoints} pt
          where ${inWindow('pt')}
          order by 1, 2
        ) pt
        group by pt.k
        order by pt.k
      ) g
    )`;
    ctes.push(sql`cw as materialized (
      select b.*, ${rawBucketWidth('b', maxPoints)} as width from b where b.part = 'C'
    ), cp as materialized (
      select w.*, x.n, x.ts, x.steps, x.vals, false as bucketed from cw w cross join lateral ${asIs} x
      where coalesce(w.rn, 0) <= ${maxPoints}
      union all
      select w.*, x.n, x.ts, x.steps, x.vals, true from cw w cross join lateral ${bucketed} x
      where coalesce(w.rn, 0) > ${maxPoints}
    )`);
    answers.push(sql`select r.series_id::float8 as series_id, r.ts, r.steps, r.vals, null::float8 as res
      from cp r where r.bucketed = (r.n > ${maxPoints})`);
    answers.push(sql`select w.series_id::float8 as series_id, x.ts, x.steps, x.vals, null::float8 as res
      from cp w cross join lateral ${bucketed} x where not w.bucketed and w.n > ${maxPoints}`);
    answers.push(sql`select w.series_id::float8 as series_id, x.ts, x.steps, x.vals, null::float8 as res
      from cp w cross join lateral ${asIs} x where w.bucketed and w.n <= ${maxPoints} and x.n > 0`);
  }
  if (parts.has('M')) {
    // A rolled window's extent: its raw points', or where raw points were dropped before the
    // window's start, from its first 1-minute bucket (its first 1-hour one where the 1-minute
    // rows were dropped before it too); the rollup (r, ms) by the raw bucket width, the 1-hour
    // one whatever the width where the window reaches before minute_before. Buckets of width
    // r x k from the window's first r-bucket: k the fewest that give at most maxPoints.
    ctes.push(sql`ends as materialized (
      select v.idx, v.series_id, v.lo, v.hi,
        case when v.hourly or (v.hi - v.lo + 1)::float8 / ${maxPoints} >= ${HOURLY_FROM_MS} then ${HOUR_MS} else ${MINUTE_MS} end::bigint as r
      from (
        select b.idx, b.series_id, c.hourly,
          case when b.lo is not null and not coalesce(b.raw_before > coalesce(b.k_from, ${MIN_KEY}), false) then b.lo
            when c.hourly then ${edgeRollup1h(sql`b.series_id`, 'first', bucketSql('b.k_from', HOUR_MS))}
            else ${edgeRollup1m(sql`b.series_id`, 'first', bucketSql('b.k_from', MINUTE_MS))} end as lo,
          coalesce(b.hi,
            ${edgeRollup1m(sql`b.series_id`, 'last', sql`b.k_to`)},
            ${edgeRollup1h(sql`b.series_id`, 'last', sql`b.k_to`)}) as hi
        from b cross join lateral (select coalesce(b.minute_before > coalesce(b.k_from, ${MIN_KEY}), false) as hourly) c
        where b.part = 'M'
      ) v
      where v.lo is not null
    ), rw as materialized (
      select x.*, ${rollupBucketWidth(sql.raw('x.base'), sql.raw('x.hi_r'), sql.raw('x.r'), maxPoints)} as width
      from (select ends.idx, ends.series_id, ends.r, ${bucketSql('ends.lo', 'ends.r')} as base, ${bucketSql('ends.hi', 'ends.r')} as hi_r from ends) x
    ), rolled as (
      select rw.idx, rw.series_id, rw.width, rw.base + v.i * rw.width as k, v.value
      from rw cross join lateral (
        select (u.bucket - rw.base) / rw.width as i, ${ragg}::float8 as value
        from (
          select m.bucket, m.n, m.min, m.max, m.sum, m.last from ${rollup1m(sql`rw.series_id`, sql`rw.base`, sql`rw.hi_r`)} m
            where rw.r = ${MINUTE_MS}
          union all
          select h.bucket, h.n, h.min, h.max, h.sum, h.last from ${rollup1h(sql`rw.series_id`, sql`rw.base`, sql`rw.hi_r`, needs)} h
            where rw.r = ${HOUR_MS}
        ) u
        group by 1
        having sum(u.n) > 0
      ) v
    )`);
    answers.push(sql`select series_id::float8 as series_id, array_agg(k::float8 order by k) as ts, null::int[] as steps,
      array_agg(value order by k) as vals, max(width) / 1000.0::float8 as res
      from rolled group by idx, series_id`);
  }
  return ctx.preparedRows<AnswerRow>(
    sql`with b as materialized (
      select ${WINDOW_COLUMNS}, (r->>7)::bigint as lo, (r->>8)::bigint as hi, (r->>9)::bigint as raw_before, (r->>10)::bigint as minute_before, r->>11 as part, (r->>12)::bigint as rn
      from jsonb_array_elements(${json}::jsonb) as r
    ), ${sql.join(ctes, sql`, `)}
    ${sql.join(answers, sql` union all `)}`,
  );
}

/**
 * Statistics of many series over their own windows, in one statement. The average sums in key
 * order, as summarizeHeld does: a float sum depends on its order, and in scan order two reads of
 * the same points could differ in the last digit whenever the plan changed (and a warm answer
 * from the one given before the write). Each window is aggregated on its own (its ordered
 * aggregates sort its points in memory): grouped together, every window's points were sorted at
 * once by window, and on disk past a few hundred thousand.
 */
export async function summariesOf(ctx: RepoContext, windows: readonly SeriesWindow[]): Promise<SummaryRow[]> {
  if (windows.length === 0) return [];
  const rows = await ctx.rows<Record<string, unknown>>(
    sql`
    with w as (${windowsSql(windows)})
    select w.idx, s.count, s.min, s.max, s.avg, s.last, s.first_at, s.last_at
    from w cross join lateral (
      select count(*) as points, count(pt.value)::int as count, min(pt.value) as min, max(pt.value) as max, avg(pt.value order by pt.key)::float8 as avg,
        (array_agg(pt.value order by pt.key desc) filter (where pt.value is not null))[1] as last, min(pt.ts) as first_at, max(pt.ts) as last_at
      from ${rawPoints(sql`w.series_id`, sql`w.k_from`, sql`w.k_to`)} pt
      where ${inWindow('pt')}
    ) s
    where s.points > 0`,
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
