// Series and points writes: series upserts, the points' COPY and merge, the rollups kept on
// write, raw-point retention and PGlite's statistics upkeep.
import { sql, type SQL } from 'drizzle-orm';
import type { JobRow, PointWriteRow, SeriesIdentity, WrittenRange } from './repo-types.js';
import type { SeriesData } from '../domain/types.js';
import type { Db } from './db.js';
import { pointBatch, seriesIdentity } from './point-batch.js';
import type { RepoContext } from './repo-context.js';
import {
  chunks,
  copierOf,
  embeddedClientOf,
  isUniqueViolation,
  pointBatchOfRows,
  rangeRowsWhere,
  rollupCopierOf,
  rowsOf,
  type PointBatch,
  RollupRows,
} from './sql-util.js';
import { CHUNK_MS, DECODED_CHUNK, edgeRawPoint, keyInstant, notKeptFinished, takeChunkDays } from './raw-points.js';
import { TAKE_ROLLUP_DAYS } from './rollup-chunks.js';
import { FRESH_HOUR, HOUR_CHUNKS_OF_T, TAKE_HOUR_MONTHS } from './hour-rollups.js';

/** Rows per bulk point statement: statements grow with data volume only, by this divisor. */
export const POINTS_PER_STATEMENT = 50_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The start of the bucket of `width` ms holding `key` (epoch ms), on UTC boundaries, before 1970 too. */
export function bucketOf(key: number, width: number): number {
  return key - (((key % width) + width) % width);
}

/** A rollup row's columns from the points `p` of its bucket (key, value): migrations/0007 backfills with the same. */
const ROLLUP_AGGREGATES = sql.raw(`count(p.value)::int, min(p.value), max(p.value), sum(p.value order by p.key),
  (array_agg(p.value order by p.key desc) filter (where p.value is not null))[1]`);

/**
 * The end of a rollup statement: every hour of CTE `h` (series_id, hour; time-keyed series only)
 * read back from `points` (one index range each) and both rollups' rows of it recomputed and
 * upserted; the 1-minute rollup's compacted days of those hours are moved back into points_1m
 * first (TAKE_ROLLUP_DAYS), so a minute is never in both places, and the 1-hour rollup's compacted
 * months of those hours into points_1h (TAKE_HOUR_MONTHS), their hours this recompute does not
 * give as they were. rollUp's hours that already held points and rollUpByRecompute's every touched hour.
 */
const RECOMPUTE_HOURS = sql`p as materialized (
      select h.series_id, h.hour, x.key - ((x.key % 60000) + 60000) % 60000 as minute, x.key, x.value
      from h cross join lateral (select pt.key, pt.value from points pt
        where pt.series_id = h.series_id and pt.key >= h.hour and pt.key < h.hour + 3600000 order by pt.key) x
    ), ${TAKE_ROLLUP_DAYS}, ${TAKE_HOUR_MONTHS}, m as (
      -- The hours' compacted days come back into points_1m (rollup-chunks.ts): their minutes this
      -- recompute does not give as they were, beside the recomputed ones.
      insert into points_1m (series_id, bucket, n, min, max, sum, last)
      select series_id, minute, ${ROLLUP_AGGREGATES} from p group by series_id, minute
      union all
      select b.series_id, b.bucket, b.n, b.min, b.max, b.sum, b.last from rcb b
      where not exists (select 1 from p where p.series_id = b.series_id and p.minute = b.bucket)
      on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last
    )
    insert into points_1h (series_id, bucket, n, min, max, sum, last)
    select series_id, hour, ${ROLLUP_AGGREGATES} from p group by series_id, hour
    union all
    select b.series_id, b.bucket, b.n, b.min, b.max, b.sum, b.last from hrcb b
    where not exists (select 1 from p where p.series_id = b.series_id and p.hour = b.bucket)
    on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last`;

/**
 * The end of the points merge (after CTEs `mv`, the compacted days it took back, and `w`, the
 * rows it added or changed, series_id, key, value): the hours it only appended to are rolled up by
 * folding its new points into the rows the hour had, and CTE `g` holds the time-keyed hours it
 * changed (series_id, hour), `ap` the appended ones among them, so the caller recomputes only the
 * others (rollUp). An hour is appended to when every point the merge changed in it is after every
 * point it held: then each of them is new, and the points in key order are the held ones, then
 * these; the fold adds them one by one to the held sum (`sum(... order by k nulls first)`, the held
 * sum first), so it is the sum in key order to the last digit, as a recompute from `points` gives
 * it, without reading the hour back. A collector's sweep appends to the hour its previous sweep
 * ended in: before, every sweep read that hour's points back (up to an hour of the series) and
 * rewrote its sixty minute rows. The held rows and points are those the statement found (every
 * part of it sees one snapshot). Left to the recompute: hours that held no point (fresh, or their
 * points dropped by retention or compacted), hours of a series whose compacted days this merge
 * took back, of a day whose 1-minute rollup is compacted, of a month whose 1-hour rollup is (no
 * `points_1h` row), and hours older than the series' raw retention cut (`raw_before`).
 */
const APPENDED_HOURS = sql`g as materialized (
      select w.series_id, w.key - ((w.key % 3600000) + 3600000) % 3600000 as hour, min(w.key) as first, s.raw_before
      from w join series s on s.id = w.series_id and s.keyed_by = 'time' group by 1, 2, s.raw_before
    ), ap as materialized (
      select g.series_id, g.hour from g
      where (g.raw_before is null or g.raw_before <= g.hour)
        and (select max(p.key) from points p where p.series_id = g.series_id and p.key >= g.hour and p.key < g.hour + 3600000) < g.first
        and exists (select 1 from points_1h o where o.series_id = g.series_id and o.bucket = g.hour)
        and not exists (select 1 from mv where mv.series_id = g.series_id)
        and not exists (select 1 from rollup_chunks_1m c where c.series_id = g.series_id
          and c.chunk_start = g.hour - ((g.hour % ${CHUNK_MS}) + ${CHUNK_MS}) % ${CHUNK_MS})
    ), an as materialized (
      select w.series_id, ap.hour, w.key - ((w.key % 60000) + 60000) % 60000 as minute, w.key, w.value
      from w join ap on ap.series_id = w.series_id and w.key >= ap.hour and w.key < ap.hour + 3600000
    ), af as (
      -- Each width's held row first (key null), then the new points in key order.
      select an.series_id, true as hourly, an.hour as bucket, an.key as k, an.value as v,
        (an.value is not null)::int as n, an.value as lo, an.value as hi, an.value as last from an
      union all
      select an.series_id, false, an.minute, an.key, an.value, (an.value is not null)::int, an.value, an.value, an.value from an
      union all
      select o.series_id, true, o.bucket, null, o.sum, o.n, o.min, o.max, o.last from points_1h o
      where exists (select 1 from ap where ap.series_id = o.series_id and ap.hour = o.bucket)
      union all
      select o.series_id, false, o.bucket, null, o.sum, o.n, o.min, o.max, o.last from points_1m o
      where exists (select 1 from an where an.series_id = o.series_id and an.minute = o.bucket)
    ), folded as materialized (
      select series_id, hourly, bucket, sum(n)::int as n, min(lo) as min, max(hi) as max, sum(v order by k nulls first) as sum,
        (array_agg(last order by k desc nulls last) filter (where last is not null))[1] as last
      from af group by series_id, hourly, bucket
    ), fh as (
      insert into points_1h (series_id, bucket, n, min, max, sum, last)
      select series_id, bucket, n, min, max, sum, last from folded where hourly
      on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last
    ), fmin as (
      insert into points_1m (series_id, bucket, n, min, max, sum, last)
      select series_id, bucket, n, min, max, sum, last from folded where not hourly
      on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last
    )`;

/**
 * The CTEs `mv` (the chunks of the days the staged points fall in, deleted) and `back` (their
 * points the stage does not give, as rows of `points`): a write's own move of compacted days back
 * into `points` (writePointBatches). A day of a step-keyed series is never compacted: its probe
 * finds nothing.
 */
function moveBackDays(batches: readonly PointBatch[]): SQL {
  return sql`${takeChunkDays(daysOf(batches))}, back as (
      select c.series_id, k.key, ${keyInstant('k.key')} as ts, k.step, k.value from mv c cross join lateral ${DECODED_CHUNK}
      where not exists (select 1 from points_stage st where st.series_id = c.series_id and st.key = k.key)
    )`;
}

/** The (series, UTC day) pairs of the batches' points, as takeChunkDays' JSON (each run's keys are in order). */
function daysOf(batches: readonly PointBatch[]): string {
  const days = new Set<string>();
  for (const b of batches) {
    for (const run of b.runs) {
      let last = Number.NaN;
      for (let i = run.start; i < run.end; i++) {
        const day = bucketOf(b.key[i]!, CHUNK_MS);
        if (day === last) continue;
        days.add(`[${run.seriesId},${day}]`);
        last = day;
      }
    }
  }
  return `[${[...days].join(',')}]`;
}

/** The fewest points written since the last ANALYZE that make PGlite refresh its statistics (maintainStatistics). */
export const ANALYZE_AFTER_POINTS = 10_000;

/**
 * Series per statement, reading or writing: the series rows one upsert writes (writeSeriesRows),
 * and the series windows one points or summary read takes (store/loaders.ts batches them). Either
 * travels as one JSON parameter, so no parameter limit applies; the bound only caps one
 * statement's input (20,000 series rows: about 7 MB of JSON). DataLoader's batch of 1,000 keys
 * made a dashboard of 500 jobs x 4 GPUs (2,000 series) a statement more per loader than one of 50
 * jobs; upserts of 5,000 rows made a cold request for 500 jobs of 2 nodes x 2 GPUs (14,000 series)
 * two statements more than one for 50 jobs.
 */
export const SERIES_PER_STATEMENT = 20_000;

/**
 * Upserts series and their points: one statement for the series, one merge for the points.
 * Points are idempotent (keyed by series and time/step), so replaying a fetch changes nothing.
 */
/** Writes the series and their points; returns the stretch of keys each series' points span (WrittenRange). */
export async function writeSeries(ctx: RepoContext, providerId: string, entries: { job: JobRow; series: SeriesData[] }[]): Promise<WrittenRange[]> {
  const ids = await writeSeriesRows(ctx, providerId, entries);
  const { batch } = pointBatch(providerId, entries, ids);
  await writePoints(ctx, batch);
  return batch.runs.filter((r) => r.end > r.start).map((r) => ({ seriesId: r.seriesId, lo: batch.key[r.start]!, hi: batch.key[r.end - 1]! }));
}

/**
 * Upserts the series themselves (not their points), SERIES_PER_STATEMENT per statement; returns
 * their ids by series key. An entry's `identities`, where given, are its series' seriesIdentity in
 * their order (worked out already as the fetch arrived).
 */
export async function writeSeriesRows(
  ctx: RepoContext,
  providerId: string,
  entries: { job: JobRow; series: SeriesData[]; identities?: readonly SeriesIdentity[]; stored?: boolean }[],
): Promise<Map<string, number>> {
  const seriesRows = new Map<string, Record<string, unknown>>();
  /** Keys of entries whose job's series the caller knows are stored (`stored`: its fetch records say so). */
  const trusted = new Set<string>();
  for (const { job, series, identities, stored } of entries) {
    const system = series.filter((s) => s.kind === 'system').length;
    if (system > 0) ctx.state.shapes.learnSeries(job.id, 'systemSeries', system);
    if (system < series.length) ctx.state.shapes.learnSeries(job.id, 'trainingSeries', series.length - system);
    for (let i = 0; i < series.length; i++) {
      const s = series[i]!;
      const { key, nodeId, gpuId } = identities?.[i] ?? seriesIdentity(providerId, job, s);
      if (stored) trusted.add(key);
      seriesRows.set(key, {
        series_key: key,
        job_id: job.id,
        node_id: nodeId,
        gpu_id: gpuId,
        kind: s.kind,
        name: s.name,
        raw_name: s.rawName,
        unit: s.unit,
        scope: s.scope,
        source: s.source,
        stage: s.stage,
        keyed_by: s.keyedBy,
        meta: s.meta,
      });
    }
  }
  const ids = new Map<string, number>();
  // Rows this process stored as they are here (SeriesRows) are not sent again, where the caller
  // knows the job's series are stored (its fetch records, which commit after the series rows, say
  // so: a database whose series were emptied under a running server, as a test does to start
  // cold, lost those too): a steady sweep's group sends none.
  const known = ctx.state.seriesRows;
  const sigs = new Map<string, string>();
  const unknown: Record<string, unknown>[] = [];
  for (const [key, row] of seriesRows) {
    const sig = seriesRowSig(row);
    const id = trusted.has(key) ? known.idOf(key, sig) : undefined;
    if (id === undefined) {
      sigs.set(key, sig);
      unknown.push(row);
    } else ids.set(key, id);
  }
  // In key order: two writers of overlapping series lock their rows in the same order.
  const ordered = unknown.sort((a, b) => ((a.series_key as string) < (b.series_key as string) ? -1 : 1));
  for (const part of chunks(ordered, SERIES_PER_STATEMENT)) {
    const rows = await rowsOf<{ id: number; series_key: string }>(
      ctx.db,
      sql`
      insert into series (series_key, job_id, node_id, gpu_id, kind, name, raw_name, unit, scope, source, stage, keyed_by, meta)
      select * from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as x(series_key text, job_id text, node_id text,
        gpu_id text, kind text, name text, raw_name text, unit text, scope text, source text, stage text, keyed_by text, meta jsonb)
      on conflict (series_key) do update set raw_name = excluded.raw_name, unit = excluded.unit, scope = excluded.scope,
        meta = excluded.meta
      returning id::float8 as id, series_key`,
    );
    for (const r of rows) ids.set(r.series_key, Number(r.id));
    ctx.onCommit(() => {
      for (const r of rows) known.remember(r.series_key, Number(r.id), sigs.get(r.series_key)!);
    });
  }
  return ids;
}

/** What an upsert of a series row updates (writeSeriesRows' `do update`): equal, the stored row is as this one would leave it. */
function seriesRowSig(row: Record<string, unknown>): string {
  return `${row.raw_name ?? '\u0000'}\u0001${row.unit}\u0001${row.scope}\u0001${JSON.stringify(row.meta ?? null)}`;
}

/**
 * Where a job's platform gives no start (its creation stands in), the first metric point the
 * cache holds is a closer one: startedAt becomes the earliest stored point of the job at or after
 * its creation (FIRST_METRIC), and moves earlier when an earlier point is stored. One statement.
 */
export async function startFromFirstPoints(ctx: RepoContext, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await ctx.db.execute(startFromFirstPointsSql(jobIds));
}

/** startFromFirstPoints' statement (a data-modifying CTE of another statement too: repo-fetches.ts, recordFetched). */
export function startFromFirstPointsSql(jobIds: readonly string[]): SQL {
  return sql`
    update jobs set started_at = f.first_at, started_at_source = 'FIRST_METRIC'
    from (select s.job_id, min(fp.ts) as first_at
          from series s
          cross join lateral ${edgeRawPoint(sql`s.id`, 'first', { where: sql`p.ts is not null` })} fp
          where s.job_id = any(array(select jsonb_array_elements_text(${JSON.stringify(jobIds)}::jsonb)))
          group by s.job_id) f
    where jobs.id = f.job_id
      and (jobs.started_at_source = 'CREATION' or (jobs.started_at_source = 'FIRST_METRIC' and f.first_at < jobs.started_at))
      and (jobs.created_at is null or f.first_at >= jobs.created_at)`;
}

/**
 * The temp tables a merge stages points and rollup rows in (per connection, emptied on commit),
 * both in one statement: each statement cost the collector's server 250-300 µs (docs/collection.md).
 * The points stage is emptied here too, for a second write in the same transaction: the merge
 * reads it without deleting its rows, which cost it a row version a point (about a tenth of the
 * merge on PGlite); a truncate costs the same whatever the stage holds.
 */
const CREATE_STAGES = sql.raw(`do $$ begin
  create temp table if not exists points_stage (series_id bigint, key bigint, ts timestamptz, step int, value float8) on commit delete rows;
  create temp table if not exists rollup_stage (computed boolean, hourly boolean, series_id bigint,
    bucket bigint, n int, min float8, max float8, sum float8, last float8) on commit delete rows;
  truncate points_stage;
end $$`);

/** The upsert's clause: a stored point changes only where the write gives another ts, step or value; the rows added or changed are returned. */
const UPSERT_POINTS = sql.raw(`on conflict (series_id, key) do update set ts = excluded.ts, step = excluded.step, value = excluded.value
      where (points.ts, points.step, points.value) is distinct from (excluded.ts, excluded.step, excluded.value)
      returning series_id, key, value`);

/** The merge's CTE `w` (the rows it added or changed: series_id, key, value): every staged point and `back` row through one upsert. */
const MERGE_ALL = sql`w as (
      insert into points (series_id, key, ts, step, value)
      select series_id, key, ts, step, value from st
      union all
      select series_id, key, ts, step, value from back
      ${UPSERT_POINTS}
    )`;

/**
 * MERGE_ALL where no other connection writes (PGlite: one connection, one statement at a time):
 * the staged points past their series' last stored key (`reach`, one index probe a series) are
 * inserted as they are, only the others (a fetch's overlap with what is stored) and `back` go
 * through the upsert. A plain insert cost half of the upsert's per point on PGlite (a
 * collector's sweep is mostly points past its last reach): the upsert probes the key before it
 * inserts and logs the insertion twice (speculative, then confirmed). No stored point is at a key
 * past the reach, and `back` gives none of the stage's keys, so both parts store what MERGE_ALL
 * stores. On PostgreSQL another writer's point at such a key would fail the insert, where the
 * upsert waits for it and merges: MERGE_ALL there.
 */
const MERGE_PAST_REACH = sql`reach as materialized (
      select d.series_id, (select max(p.key) from points p where p.series_id = d.series_id) as hi
      from (select distinct series_id from st) d
    ), wn as (
      insert into points (series_id, key, ts, step, value)
      select st.series_id, st.key, st.ts, st.step, st.value from st join reach r on r.series_id = st.series_id
      where r.hi is null or st.key > r.hi
      returning series_id, key, value
    ), wo as (
      insert into points (series_id, key, ts, step, value)
      select st.series_id, st.key, st.ts, st.step, st.value from st join reach r on r.series_id = st.series_id
      where st.key <= r.hi
      union all
      select series_id, key, ts, step, value from back
      ${UPSERT_POINTS}
    ), w as (
      select series_id, key, value from wn union all select series_id, key, value from wo
    )`;

/**
 * Bulk point upsert: COPY into a per-connection staging table, then one merge into `points`
 * (bench: the jsonb decode + upsert ran at 0.40x of COPY). Points the caller expects to be new
 * (a series never fetched before) are copied straight into `points`, and their rollup rows into
 * the rollups, under a savepoint, and fall back to the merge when one already exists (another replica got there first). Runs in the
 * caller's transaction, or in its own. Drivers without COPY use the jsonb upsert.
 */
export async function writePoints(ctx: RepoContext, points: PointBatch | readonly PointWriteRow[], opts: { expectNew?: boolean } = {}): Promise<void> {
  const rows = Array.isArray(points) ? pointBatchOfRows(points as readonly PointWriteRow[]) : (points as PointBatch);
  await writePointBatches(ctx, [rows], opts);
}

/** writePoints of several batches (of distinct series) in one COPY: a fetch's batch is built as it arrives. */
export async function writePointBatches(ctx: RepoContext, batches: readonly PointBatch[], opts: { expectNew?: boolean } = {}): Promise<void> {
  const withPoints = batches.filter((b) => b.length > 0);
  if (withPoints.length === 0) return;
  const copier = copierOf(ctx.db);
  if (!copier) {
    if (!ctx.inTransaction) return ctx.transaction((tx) => writePointBatches(tx, withPoints, opts));
    await moveBackDaysJson(ctx, withPoints);
    for (const part of chunks(withPoints.flatMap(rowsOfBatch), POINTS_PER_STATEMENT)) await upsertPointsJson(ctx, part);
    await rollUp(ctx, withPoints);
    return;
  }
  if (!ctx.inTransaction) return ctx.transaction((tx) => writePointBatches(tx, withPoints, opts));
  if (opts.expectNew) {
    // New series' hours hold nothing yet: their rollup rows, worked out from the batch, are copied
    // straight in beside the points, under the same savepoint (no statement reads them back). A
    // row already there (not new after all) fails the COPY, and the merge below does it all.
    const { timeKeyed, compacted } = await timeKeyedOf(ctx, withPoints);
    const { hours, minutes } = stagedRollups(withPoints, timeKeyed);
    // Only with the rollup rows: a series not new after all whose days were compacted has no
    // points there to collide with, but its hours' rollup rows (kept for every point written) do,
    // unless its months were compacted too (hour-rollups.ts): such a series is not new.
    const direct = !compacted && hours.computed.subarray(0, hours.length).every((c) => c === 1);
    if (direct) {
      try {
        await ctx.db.transaction(async (tx) => {
          await copierOf(tx as unknown as Db)!('points', withPoints);
          const copy = rollupCopierOf(tx as unknown as Db)!;
          await copy('points_1h', [hours]);
          await copy('points_1m', [minutes]);
        });
        return;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
  }
  await ctx.db.execute(CREATE_STAGES);
  await copier('points_stage', withPoints);
  // A point already stored as given is left as it is (no new row version, no index entry), and
  // only the hours where a point was added or changed are rolled up again: a collector's fetch
  // starts an interval before its last reach, so half of what it sends is stored already. "As
  // given" is float8 equality: a -0 sent for a stored 0 leaves the 0 (every read answers the same).
  // A series' step-keyed points (no rollups) come back as hours too; rollUp leaves them out. The
  // stage keeps its rows until the commit or the next write's CREATE_STAGES empties it.
  // A day the compactor moved to point_chunks goes back into `points` in this statement, its
  // points the batch does not give beside the batch's (the chunk row deleted): the merge rules
  // then hold as for any stored point, and a later compaction chunks the day again. (`back` reads
  // the stage as the statement found it: every part of it sees one snapshot.)
  const changed = await rowsOf<{ series_id: number; hour: number }>(
    ctx.db,
    sql`with ${moveBackDays(withPoints)}, st as materialized (
      select series_id, key, ts, step, value from points_stage
    ), ${embeddedClientOf(ctx.db) ? MERGE_PAST_REACH : MERGE_ALL}, ${APPENDED_HOURS}
    select g.series_id::float8 as series_id, g.hour::float8 as hour from g
    where not exists (select 1 from ap where ap.series_id = g.series_id and ap.hour = g.hour)`,
  );
  // Every hour the write changed was appended to (its rollups folded in above), or none changed.
  if (changed.length === 0) return;
  const hours = new Map<number, Set<number>>();
  for (const r of changed) {
    const id = Number(r.series_id);
    let held = hours.get(id);
    if (!held) hours.set(id, (held = new Set()));
    held.add(Number(r.hour));
  }
  await rollUp(ctx, withPoints, hours, { staged: true });
}

/**
 * Keeps the 1-minute and 1-hour rollups of the hours a write touched, in the write's transaction,
 * by a COPY of rows worked out in memory and one statement whatever the batch. An hour that had
 * no 1-hour row before the write held no points (every point comes through this door and rolls
 * up its hour; migration 0007 backfilled the older ones), so its rows are the batch's own: they
 * are inserted as computed here, the same sums in key order (`sum / n` is the raw avg to the last
 * digit), with no read of `points`. An hour the merge only appended to is not here: the merge
 * folded its new points into its rows (APPENDED_HOURS). Any other hour that had one (a write
 * among its points, a changed value, an hour whose raw points retention dropped) is read back
 * from `points` (one index range)
 * and both rollups' rows of it recomputed, which is what makes a re-write change nothing and a
 * changed value replace its old one. Step-keyed series (training metrics) have no time
 * buckets: the join on `series` leaves them out. `only` (series id -> hour starts): the hours the
 * merge added or changed a point in; the others' rows already hold what is stored.
 */
async function rollUp(
  ctx: RepoContext,
  batches: readonly PointBatch[],
  only?: ReadonlyMap<number, ReadonlySet<number>>,
  opts: { staged?: boolean } = {},
): Promise<void> {
  const copy = rollupCopierOf(ctx.db);
  if (!copy) return rollUpByRecompute(ctx, batches);
  // `staged`: the caller created the stages in this transaction already (CREATE_STAGES).
  if (!opts.staged) await ctx.db.execute(CREATE_STAGES);
  const { hours, minutes } = stagedRollups(batches);
  if (only) {
    // A minute's row goes with its hour.
    hours.retain((id, bucket) => only.get(id)?.has(bucket) ?? false);
    minutes.retain((id, bucket) => only.get(id)?.has(bucketOf(bucket, HOUR_MS)) ?? false);
  }
  await copy('rollup_stage', [hours, minutes]);
  await ctx.db.execute(sql`
    with st as materialized (
      delete from rollup_stage returning computed, hourly, series_id, bucket, n, min, max, sum, last
    ), t as materialized (
      select st.* from st join series s on s.id = st.series_id and s.keyed_by = 'time'
    ), ${HOUR_CHUNKS_OF_T}, fresh as (
      -- Hours without a row before this write, in points_1h or a compacted month (hour-rollups.ts):
      -- the batch's rows are theirs.
      insert into points_1h (series_id, bucket, n, min, max, sum, last)
      select series_id, bucket, n, min, max, sum, last from t where t.hourly and t.computed and ${FRESH_HOUR}
      on conflict (series_id, bucket) do nothing
      returning series_id, bucket
    ), fm as (
      insert into points_1m (series_id, bucket, n, min, max, sum, last)
      select t.series_id, t.bucket, t.n, t.min, t.max, t.sum, t.last
      from t join fresh f on f.series_id = t.series_id and f.bucket = t.bucket - ((t.bucket % 3600000) + 3600000) % 3600000
      where not t.hourly
      on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last
    ), h as materialized (
      -- distinct: a series given in several runs stages an hour once a run.
      select distinct t.series_id, t.bucket as hour from t
      where t.hourly and not exists (select 1 from fresh f where f.series_id = t.series_id and f.bucket = t.bucket)
    ), ${RECOMPUTE_HOURS}`);
}

/**
 * The rollup rows of a write's batches, as rollUp stages them: for each touched hour of a series
 * its 1-hour row and its minutes' rows, computed as the SQL aggregates do (ROLLUP_AGGREGATES:
 * non-null values counted, min and max as float8smaller and float8larger pick, sum added in key
 * order from the first value, the last non-null value). Where the batch alone cannot give the
 * stored answer the hour is staged to be recomputed instead (its row `computed` 0, no minutes):
 * a series given in several runs or twice at one key (the merge decides which point is stored;
 * a run's rows are otherwise taken in key order, whatever order they came in), or a sum that
 * overflows (the recompute raises PostgreSQL's own error). `timeKeyed`, where given, leaves out
 * the other series.
 */
export function stagedRollups(batches: readonly PointBatch[], timeKeyed?: ReadonlySet<number>): { hours: RollupRows; minutes: RollupRows } {
  const runsOf = new Map<number, number>();
  let total = 0;
  for (const b of batches) {
    total += b.length;
    for (const run of b.runs) runsOf.set(run.seriesId, (runsOf.get(run.seriesId) ?? 0) + 1);
  }
  const hours = new RollupRows(true, total);
  const minutes = new RollupRows(false, total);
  const add = (r: RollupRows, i: number, v: number) => {
    if (++r.n[i]! === 1) {
      r.min[i] = r.max[i] = r.sum[i] = v;
    } else {
      r.min[i] = r.min[i]! < v ? r.min[i]! : v;
      r.max[i] = r.max[i]! > v ? r.max[i]! : v;
      r.sum[i]! += v;
    }
    r.last[i] = v;
  };
  for (const b of batches) {
    for (const run of b.runs) {
      if (timeKeyed && !timeKeyed.has(run.seriesId)) continue;
      // The run's rows in key order: as given, reversed (rows given newest first), or sorted.
      let order: Uint32Array | null = null;
      for (let i = run.start + 1; !order && i < run.end; i++) {
        if (b.key[i]! > b.key[i - 1]!) continue;
        order = Uint32Array.from({ length: run.end - run.start }, (_, j) => run.end - 1 - j);
        for (let j = 1; j < order.length; j++) {
          if (b.key[order[j]!]! > b.key[order[j - 1]!]!) continue;
          order.sort((x, y) => b.key[x]! - b.key[y]!);
          break;
        }
      }
      let rising = runsOf.get(run.seriesId) === 1;
      for (let j = 1; order && rising && j < order.length; j++) rising = b.key[order[j]!]! > b.key[order[j - 1]!]!;
      let hour = -1;
      let firstMinute = 0;
      let minute = -1;
      const close = () => {
        if (hour < 0) return;
        let exact = rising && !(Math.abs(hours.sum[hour]!) === Infinity);
        for (let m = firstMinute; exact && m < minutes.length; m++) exact = !(Math.abs(minutes.sum[m]!) === Infinity);
        if (exact) return;
        minutes.length = firstMinute;
        hours.length = hour;
        hours.open(run.seriesId, hours.bucket[hour]!);
        hours.computed[hour] = 0;
      };
      for (let j = run.start; j < run.end; j++) {
        const i = order ? order[j - run.start]! : j;
        const k = b.key[i]!;
        const v = b.value[i]!;
        const h = bucketOf(k, HOUR_MS);
        if (hour < 0 || hours.bucket[hour] !== h) {
          close();
          hour = hours.open(run.seriesId, h);
          firstMinute = minutes.length;
          minute = -1;
        }
        const m = bucketOf(k, MINUTE_MS);
        if (minute < 0 || minutes.bucket[minute] !== m) minute = minutes.open(run.seriesId, m);
        if (Number.isNaN(v)) continue;
        add(hours, hour, v);
        add(minutes, minute, v);
      }
      close();
    }
  }
  return { hours, minutes };
}

/**
 * The time-keyed series among a write's (the ones with rollups), and whether any of them has a
 * compacted month of the 1-hour rollup (then it is not new, whatever the caller expected), one statement.
 */
async function timeKeyedOf(ctx: RepoContext, batches: readonly PointBatch[]): Promise<{ timeKeyed: Set<number>; compacted: boolean }> {
  const ids = [...new Set(batches.flatMap((b) => b.runs.map((r) => r.seriesId)))];
  const rows = await rowsOf<{ id: number; compacted: boolean }>(
    ctx.db,
    sql`select id::float8 as id, exists (select 1 from rollup_chunks_1h c where c.series_id = series.id) as compacted from series
        where keyed_by = 'time' and id = any(array(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::bigint))`,
  );
  return { timeKeyed: new Set(rows.map((r) => Number(r.id))), compacted: rows.some((r) => r.compacted === true || String(r.compacted) === 't') };
}

/** rollUp where the driver has no COPY: every touched hour recomputed from `points`, one statement. */
async function rollUpByRecompute(ctx: RepoContext, batches: readonly PointBatch[]): Promise<void> {
  const touched: number[][] = [];
  for (const b of batches) {
    for (const run of b.runs) {
      let last = Number.NaN;
      for (let i = run.start; i < run.end; i++) {
        const hour = bucketOf(b.key[i]!, HOUR_MS);
        if (hour !== last) touched.push([run.seriesId, (last = hour)]);
      }
    }
  }
  await ctx.db.execute(sql`
    with h as materialized (
      select distinct s.id as series_id, (r->>1)::bigint as hour
      from jsonb_array_elements(${JSON.stringify(touched)}::jsonb) as r
      join series s on s.id = (r->>0)::bigint and s.keyed_by = 'time'
    ), ${RECOMPUTE_HOURS}`);
}

/**
 * Retention of raw points, one batch: the points before `before` (epoch ms) of the next `batch`
 * time-keyed series of a provider that have any (ids above `after`, in id order) are deleted, and those series
 * that lost any remember the cut (`raw_before`, never moved back). One statement, its own
 * transaction: each batch is a few index ranges of the primary key (series, key < before), so
 * no statement scans the table or holds its row locks for long, and vacuum can reclaim a batch's
 * rows while the next runs. The rollups are kept (they were kept on write). `keepFinishedSince`
 * (epoch ms; null: none kept): the series of jobs that finished after it are left out, whatever
 * their age (collect.finishedJobRawRetentionDays). Returns the last series id of the batch (null:
 * no series left) and the points deleted.
 */
export async function dropRawPointsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
  keepFinishedSince: number | null = null,
): Promise<{ last: number | null; deleted: number }> {
  const [row] = await rowsOf<{ last: number | string | null; deleted: number | string }>(
    ctx.db,
    sql`
    with s as materialized (
      -- Series with raw points before the cut: one index probe each for the rest (a finished
      -- job's series, dropped long ago, costs that and no statement of its own).
      select s.id from series s join jobs j on j.id = s.job_id
      where j.provider_id = ${providerId} and s.keyed_by = 'time' and s.id > ${after}
        and ${notKeptFinished(keepFinishedSince)}
        and exists (select 1 from points x where x.series_id = s.id and x.key < ${before})
      order by s.id limit ${batch}
    ), d as (
      -- By the batch's key ranges (rangeRowsWhere): as a join of s, planned for 100 series, it scanned the table.
      delete from points m where ${rangeRowsWhere('points', 'key', '(select s.id as series_id from s)', null, sql`${before}::bigint`)}
      returning m.series_id
    ), u as (
      update series set raw_before = greatest(coalesce(raw_before, ${before}), ${before})
      where id in (select distinct series_id from d) returning 1
    )
    select (select max(id) from s)::float8 as last, (select count(*) from d)::float8 as deleted, (select count(*) from u) as marked`,
  );
  return { last: row?.last == null ? null : Number(row.last), deleted: Number(row?.deleted ?? 0) };
}

/**
 * Autoanalyze's part where nothing else plays it. PGlite has no autovacuum, so its planner never
 * learns how many points and series there are and plans the warm reads for empty tables (the
 * fleet statement re-ran a per-series aggregate 640 times). Called after a points write
 * commits: once the points written since the last ANALYZE pass autovacuum's own rule (50 rows
 * plus 10% of the table), with a floor of ANALYZE_AFTER_POINTS so that small writes never pay
 * for it, `analyze points, series` runs. It is maintenance, as autovacuum is on PostgreSQL (where
 * this does nothing): sent on PGlite's own client, outside drizzle, so it is not one of the
 * statements a request's work is counted in (test/store/batching.test.ts).
 */
export async function maintainStatistics(ctx: RepoContext, pointsWritten: number): Promise<boolean> {
  const client = embeddedClientOf(ctx.db);
  if (!client || ctx.inTransaction) return false;
  ctx.state.pointsSinceAnalyze += pointsWritten;
  const due = Math.max(ANALYZE_AFTER_POINTS, 50 + 0.1 * ctx.state.pointsAtAnalyze);
  if (ctx.state.pointsSinceAnalyze < due) return false;
  ctx.state.pointsSinceAnalyze = 0;
  await client.query('analyze points, series');
  const counted = (await client.query(`select reltuples::float8 as n from pg_class where relname = 'points'`)) as { rows: { n: number }[] };
  ctx.state.pointsAtAnalyze = Math.max(0, counted.rows[0]?.n ?? 0);
  return true;
}

/** The row tables compaction and retention delete from: what vacuumDeadRows looks at. */
export type VacuumedTable = 'points' | 'points_1m' | 'points_1h';

/**
 * Autovacuum's other part where nothing else plays it. PGlite has no autovacuum, so the rows
 * compaction moves out of `points` (and the rollups' rows into their chunks) and the rows retention
 * deletes stayed dead in their pages for good: the table never reused them (a compacted store
 * grew as an uncompacted one did), and a plan that looks up an index's extremes walked them (the
 * compaction's own pick of a batch: 76-95 ms to plan over 1,000 compacted series). Called after
 * such a chore: each of `tables` whose dead rows pass autovacuum's own rule (50 rows plus 20% of
 * its live rows, as PostgreSQL's defaults) is vacuumed. On PostgreSQL it does nothing
 * (autovacuum does it). Returns the tables vacuumed.
 */
export async function vacuumDeadRows(ctx: RepoContext, tables: readonly VacuumedTable[]): Promise<VacuumedTable[]> {
  const client = embeddedClientOf(ctx.db);
  if (!client || ctx.inTransaction || tables.length === 0) return [];
  // The statistics of this backend's last statements are flushed at most once a second: forced
  // now, they count the rows the chore just deleted.
  await client.query('select pg_stat_force_next_flush()');
  const counted = (await client.query(
    `select relname, n_live_tup::float8 as live, n_dead_tup::float8 as dead from pg_stat_user_tables where relname in (${tables.map((t) => `'${t}'`).join(', ')})`,
  )) as { rows: { relname: VacuumedTable; live: number; dead: number }[] };
  const due = counted.rows.filter((r) => r.dead > 50 + 0.2 * r.live).map((r) => r.relname);
  // Vacuum only: ANALYZE stays where it was (maintainStatistics for `points`, the chores' own
  // analyzeRollupChunks and analyzeHourRollupChunks after this for the rollups' rows).
  for (const table of due) await client.query(`vacuum ${table}`);
  return due;
}

/** moveBackDays where the driver has no COPY (no stage): the batches' compacted days back into `points`, one statement. */
async function moveBackDaysJson(ctx: RepoContext, batches: readonly PointBatch[]): Promise<void> {
  await ctx.db.execute(sql`
    with ${takeChunkDays(daysOf(batches))}
    insert into points (series_id, key, ts, step, value)
    select c.series_id, k.key, ${keyInstant('k.key')}, k.step, k.value from mv c cross join lateral ${DECODED_CHUNK}
    on conflict (series_id, key) do nothing`);
}

async function upsertPointsJson(ctx: RepoContext, part: readonly PointWriteRow[]) {
  await ctx.db.execute(sql`
    insert into points (series_id, key, ts, step, value)
    select (r->>0)::bigint, (r->>1)::bigint, to_timestamp((r->>2)::float8 / 1000), (r->>3)::int, (r->>4)::float8
    from jsonb_array_elements(${JSON.stringify(part)}::jsonb) as r
    on conflict (series_id, key) do update set ts = excluded.ts, step = excluded.step, value = excluded.value`);
}

/** A batch's rows one by one (the jsonb upsert of drivers without COPY). */
function rowsOfBatch(b: PointBatch): PointWriteRow[] {
  const out: PointWriteRow[] = [];
  const num = (x: number) => (Number.isNaN(x) ? null : x);
  for (const run of b.runs) for (let i = run.start; i < run.end; i++) out.push([run.seriesId, b.key[i]!, num(b.ts[i]!), num(b.step[i]!), num(b.value[i]!)]);
  return out;
}
