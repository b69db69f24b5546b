// The 1-hour rollup lives in two places: `points_1h`, where every write keeps its rows (one row per
// series and hour), and `rollup_chunks_1h`, where the collector's lease holder compacts its
// settled days (one row per series and UTC month, migrations/0011, the month's chunk growing by
// the days that settle), after the 1-minute rollup's days (rollup-chunks.ts). Every read of the
// 1-hour rollup goes through the fragments here (rollup1h, edgeRollup1h), so both are read. An
// hour is in exactly one of the two: a chunk holds hours up to its `last_bucket` only, and a
// write's rollup statement counts an hour as fresh (it held nothing) only where it has no row and
// is not within a chunk's span (FRESH_HOUR); its recompute of held hours takes the chunks whose
// span holds them back into `points_1h` first (TAKE_HOUR_MONTHS, in the write's own statement:
// repo-point-writes.ts). Hours after a chunk's last bucket (the month's unsettled days) are
// written and recomputed in `points_1h` as before, without touching the chunk.
import { type SQL, sql } from 'drizzle-orm';
import type { RepoContext } from './repo-context.js';
import { CHUNK_MS } from './raw-points.js';
import {
  ALL_ROLLUP_COLUMNS,
  type ChunkedRollup,
  chunkPartitions,
  dropChunkMonths,
  ensureChunkPartitions,
  monthOf,
  pickCompactionBatch,
  type RollupColumn,
  rollupEdge,
  rollupRange,
} from './point-chunks.js';
import { embeddedClientOf, idsRows, rangeRowsWhere, rowsOf } from './sql-util.js';

const HOUR = 3_600_000;
/** The longest UTC month: a chunk starting more than this before a key cannot hold it. */
const MONTH_MAX_MS = 31 * CHUNK_MS;

/**
 * Months of a series one compaction transaction moves at most: an upgraded database's first run
 * finds all of history in `points_1h` (a series' month is at most 744 rows, so a batch of 20
 * series moves at most about 90,000); after that a run moves the days settled since the last.
 */
export const COMPACT_SPAN_MONTHS = 6;

/** SQL: the start (epoch ms) of the UTC month holding epoch ms `k` (an SQL expression). */
export function monthSql(k: SQL | string): SQL {
  const key = typeof k === 'string' ? sql.raw(k) : k;
  return sql`(extract(epoch from date_trunc('month', to_timestamp((${key})::float8 / 1000) at time zone 'UTC')) * 1000)::bigint`;
}

/** A chunk's float arrays of min, max and sum, each with its alias in decodedHourRollup's unnest. */
const HOUR_ARRAYS: readonly { column: RollupColumn; array: string; alias: string }[] = [
  { column: 'min', array: 'mins', alias: 'mi' },
  { column: 'max', array: 'maxs', alias: 'ma' },
  { column: 'sum', array: 'sums', alias: 'su' },
];

/**
 * A compacted month's buckets as rows (bucket, n, min, max, sum, last) of chunk `c`, in bucket
 * order, those in [lo, hi] (SQL, epoch ms; null: unbounded) and maybe more: for a month at one
 * spacing (fewer `offs` than buckets: [the first's offset, the spacing]) each bucket is the
 * first's plus the spacing times its rank, so only the slice of the arrays that [lo, hi] covers is
 * unnested (a fleet's 24 hours of a month's 744 read 24 rows); any other month's buckets are
 * `chunk_start` plus the running sum of `offs` (each bucket's hours after the one before), all of
 * them. A null min, max or sum is the bucket's last (the compactor nulls them only where their
 * bits are last's). `offs` is read once a chunk (`r`, kept apart by `offset 0`), as in DECODED_ROLLUP.
 * Of min, max and sum only those in `needs` are read (the others null): each is an array stored out
 * of line (migration 0012), fetched whole to slice it, and an average needs neither min nor max.
 */
export function decodedHourRollup(lo: SQL | null = null, hi: SQL | null = null, needs: readonly RollupColumn[] = ALL_ROLLUP_COLUMNS): SQL {
  // The slice's first and last index (1-based) from the bounds' hours after chunk_start, as float8 (no overflow at the ends).
  const hours = (at: SQL) => sql`((((${at})::float8 - c.chunk_start) / ${sql.raw(String(HOUR))} - c.offs[1]) / c.offs[2])`;
  const from = lo ? sql`greatest(1, ceil(${hours(lo)}) + 1)::int` : sql.raw('1');
  const to = hi ? sql`least(c.n, floor(${hours(hi)}) + 1)::int` : sql.raw('c.n');
  // The arrays read (each column's array and its alias in the unnest) and the columns made of them.
  const read = HOUR_ARRAYS.filter((a) => needs.includes(a.column));
  const sliced = read.map((a) => `, c.${a.array}[r.i0:r.i1]`).join('');
  const whole = read.map((a) => `, c.${a.array}`).join('');
  const aliases = read.map((a) => `, ${a.alias}`).join('');
  const columns = sql.raw(
    HOUR_ARRAYS.map((a) => (needs.includes(a.column) ? `coalesce(x.${a.alias}, x.l) as ${a.column}` : `null::float8 as ${a.column}`)).join(', '),
  );
  return sql`(
  select c.chunk_start + (r.first + (r.i0 + x.o - 2) * r.spacing) * ${sql.raw(String(HOUR))} as bucket,
    x.cn as n, ${columns}, x.l as last
  from (select c.offs[1]::bigint as first, c.offs[2]::bigint as spacing, ${from} as i0, ${to} as i1
      where cardinality(c.offs) < c.n offset 0) r,
    unnest(c.lasts[r.i0:r.i1], c.counts[r.i0:r.i1]${sql.raw(sliced)})
      with ordinality as x(l, cn${sql.raw(aliases)}, o)
  union all
  select c.chunk_start + sum(x.d) over (order by x.o) * ${sql.raw(String(HOUR))} as bucket,
    x.cn as n, ${columns}, x.l as last
  from unnest(c.lasts, c.offs, c.counts${sql.raw(whole)}) with ordinality as x(l, d, cn${sql.raw(aliases)}, o)
  -- A condition on the chunk alone: a one-time filter before the arrays are unnested (as a
  -- fenced subquery beside the unnest, the planner unnested every month first: 0.3 ms a series
  -- and month of a fleet read, for no row).
  where cardinality(c.offs) >= c.n) k`;
}

/** Every bucket of chunk `c` (decodedHourRollup unbounded). */
export const DECODED_HOUR_ROLLUP = decodedHourRollup();

const HOUR_ROLLUP: ChunkedRollup = { rows: 'points_1h', chunks: 'rollup_chunks_1h', span: MONTH_MAX_MS, decoded: decodedHourRollup };

/** The 1-hour rollup's buckets of series `sid` in [lo, hi] (null: unbounded), of min, max and sum those in `needs` (the others null): rollupRange. */
export const rollup1h = (sid: SQL, lo: SQL | null = null, hi: SQL | null = null, needs: readonly RollupColumn[] = ALL_ROLLUP_COLUMNS): SQL =>
  rollupRange(HOUR_ROLLUP, sid, lo, hi, needs);

/** The 1-hour rollup's first bucket at or after `at` or last at or before it: rollupEdge. */
export const edgeRollup1h = (sid: SQL, dir: 'first' | 'last', at: SQL): SQL => rollupEdge(HOUR_ROLLUP, sid, dir, at);

/**
 * CTE `hc` (series_id, chunk_start, last_bucket: the chunks of the series of CTE `t` (series_id,
 * bucket) that its buckets' span could fall in, one primary-key range per series) and the
 * condition FRESH_HOUR on a row `t` of it: true unless its hour is within such a chunk's span. A
 * write's rollup statement counts an hour as fresh (it held no points: its rows are the batch's)
 * only where it has no `points_1h` row and is within no chunk's span: every hour of that span
 * counts as held (a gap in it too), and is recomputed (its chunk taken back) instead. The hours
 * after a month's chunk (its unsettled days) are fresh or not by their rows alone.
 */
export const HOUR_CHUNKS_OF_T = sql`hc as materialized (
      select c.series_id, c.chunk_start, c.last_bucket from rollup_chunks_1h c
      where c.series_id = any (array(select distinct t.series_id from t))
        and c.chunk_start > (select min(t.bucket) from t) - ${MONTH_MAX_MS} and c.chunk_start <= (select max(t.bucket) from t)
    )`;
export const FRESH_HOUR = sql`not exists (select 1 from hc where hc.series_id = t.series_id and t.bucket between hc.chunk_start and hc.last_bucket)`;

/**
 * CTEs `hm` (the months of CTE `h`'s hours (series_id, hour)), `hrc` (the chunk rows whose span
 * holds one of those hours, deleted) and `hrcb` (their buckets, series_id, bucket, n, min, max,
 * sum, last): how a write that recomputes hours of `points_1h` takes their compacted months back
 * (repo-point-writes.ts, RECOMPUTE_HOURS), as TAKE_ROLLUP_DAYS takes the 1-minute rollup's days;
 * an hour after its month's chunk (the unsettled days) takes nothing. The chunks are found by one
 * primary-key range per series.
 */
export const TAKE_HOUR_MONTHS = sql`hm as materialized (
      select distinct h.series_id, ${monthSql('h.hour')} as month from h
    ), hrc as (
      delete from rollup_chunks_1h c
      where c.series_id = any (array(select distinct m.series_id from hm m))
        and c.chunk_start between (select min(m.month) from hm m) and (select max(m.month) from hm m)
        and exists (select 1 from h where h.series_id = c.series_id and h.hour between c.chunk_start and c.last_bucket)
      returning c.*
    ), hrcb as (
      select c.series_id, k.bucket, k.n, k.min, k.max, k.sum, k.last from hrc c cross join lateral ${DECODED_HOUR_ROLLUP}
    )`;

/**
 * Compaction of the 1-hour rollup, one batch: the settled days (wholly before the UTC day
 * `before` falls in) of the next `batch` series of a provider with `points_1h` rows before it
 * (ids above `after`, in id order) are moved into rollup_chunks_1h, a row per series and month;
 * a month that has a chunk already (its days settled before) is merged with it, so the month's
 * row grows by a run's settled days until the month ends. As compactRollupsBatch: the years'
 * partitions first, each in its own statement, then one statement in a transaction that first
 * takes `points_1h` in SHARE ROW EXCLUSIVE mode, so no write's rollup lands in those hours while
 * they are moved (a write waits for the batch, then finds the chunk and takes it back). At most
 * COMPACT_SPAN_MONTHS months from the batch's oldest bucket move; `done` is false when the batch
 * has older days left. Returns the last series id of the batch (null: none left), the chunk rows
 * written and the 1-hour rows moved.
 */
export async function compactHourRollupsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; chunks: number; rows: number; done: boolean }> {
  const picked = await pickCompactionBatch(ctx, 'points_1h', providerId, before, after, batch);
  if (!picked) return { last: null, chunks: 0, rows: 0, done: true };
  const { ids, settled } = picked;
  let cut = monthOf(picked.first).start;
  for (let i = 0; i < COMPACT_SPAN_MONTHS && cut < settled; i++) cut = monthOf(cut).end;
  cut = Math.min(cut, settled);
  await ensureChunkPartitions(ctx, picked.first, cut - 1, 'rollup_chunks_1h');
  const moved = await ctx.transaction(async (tx) => {
    await tx.db.execute(sql`lock table points_1h in share row exclusive mode`);
    const months = await rowsOf<{ series_id: number | string; month: number | string }>(
      tx.db,
      sql`select distinct m.series_id::float8 as series_id, ${monthSql('m.bucket')}::float8 as month
        from ${idsRows('points_1h', 'bucket', ids, cut)} m`,
    );
    if (months.length === 0) return { chunks: 0, rows: 0 };
    const json = `[${months.map((d) => `[${Number(d.series_id)},${Number(d.month)}]`).join(',')}]`;
    const [row] = await rowsOf<{ chunks: number | string; rows: number | string }>(
      tx.db,
      sql`
      with h as materialized (
        select (r->>0)::bigint as series_id, (r->>1)::bigint as hour from jsonb_array_elements(${json}::jsonb) as r
      ), ${TAKE_HOUR_MONTHS}, moved as (
        delete from points_1h m
        where ${rangeRowsWhere('points_1h', 'bucket', 'hm', sql`d.month`, sql`least(${cut}::bigint, d.month + ${MONTH_MAX_MS})`, sql`${monthSql('x.bucket')} = d.month`)}
        returning m.series_id, m.bucket, m.n, m.min, m.max, m.sum, m.last
      ), every as (
        select series_id, bucket, n, min, max, sum, last from moved
        union all
        select series_id, bucket, n, min, max, sum, last from hrcb
      ), ins as (
        insert into rollup_chunks_1h (series_id, chunk_start, n, last_bucket, offs, counts, mins, maxs, sums, lasts)
        select series_id, month, count(*)::int, max(bucket),
          -- A month of buckets at one spacing keeps [first offset, spacing] in hours, else each
          -- bucket's hours after the one before (the first's after the month's start).
          case when count(*) > 2 and min(bucket - prev) = max(bucket - prev) then array[((min(bucket) - month) / ${HOUR})::int4, (min(bucket - prev) / ${HOUR})::int4]
            else array_agg(((bucket - coalesce(prev, month)) / ${HOUR})::int4 order by bucket) end,
          array_agg(n order by bucket),
          -- Null where the bucket's last is the same bits (float8send: -0 is not 0): a bucket of one value.
          array_agg(case when float8send(min) = float8send(last) then null else min end order by bucket),
          array_agg(case when float8send(max) = float8send(last) then null else max end order by bucket),
          array_agg(case when float8send(sum) = float8send(last) then null else sum end order by bucket),
          array_agg(last order by bucket)
        from (
          select e.*, m.month, lag(e.bucket) over (partition by e.series_id, m.month order by e.bucket) as prev
          from every e cross join lateral (select ${monthSql('e.bucket')} as month) m
        ) x
        group by series_id, month
        returning n
      )
      select count(*)::float8 as chunks, coalesce((select count(*) from moved), 0)::float8 as rows from ins`,
    );
    return { chunks: Number(row?.chunks ?? 0), rows: Number(row?.rows ?? 0) };
  });
  return { last: ids[ids.length - 1]!, ...moved, done: cut >= settled };
}

/** analyzeChunks' part for rollup_chunks_1h (PGlite has no autovacuum). */
export async function analyzeHourRollupChunks(ctx: RepoContext): Promise<void> {
  const client = embeddedClientOf(ctx.db);
  if (client) await client.query('analyze rollup_chunks_1h, points_1h');
}

/** rollup_chunks_1h's year partitions: name, and the year's [start, end) as epoch ms. */
export function hourRollupChunkPartitions(ctx: RepoContext): Promise<{ name: string; start: number; end: number }[]> {
  return chunkPartitions(ctx, 'rollup_chunks_1h');
}

/**
 * 1-hour retention of compacted rollups, for a provider: its chunks of months wholly before the
 * UTC hour `before` falls in go, by `drop table` of each year partition wholly before it that
 * holds no other provider's series (others may keep theirs longer), else by deleting its chunk
 * rows (a row per series and month). Rows still in `points_1h` are not touched (the batched
 * deletes of rollup-retention.ts take them). The series that lost chunks remember the month's
 * start in `hour_before` (where their 1-hour rollup now begins; the month the cut falls in is
 * kept whole). Returns the partitions dropped and the chunk rows deleted.
 */
export function dropHourRollupChunks(ctx: RepoContext, providerId: string, before: number): Promise<{ dropped: number; deleted: number }> {
  const cut = monthOf(before).start;
  return dropChunkMonths(ctx, 'rollup_chunks_1h', providerId, cut, sql`true`, { column: 'hour_before', at: cut });
}
