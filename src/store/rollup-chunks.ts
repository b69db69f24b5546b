// The 1-minute rollup lives in two places: `points_1m`, where every write keeps its rows (one row
// per series and minute), and `rollup_chunks_1m`, where the collector's lease holder compacts the
// settled days of it (one row per series and UTC day, migrations/0010), as it compacts raw points
// into point_chunks (point-chunks.ts). Every read of the 1-minute rollup goes through the
// fragments here (rollup1m, edgeRollup1m), so both are read; a write that recomputes an hour of a
// compacted day moves the day back first (TAKE_ROLLUP_DAYS, in the write's own statement:
// repo-point-writes.ts). A minute is in exactly one of the two tables: the rows a write adds to a
// compacted day beside its chunk are of hours that held nothing (they had no 1-hour row), so
// minutes the chunk does not hold, and the next compaction merges them into it.
import { type SQL, sql } from 'drizzle-orm';
import type { RepoContext } from './repo-context.js';
import { CHUNK_MS } from './raw-points.js';
import { type ChunkedRollup, chunkPartitions, ensureChunkPartitions, hideChunkDays, pickCompactionBatch, rollupEdge, rollupRange } from './point-chunks.js';
import { embeddedClientOf, idsRows, rangeRowsWhere, rowsOf } from './sql-util.js';

const MINUTE = 60_000;

/** The start of the UTC day holding `k` (a bigint column or expression), as SQL. */
const dayOf = (k: string) => sql.raw(`(${k} - ((${k} % ${CHUNK_MS}) + ${CHUNK_MS}) % ${CHUNK_MS})`);

/**
 * A compacted day's 1-minute buckets as rows (bucket, n, min, max, sum, last) of chunk `c`, in
 * bucket order: each bucket is `chunk_start` plus the running sum of `offs` (each bucket's minutes
 * after the one before, the first's after `chunk_start`: a sample every 5 min 2.4 s makes 5, 5, 5,
 * 5, 6, ..., which PostgreSQL compresses to nearly nothing, where the minutes of the day as they
 * are took twice the bytes: docs/history.md), or, for a day of buckets at one spacing (fewer
 * `offs` than buckets: [the first's offset, the spacing]), plus the first's and the spacing times
 * its rank. A day whose buckets each hold at most one value keeps `lasts` only:
 * n is then whether last is not null, and min = max = sum = last (exactly: the compactor keeps
 * the four arrays unless every bucket's min, max and sum are last's very bits). `offs` is read
 * once a chunk (`r`, kept apart by `offset 0`), as in DECODED_CHUNK.
 */
export const DECODED_ROLLUP = sql.raw(`(
  select c.chunk_start + (case when r.regular then r.first + (x.o - 1) * r.spacing else sum(x.d) over (order by x.o) end) * ${MINUTE} as bucket,
    case when r.simple then (x.l is not null)::int else x.cn end as n,
    case when r.simple then x.l else x.mi end as min, case when r.simple then x.l else x.ma end as max,
    case when r.simple then x.l else x.su end as sum, x.l as last
  from (select cardinality(c.offs) < c.n as regular, c.offs[1]::bigint as first, c.offs[2]::bigint as spacing,
      c.counts is null as simple offset 0) r,
    unnest(c.lasts, c.offs, c.counts, c.mins, c.maxs, c.sums) with ordinality as x(l, d, cn, mi, ma, su, o)) k`);

const MINUTE_ROLLUP: ChunkedRollup = { rows: 'points_1m', chunks: 'rollup_chunks_1m', span: CHUNK_MS, decoded: () => DECODED_ROLLUP, mark: 'minute_before' };

/** The 1-minute rollup's buckets of series `sid` in [lo, hi] (null: unbounded): rollupRange. */
export const rollup1m = (sid: SQL, lo: SQL | null = null, hi: SQL | null = null): SQL => rollupRange(MINUTE_ROLLUP, sid, lo, hi);

/** The 1-minute rollup's first bucket at or after `at` or last at or before it: rollupEdge. */
export const edgeRollup1m = (sid: SQL, dir: 'first' | 'last', at: SQL): SQL => rollupEdge(MINUTE_ROLLUP, sid, dir, at);

/**
 * CTEs `rc` (the chunk rows of the days of CTE `h`'s hours (series_id, hour), deleted) and `rcb`
 * (their buckets, series_id, bucket, n, min, max, sum, last): how a write that recomputes hours
 * of `points_1m` takes their compacted days back (repo-point-writes.ts, RECOMPUTE_HOURS). The
 * chunks are found by one primary-key range per series, as takeChunkDays finds raw ones.
 */
export const TAKE_ROLLUP_DAYS = sql`rd as materialized (
      select distinct h.series_id, ${dayOf('h.hour')} as day from h
    ), rc as (
      delete from rollup_chunks_1m c
      where c.series_id = any (array(select distinct d.series_id from rd d))
        and c.chunk_start between (select min(d.day) from rd d) and (select max(d.day) from rd d)
        and exists (select 1 from rd d where d.series_id = c.series_id and d.day = c.chunk_start)
      returning c.*
    ), rcb as (
      select c.series_id, k.bucket, k.n, k.min, k.max, k.sum, k.last from rc c cross join lateral ${DECODED_ROLLUP}
    )`;

/**
 * Compaction of the 1-minute rollup, one batch: the settled days (wholly before `before`, floored
 * to a UTC day) of the next `batch` series of a provider with `points_1m` rows before it (ids
 * above `after`, in id order) are moved into rollup_chunks_1m, a row per series and day; a day
 * that has a chunk already (rows a write added beside it, of hours that held nothing) is merged
 * with it. As compactRawPointsBatch: the months' partitions first, each in its own statement,
 * then one statement in a transaction that first takes `points_1m` in SHARE ROW EXCLUSIVE mode,
 * so no write's rollup lands in a day while it is moved (a write waits for the batch, then finds
 * the chunk and moves it back). At most COMPACT_SPAN_DAYS days from the batch's oldest bucket move;
 * `done` is false when the batch has older days left. Returns the last series id of the batch
 * (null: none left), the chunk rows written and the 1-minute rows moved.
 */
export async function compactRollupsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; chunks: number; rows: number; done: boolean }> {
  const picked = await pickCompactionBatch(ctx, 'points_1m', providerId, before, after, batch);
  if (!picked) return { last: null, chunks: 0, rows: 0, done: true };
  const { ids, cut, settled } = picked;
  await ensureChunkPartitions(ctx, picked.first, cut - 1, 'rollup_chunks_1m');
  const moved = await ctx.transaction(async (tx) => {
    await tx.db.execute(sql`lock table points_1m in share row exclusive mode`);
    const days = await rowsOf<{ series_id: number | string; day: number | string }>(
      tx.db,
      sql`select distinct m.series_id::float8 as series_id, ${dayOf('m.bucket')}::float8 as day
        from ${idsRows('points_1m', 'bucket', ids, cut)} m`,
    );
    if (days.length === 0) return { chunks: 0, rows: 0 };
    const json = `[${days.map((d) => `[${Number(d.series_id)},${Number(d.day)}]`).join(',')}]`;
    const [row] = await rowsOf<{ chunks: number | string; rows: number | string }>(
      tx.db,
      sql`
      with h as materialized (
        select (r->>0)::bigint as series_id, (r->>1)::bigint as hour from jsonb_array_elements(${json}::jsonb) as r
      ), ${TAKE_ROLLUP_DAYS}, moved as (
        delete from points_1m m where ${rangeRowsWhere('points_1m', 'bucket', 'rd', sql`d.day`, sql`d.day + ${CHUNK_MS}`)}
        returning m.series_id, m.bucket, m.n, m.min, m.max, m.sum, m.last
      ), every as (
        select series_id, bucket, n, min, max, sum, last from moved
        union all
        select series_id, bucket, n, min, max, sum, last from rcb
      ), ins as (
        insert into rollup_chunks_1m (series_id, chunk_start, n, offs, counts, mins, maxs, sums, lasts)
        select series_id, day, count(*)::int,
          -- A day of buckets at one spacing keeps [first offset, spacing] in minutes, else each
          -- bucket's minutes after the one before (the first's after the day's start).
          case when count(*) > 2 and min(bucket - prev) = max(bucket - prev) then array[((min(bucket) - day) / ${MINUTE})::int4, (min(bucket - prev) / ${MINUTE})::int4]
            else array_agg(((bucket - coalesce(prev, day)) / ${MINUTE})::int4 order by bucket) end,
          case when bool_and(one) then null else array_agg(n order by bucket) end,
          case when bool_and(one) then null else array_agg(min order by bucket) end,
          case when bool_and(one) then null else array_agg(max order by bucket) end,
          case when bool_and(one) then null else array_agg(sum order by bucket) end,
          array_agg(last order by bucket)
        from (
          select e.*, ${dayOf('e.bucket')} as day,
            lag(e.bucket) over (partition by e.series_id, ${dayOf('e.bucket')} order by e.bucket) as prev,
            -- A bucket of at most one value, its min, max and sum last's very bits (float8send: -0 is not 0).
            case when e.last is null then e.n = 0 and e.min is null and e.max is null and e.sum is null
              else e.n = 1 and float8send(e.min) = float8send(e.last) and float8send(e.max) = float8send(e.last)
                and float8send(e.sum) = float8send(e.last) end as one
          from every e
        ) x
        group by series_id, day
        returning n
      )
      select count(*)::float8 as chunks, coalesce((select count(*) from moved), 0)::float8 as rows from ins`,
    );
    return { chunks: Number(row?.chunks ?? 0), rows: Number(row?.rows ?? 0) };
  });
  return { last: ids[ids.length - 1]!, ...moved, done: cut >= settled };
}

/** analyzeChunks' part for rollup_chunks_1m (PGlite has no autovacuum). */
export async function analyzeRollupChunks(ctx: RepoContext): Promise<void> {
  const client = embeddedClientOf(ctx.db);
  if (client) await client.query('analyze rollup_chunks_1m, points_1m');
}

/** rollup_chunks_1m's month partitions: name, and the month's [start, end) as epoch ms. */
export function rollupChunkPartitions(ctx: RepoContext): Promise<{ name: string; start: number; end: number }[]> {
  return chunkPartitions(ctx, 'rollup_chunks_1m');
}

/**
 * 1-minute retention of compacted rollups, for a provider: its days before `before` are hidden
 * by the series' `minute_before` (`before` taken down to its UTC hour, as that retention takes it:
 * a read from before it goes to the 1-hour rollup, never to a day that is gone), and each month
 * partition wholly before it is dropped once nothing in it is seen (hideChunkDays). Rows still in
 * `points_1m` are not touched (its own retention deletes them, rollup-retention.ts). Returns the
 * partitions dropped and the series hidden.
 */
export function dropRollupChunks(ctx: RepoContext, providerId: string, before: number): Promise<{ dropped: number; hidden: number }> {
  const cut = before - (((before % CHUNK_MS) + CHUNK_MS) % CHUNK_MS);
  // As rollup-retention.ts's hourCut (not imported: that module imports repo-point-writes.ts, which imports this one).
  const minuteCut = before - (((before % 3_600_000) + 3_600_000) % 3_600_000);
  return hideChunkDays(ctx, 'rollup_chunks_1m', providerId, cut, sql`true`, { column: 'minute_before', at: minuteCut });
}
