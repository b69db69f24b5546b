// Raw points live in two places: `points`, where every write lands (one row per point), and
// `point_chunks`, where the collector's lease holder compacts the settled days of time-keyed
// series (one row per series and UTC day, migrations/0008). Every read of raw points goes through
// these fragments, so both are read and each keeps its index ranges: a day is in exactly one of
// the two (the compactor moves a day's rows in one transaction, a write into a compacted day moves
// it back first: repo-point-writes.ts).
import { type SQL, sql } from 'drizzle-orm';

/** A chunk's span: one UTC day. */
export const CHUNK_MS = 86_400_000;

const MIN_KEY = sql.raw('(-9223372036854775807)::bigint');
const MAX_KEY = sql.raw('9223372036854775807::bigint');

/** `r` (regular, first, spacing) of chunk `c`: whether its day is at one spacing, and if so its first offset and the spacing. */
const CHUNK_SPACING = `(select cardinality(c.offs) < c.n as regular, c.offs[1]::bigint as first, c.offs[2]::bigint as spacing offset 0) r`;

/**
 * A compacted day's points as rows (key, step, value) of chunk `c`, in key order: each key is
 * `chunk_start` plus its offset, or, for a day sampled at one spacing (fewer `offs` than points:
 * [the first's offset, the spacing]), plus the first's offset and the spacing times its rank. No
 * sort and no window: a projection of the arrays. `offs` is read once a chunk (`r`, kept apart by
 * `offset 0`): an expression on a compressed array in the select list detoasts it again for every
 * row. Readers take ts as the key's instant (only days whose every point had ts = key are
 * compacted).
 */
export const DECODED_CHUNK = sql.raw(`(
  select c.chunk_start + case when r.regular then r.first + (x.o - 1) * r.spacing else x.d end as key, x.s as step, x.v as value
  from ${CHUNK_SPACING},
    unnest(c.vals, c.offs, c.steps) with ordinality as x(v, d, s, o)) k`);

/**
 * CTEs `days` (series_id, day: from `json`, an array of [series id, UTC day start] pairs) and `mv`
 * (the chunk rows of those days, deleted; returning series_id, chunk_start, n, offs, vals,
 * steps): how a write takes compacted days back. The chunks are found by one primary-key range
 * per series (the series as an array, the days' span), never by a join the planner may turn into
 * a scan of every partition (a `using days` join was one: every write would read all of history).
 */
export function takeChunkDays(json: string): SQL {
  return sql`days as materialized (
      select (r->>0)::bigint as series_id, (r->>1)::bigint as day from jsonb_array_elements(${json}::jsonb) as r
    ), mv as (
      delete from point_chunks c
      where c.series_id = any (array(select distinct d.series_id from days d))
        and c.chunk_start between (select min(d.day) from days d) and (select max(d.day) from days d)
        and exists (select 1 from days d where d.series_id = c.series_id and d.day = c.chunk_start)
      returning c.series_id, c.chunk_start, c.n, c.offs, c.vals, c.steps
    )`;
}

/** A series' retention cut of a resolution: what is before it is not read (series columns, epoch ms). */
export type RetentionMark = 'raw_before' | 'minute_before';

/**
 * Where series `sid`'s raw points (or, by `mark`, its 1-minute rollup) are seen from: `from`, or
 * the series' retention cut where that is later. Retention hides a day's chunks by that cut and
 * drops their partition only once all of it is hidden (point-chunks.ts, hideChunkDays), so every
 * read of those tables starts here. `given`: the cut's column where the caller has the series'
 * row, else it is looked up.
 */
export function visibleFrom(sid: SQL, from: SQL, mark: RetentionMark = 'raw_before', given?: SQL): SQL {
  const cut = given ?? sql`(select rb.${sql.raw(mark)} from series rb where rb.id = ${sid})`;
  return sql`greatest(${from}, coalesce(${cut}, ${MIN_KEY}))`;
}

/** The instant of key `k` (epoch ms), as the store writes a time-keyed point's ts. */
export function keyInstant(k: string): SQL {
  return sql.raw(`('epoch'::timestamptz + ${k} * interval '1 millisecond')`);
}

/**
 * The raw points of series `sid` whose keys lie in [lo, hi] (null: unbounded) and not before its
 * retention cut (`rawBefore`: see visibleFrom), as a subquery of columns series_id, key, ts, step,
 * value, for `from` or `cross join lateral`. Unordered: a reader that needs key order says `order
 * by key` (the two parts are not one index's order).
 */
export function rawPoints(sid: SQL, lo: SQL | null = null, hi: SQL | null = null, rawBefore?: SQL): SQL {
  const from = visibleFrom(sid, lo ? sql`coalesce(${lo}, ${MIN_KEY})` : MIN_KEY, 'raw_before', rawBefore);
  const to = hi ? sql`coalesce(${hi}, ${MAX_KEY})` : MAX_KEY;
  return sql`(
    select hp.series_id, hp.key, hp.ts, hp.step, hp.value from points hp
    where hp.series_id = ${sid} and hp.key >= ${from} and hp.key <= ${to}
    union all
    select c.series_id, k.key, ${keyInstant('k.key')} as ts, k.step, k.value
    from point_chunks c cross join lateral ${DECODED_CHUNK}
    where c.series_id = ${sid} and c.chunk_start > greatest(${from}, (-9223372036854775807 + ${CHUNK_MS})::bigint) - ${CHUNK_MS}
      and c.chunk_start <= ${to} and k.key >= ${from} and k.key <= ${to}
  )`;
}

/**
 * The newest (`last`) or oldest raw point of series `sid` within [lo, hi] that passes `where`
 * (a condition on alias `p`: key, ts, step, value), as a one-row subquery of columns
 * series_id, key, ts, step, value: one step on `points`' key index, and then only the chunks that
 * could hold a newer (older) point than that one, newest (oldest) first until one holds such a
 * point, decoding only that one. A running series' latest point is in `points` and its chunks are
 * days older: the chunks' index is probed and nothing is decoded. `keyOnly` (without `where`): a
 * point found in a chunk comes with its key alone (ts, step and value null), its values unread.
 */
export function edgeRawPoint(
  sid: SQL,
  dir: 'first' | 'last',
  opts: { lo?: SQL | null; hi?: SQL | null; where?: SQL; keyOnly?: boolean; rawBefore?: SQL } = {},
): SQL {
  const from = visibleFrom(sid, opts.lo ? sql`coalesce(${opts.lo}, ${MIN_KEY})` : MIN_KEY, 'raw_before', opts.rawBefore);
  const to = opts.hi ? sql`coalesce(${opts.hi}, ${MAX_KEY})` : MAX_KEY;
  const cond = opts.where ?? sql`true`;
  const order = sql.raw(dir === 'last' ? 'desc' : 'asc');
  // keyOnly: a compacted day's key, and no ts, step or value (null), so that its values' array is
  // never read: at a sample a minute it is TOASTed (1,440 float8s), and a fleet read's edges, which
  // want only the keys, detoasted two a series. Not with `where`, a condition that may read them.
  const keyOnly = opts.keyOnly === true && !opts.where;
  const decodedDay = keyOnly
    ? sql`select c.chunk_start + k.d as key, null::timestamptz as ts, null::integer as step, null::double precision as value from unnest(c.offs) as k(d)`
    : sql`select k.key, ${keyInstant('k.key')} as ts, k.step, k.value from ${DECODED_CHUNK}`;
  const hot = sql`select p.series_id, p.key, p.ts, p.step, p.value from points p
    where p.series_id = ${sid} and p.key >= ${from} and p.key <= ${to} and ${cond} order by p.key ${order} limit 1`;
  const hotKey = sql`(select h.key from (${hot}) h)`;
  const lowest = sql`greatest(${from}, (-9223372036854775807 + ${CHUNK_MS})::bigint) - ${CHUNK_MS}`;
  // The bound a walk over the chunks stops at (exclusive): the range's far end, and the hot
  // point's day, past which no chunk holds a point beyond it. Worked out once, carried along.
  const stop =
    dir === 'last'
      ? sql`greatest(${lowest}, coalesce(${hotKey}, (-9223372036854775807 + ${CHUNK_MS})::bigint) - ${CHUNK_MS})`
      : sql`coalesce(${hotKey}, ${MAX_KEY})`;
  const within = dir === 'last' ? sql`c.chunk_start > edge_chunks.stop` : sql`c.chunk_start < edge_chunks.stop and c.chunk_start <= ${to}`;
  // The next step's bound on the key index (inclusive): the range's near end, then past each day found.
  const startAt = dir === 'last' ? to : sql`${lowest} + 1`;
  const past = sql.raw(dir === 'last' ? 'c.chunk_start - 1' : 'c.chunk_start + 1');
  const onward = sql.raw(dir === 'last' ? 'c.chunk_start <= edge_chunks.bound' : 'c.chunk_start >= edge_chunks.bound');
  // Each day's own edge: a day is decoded only when the days before it in that order had no
  // point in the range (sorting every decoded point of the days by key decoded them all: the last
  // edge read four days of a sample a minute for every series of a fleet read).
  const dayEdge = sql`left join lateral (
          select p.* from (${opts.where ? decodedDay : sql`${decodedDay} where cardinality(c.offs) >= c.n union all ${regularDayEdge(dir, from, to, keyOnly)}`}) p
          where p.key >= ${from} and p.key <= ${to} and ${cond}
          order by p.key ${order} limit 1
        ) p on true`;
  // The chunks a day at a time, newest (oldest) first, until a day holds a point: each the next
  // on the key index past the one before (LIMIT 1, an ordered Append of the month partitions'
  // index scans), so that a series' history is not read. As one ordered scan joined to the days'
  // edges, the planner sorted every chunk row of the series: its estimate of a range between two
  // parameters is a few rows, cheaper sorted than stepped through. The step's bound is one-sided
  // for the same reason (the far bound is tested on the day it finds, outside its LIMIT: past it in
  // that order, no later day is within either), so even a small table's step is an index step.
  // The walk starts from a row without a day, so the chunk table is planned once, not twice.
  return sql`(
    select * from (
      (${hot})
      union all
      (with recursive edge_chunks as (
        (select null::bigint as series_id, ${stop} as stop, ${startAt} as bound,
          null::bigint as key, null::timestamptz as ts, null::integer as step, null::double precision as value)
        union all
        (select c.series_id, edge_chunks.stop, ${past}, p.key, p.ts, p.step, p.value
          from edge_chunks
          cross join lateral (select c.* from point_chunks c
            where c.series_id = ${sid} and ${onward} order by c.chunk_start ${order} limit 1) c
          ${dayEdge}
          where edge_chunks.key is null and ${within})
      )
      select e.series_id, e.key, e.ts, e.step, e.value from edge_chunks e where e.key is not null limit 1)
    ) e order by e.key ${order} limit 1
  )`;
}

/**
 * The edge point of chunk `c` (a day at one spacing) in [from, to], by arithmetic: the rank of the
 * first point at or after `from` (or the last at or before `to`) and its value and step at that
 * index of the arrays, so the day is not decoded (a fleet read's edges decoded 1,440 points a
 * series for one). Nothing for a day at several spacings (DECODED_CHUNK then) or without such a
 * point: the caller keeps the point only within [from, to].
 */
function regularDayEdge(dir: 'first' | 'last', from: SQL, to: SQL, keyOnly: boolean): SQL {
  const point = keyOnly
    ? sql`null::timestamptz as ts, null::integer as step, null::double precision as value`
    : sql`${keyInstant('a.key')} as ts, c.steps[a.i + 1] as step, c.vals[a.i + 1] as value`;
  return sql`select a.key, ${point}
    from (select c.chunk_start + r.first + i.i * r.spacing as key, i.i::int as i
      from ${sql.raw(CHUNK_SPACING)}
      cross join lateral (select ${spacedRank(dir, dir === 'first' ? from : to, sql`c.chunk_start + r.first`, sql`r.spacing`)} as i) i
      where r.regular and i.i between 0 and c.n - 1) a`;
}

/**
 * SQL: in chunk `c`, a day at one spacing whose first key is `base`, the rank of its first point at
 * or after `bound` ('first'; n or more: none), or of its last at or before it ('last'; -1: none).
 * The bound is clipped to the day first, so no arithmetic reaches an open end (MIN_KEY, MAX_KEY).
 */
function spacedRank(dir: 'first' | 'last', bound: SQL, base: SQL, spacing: SQL): SQL {
  if (dir === 'first') {
    const d = sql`(greatest(${bound}, c.chunk_start) - (${base}))`;
    return sql`case when ${d} <= 0 then 0 else (${d} + ${spacing} - 1) / ${spacing} end`;
  }
  const d = sql`(least(${bound}, c.chunk_start + ${CHUNK_MS}) - (${base}))`;
  return sql`case when ${d} < 0 then -1 else least(c.n - 1, ${d} / ${spacing}) end`;
}

/**
 * The largest stored `offs` (bytes, pg_column_size: the stored size, read without fetching a
 * TOASTed value) read to learn whether a day is at one spacing: such a day keeps two offsets (29
 * bytes). A larger array is a day of many samples at several spacings, never read here.
 */
const SPACED_OFFS_BYTES = 64;

/**
 * A one-row subquery of chunk `c`: its points' keys within [from, to] (bigint SQL; epoch ms) as
 * `lo`, `hi` (null: none) and their count `n`, where they are known without unnesting (`known`;
 * else lo, hi and n are null): a day at one spacing, by arithmetic on its first offset and spacing,
 * or a day of one or two samples, from its offsets. Its values are never read. An edge walk
 * (edgeRawPoint) finds the others' keys. Expressions only, which the planner folds into the
 * caller's row: a subquery of its own per day (a union of the kinds of day, or subplans over
 * unnested offsets) cost a 30-day read about 10 microseconds a day to run and 0.15 ms to plan.
 */
export function chunkKeysIn(from: SQL, to: SQL): SQL {
  // A day at one spacing: its first key, spacing and its points' ranks within the bounds. Null for
  // other days; a large array is not read (the size test comes first).
  const spaced = sql`c.n > 2 and pg_column_size(c.offs) <= ${SPACED_OFFS_BYTES} and cardinality(c.offs) < c.n`;
  const inRange = (k: string) => sql`(${sql.raw(k)} >= ${from} and ${sql.raw(k)} <= ${to})`;
  return sql`(
    select c.n <= 2 or t.spacing is not null as known,
      case when c.n <= 2 then case when ${inRange('t.a')} then t.a when ${inRange('t.b')} then t.b end
        when q.i1 >= q.i0 then t.base + q.i0 * t.spacing end as lo,
      case when c.n <= 2 then case when ${inRange('t.b')} then t.b when ${inRange('t.a')} then t.a end
        when q.i1 >= q.i0 then t.base + q.i1 * t.spacing end as hi,
      case when c.n <= 2 then ${inRange('t.a')}::int + (c.n = 2 and ${inRange('t.b')})::int
        when t.spacing is not null then greatest(0, q.i1 - q.i0 + 1) end as n
    from (
      -- Read once a day (kept apart by offset 0): pulled up, each use of base or spacing read the
      -- offsets again (a 30-day read's first statement spent 5.5 microseconds a day here).
      select case when ${spaced} then c.chunk_start + c.offs[1] end as base, case when ${spaced} then c.offs[2]::bigint end as spacing,
        -- A day of one or two samples keeps each offset (its first and last).
        case when c.n <= 2 then c.chunk_start + c.offs[1] end as a, case when c.n <= 2 then c.chunk_start + c.offs[c.n] end as b
      offset 0
    ) t
    cross join lateral (
      select ${spacedRank('first', from, sql`t.base`, sql`t.spacing`)} as i0, ${spacedRank('last', to, sql`t.base`, sql`t.spacing`)} as i1
    ) q
  )`;
}

/**
 * SQL over `jobs j`: true unless the job finished after `keepFinishedSince` (epoch ms), whose raw
 * points retention keeps (collect.finishedJobRawRetentionDays). A running job (no finish) is not kept.
 */
export function notKeptFinished(keepFinishedSince: number | null): SQL {
  return keepFinishedSince === null ? sql`true` : sql`not coalesce(j.finished_at > to_timestamp(${keepFinishedSince}::float8 / 1000), false)`;
}
