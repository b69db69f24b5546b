// Reads across jobs' metrics: several jobs on one grid (comparisons), the latest accelerator
// readings of running jobs and their series in a window (scrapes), and raw points for PromQL.
import { sql } from 'drizzle-orm';
import type { RepoContext } from './repo-context.js';
import { aggregateSql } from './repo-point-reads.js';
import type { AccelSeriesQuery, AccelSeriesRow, ComparisonQuery, ComparisonRow, LatestReadingRow, LatestReadingsQuery } from './repo-types.js';
import { textArray, toDate } from './sql-util.js';
import { edgeRawPoint, rawPoints } from './raw-points.js';

/**
 * For a system series `s`: it reads the job's own devices, at the finest scope the job has for
 * that metric (per GPU where there are GPU series, else per node, else the job), never a whole
 * node's or host's readings (meta nodeWide / hostWide). What "a job's GPU utilization" means when
 * runs are compared or scraped: its GPUs, not GPUs and their node aggregates mixed.
 */
const OWN_DEVICES_AT_FINEST_SCOPE = sql.raw(`not coalesce((s.meta->>'nodeWide')::boolean, false) and not coalesce((s.meta->>'hostWide')::boolean, false)
  and s.scope = (select case when bool_or(s2.scope = 'GPU') then 'GPU' when bool_or(s2.scope = 'NODE') then 'NODE' else 'JOB' end
    from series s2 where s2.job_id = s.job_id and s2.kind = 'system' and s2.name = s.name
      and not coalesce((s2.meta->>'nodeWide')::boolean, false) and not coalesce((s2.meta->>'hostWide')::boolean, false))`);

/**
 * Several jobs' metrics on one shared grid, in one statement: the points of the selected series
 * (training series by name; system series by name, the job's own devices at their finest scope,
 * node- and host-wide readings left out) are placed on one axis (step, epoch ms, or seconds since
 * each job's start), the axis' whole range is cut into `buckets` equal-width buckets, and each
 * (job, metric, bucket) is aggregated. A bucket's x is its first point's x across all runs, so a
 * sparse step axis keeps the real steps.
 */
export async function comparePoints(ctx: RepoContext, q: ComparisonQuery): Promise<ComparisonRow[]> {
  if (q.jobIds.length === 0 || (q.training.length === 0 && q.system.length === 0)) return [];
  const x =
    q.axis === 'STEP'
      ? sql`p.step::float8`
      : q.axis === 'TIME'
        ? sql`extract(epoch from p.ts)::float8 * 1000`
        : sql`extract(epoch from (p.ts - coalesce(j.started_at, j.created_at)))::float8`;
  const agg = aggregateSql(q.aggregation, 'value', 'x');
  const rows = await ctx.rows<ComparisonRow>(
    sql`
    with sel as (
      select s.id, s.job_id, s.kind, s.name, s.unit from series s
      where s.job_id = any(${textArray(q.jobIds)})
        and ((s.kind = 'training' and s.name = any(${textArray(q.training)}))
          or (s.kind = 'system' and s.name = any(${textArray(q.system)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}))
    ),
    pts as (
      select sel.job_id, sel.kind, sel.name, sel.unit, ${x} as x, p.value
      from sel cross join lateral ${rawPoints(sql`sel.id`)} p join jobs j on j.id = sel.job_id
      where p.value is not null and p.value <> 'NaN'::float8
        and (${q.from?.toISOString() ?? null}::timestamptz is null or p.ts >= ${q.from?.toISOString() ?? null}::timestamptz)
        and (${q.to?.toISOString() ?? null}::timestamptz is null or p.ts <= ${q.to?.toISOString() ?? null}::timestamptz)
    ),
    placed as (select * from pts where x is not null),
    bounds as (select min(x) as lo, max(x) as hi from placed),
    bk as (
      select p.job_id, p.kind, p.name, p.unit, p.x, p.value,
        least(width_bucket(p.x, b.lo, case when b.hi > b.lo then b.hi else b.lo + 1 end, ${q.buckets}::int), ${q.buckets}::int) as bucket
      from placed p cross join bounds b
    )
    select job_id as "jobId", kind, name, min(unit) as unit, bucket::int as bucket,
      min(min(x)) over (partition by bucket) as x, ${agg}::float8 as value, count(*)::int as points
    from bk group by job_id, kind, name, bucket
    order by bucket, job_id, kind, name`,
  );
  return rows.map((r) => ({ ...r, x: Number(r.x), value: r.value === null ? null : Number(r.value), bucket: Number(r.bucket), points: Number(r.points) }));
}

/**
 * The latest reading of each accelerator series of every RUNNING job, in one statement: the
 * job's own devices at their finest scope (per GPU where the platform has it, else per node;
 * node- and host-wide readings left out), with the labels a scrape needs. Readings older than
 * `since` are counted, not returned; at most `limit` + 1 rows (the extra one says there are more).
 */
export async function latestReadings(ctx: RepoContext, q: LatestReadingsQuery) {
  const rows = await ctx.rows<LatestReadingRow & { stale_count: number | string }>(
    sql`
    with sel as (
      select s.id, s.job_id, s.name, s.scope, s.node_id, s.gpu_id from series s join jobs j on j.id = s.job_id
      where j.status = 'RUNNING' and j.provider_id = any(${textArray(q.providerIds)})
        and (${q.projectIds === null} or j.project_id = any(${textArray(q.projectIds ?? [])}))
        and s.kind = 'system' and s.name = any(${textArray(q.names)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}
    ),
    latest as (
      select sel.*, p.ts, p.value from sel
      join lateral (select x.ts, x.value from ${edgeRawPoint(sql`sel.id`, 'last', { where: sql`p.value is not null` })} x) p on true
    ),
    counts as (select count(*) filter (where ts < ${q.since.toISOString()}::timestamptz) as stale_count from latest)
    select c.stale_count, r.* from counts c left join lateral (
      select f.name, f.scope, j.provider_id as "providerId", j.id as "jobId", j.name as "jobName", pr.name as "projectName",
        n.name as "nodeName", g.idx as "gpuIndex", coalesce(g.model, j.gpu_type) as model, j.accelerator_kind as "acceleratorKind",
        f.ts, f.value
      from latest f join jobs j on j.id = f.job_id left join projects pr on pr.id = j.project_id
        left join nodes n on n.id = f.node_id left join gpus g on g.id = f.gpu_id
      where f.ts >= ${q.since.toISOString()}::timestamptz
      order by j.provider_id, j.id, n.name nulls first, g.idx nulls first, f.name
      limit ${q.limit + 1}) r on true`,
  );
  return {
    // With nothing fresh, the one row carries only the count.
    rows: rows
      .filter((r) => r.name !== null)
      .map(({ stale_count: _s, ...r }) => ({ ...r, ts: toDate(r.ts)!, value: Number(r.value), gpuIndex: r.gpuIndex === null ? null : Number(r.gpuIndex) })),
    stale: Number(rows[0]?.stale_count ?? 0),
  };
}

/**
 * The accelerator series of any job (any status: the whole history) of these providers and
 * projects with at least one point in [from, to], labelled as latestReadings labels them, each
 * with its point count in the window (what reading them would cost), in one statement; at most
 * `limit` + 1 rows (the extra one says there are more).
 */
export async function accelSeriesInWindow(ctx: RepoContext, q: AccelSeriesQuery): Promise<AccelSeriesRow[]> {
  const from = q.from.getTime();
  const to = q.to.getTime();
  const rows = await ctx.rows<AccelSeriesRow>(
    sql`
    with sel as (
      select s.id, s.job_id, s.name, s.scope, s.node_id, s.gpu_id,
        ${
          q.countPoints === false
            ? sql`(exists (select 1 from ${rawPoints(sql`s.id`, sql`${from}::bigint`, sql`${to}::bigint`)} x where x.value is not null))::int`
            : sql`(select count(*) from ${rawPoints(sql`s.id`, sql`${from}::bigint`, sql`${to}::bigint`)} x where x.value is not null)`
        } as n
      from series s join jobs j on j.id = s.job_id
      where j.provider_id = any(${textArray(q.providerIds)})
        and (${q.projectIds === null} or j.project_id = any(${textArray(q.projectIds ?? [])}))
        and s.kind = 'system' and s.keyed_by = 'time' and s.name = any(${textArray(q.names)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}
    )
    select f.id as "seriesId", f.n as "points", f.name, f.scope, j.provider_id as "providerId", j.id as "jobId", j.name as "jobName",
      pr.name as "projectName", n.name as "nodeName", g.idx as "gpuIndex", coalesce(g.model, j.gpu_type) as model,
      j.accelerator_kind as "acceleratorKind"
    from sel f join jobs j on j.id = f.job_id left join projects pr on pr.id = j.project_id
      left join nodes n on n.id = f.node_id left join gpus g on g.id = f.gpu_id
    where f.n > 0
    order by f.id
    limit ${q.limit + 1}`,
  );
  return rows.map((r) => ({
    ...r,
    seriesId: Number(r.seriesId),
    points: Number(r.points),
    gpuIndex: r.gpuIndex === null ? null : Number(r.gpuIndex),
  }));
}

/** Every non-null point of these time-keyed series in [from, to] (ms), as two arrays per series in time order, in one statement. */
export async function rawPointsInWindow(
  ctx: RepoContext,
  seriesIds: readonly number[],
  from: Date,
  to: Date,
): Promise<{ seriesId: number; ts: number[]; values: number[] }[]> {
  if (seriesIds.length === 0) return [];
  const rows = await ctx.rows<{ seriesId: number | string; ts: (number | string)[]; values: (number | string)[] }>(
    sql`select x.series_id as "seriesId", array_agg(x.key::float8 order by x.key) as ts, array_agg(x.value order by x.key) as values
      from unnest(array(select jsonb_array_elements_text(${JSON.stringify(seriesIds)}::jsonb)::bigint)) as s(id)
        cross join lateral ${rawPoints(sql`s.id`, sql`${from.getTime()}::bigint`, sql`${to.getTime()}::bigint`)} x
      where x.value is not null
      group by x.series_id`,
  );
  return rows.map((r) => ({ seriesId: Number(r.seriesId), ts: r.ts.map(Number), values: r.values.map(Number) }));
}

/**
 * The Prometheus query API's read (src/promql): every non-null point of these time-keyed series
 * in [from, to] (ms), in time order, in one statement that reads each series along its primary
 * key (no sort of the whole window, unlike rawPointsInWindow's GROUP BY) and stops sending once
 * `maxPoints` are sent: the series that crosses the limit is the last one, and `total` says how
 * many points the sent series hold. Keys and values travel as the 8-byte floats they are
 * (float8send, one hex string per series and column): printing and parsing 2.9 M numbers as text
 * arrays took over twice as long (bench/promql.ts reads 1.44 M points per query), and the bits
 * arrive as stored. Hex text, not bytea: PGlite decodes a bytea result in JavaScript, three times
 * slower than Buffer's hex decoder (1.44 M points: 9-16 s against 3-5 s).
 */
export async function promPointsInWindow(
  ctx: RepoContext,
  seriesIds: readonly number[],
  from: number,
  to: number,
  maxPoints: number,
): Promise<{ series: { seriesId: number; ts: Float64Array; values: Float64Array }[]; total: number }> {
  if (seriesIds.length === 0) return { series: [], total: 0 };
  const rows = await ctx.rows<{ seriesId: number | string; ts: string | null; values: string | null; total: number | string }>(
    sql`select q."seriesId", encode(q.ts, 'hex') as ts, encode(q.values, 'hex') as values, q.total from (
        select s.id as "seriesId", a.ts, a.values, a.n, sum(a.n) over (order by s.ord) as total
        from unnest(array(select jsonb_array_elements_text(${JSON.stringify(seriesIds)}::jsonb)::bigint)) with ordinality as s(id, ord)
        cross join lateral (
          select string_agg(float8send(p.key::float8), ''::bytea) as ts, string_agg(float8send(p.value), ''::bytea) as values, count(*) as n
          from (select x.key, x.value from ${rawPoints(sql`s.id`, sql`${from}::bigint`, sql`${to}::bigint`)} x where x.value is not null order by x.key) p
        ) a
      ) q
      where q.total - q.n <= ${maxPoints}
      order by q.total`,
  );
  let total = 0;
  const series = rows.map((r) => {
    total = Math.max(total, Number(r.total));
    return { seriesId: Number(r.seriesId), ...inKeyOrder(float8s(r.ts), float8s(r.values)) };
  });
  return { series, total };
}

/** Big-endian 8-byte floats (what float8send writes), in hex, as numbers. */
function float8s(hex: string | null): Float64Array {
  if (!hex) return new Float64Array(0);
  const bytes = Buffer.from(hex, 'hex');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float64Array(bytes.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8);
  return out;
}

/**
 * The points in key order. string_agg keeps its ordered subquery's order (PostgreSQL does, though
 * SQL does not promise it; an ORDER BY inside the aggregate would sort every series again): checked
 * here in one pass, and sorted in the rare case it is not so.
 */
function inKeyOrder(ts: Float64Array, values: Float64Array): { ts: Float64Array; values: Float64Array } {
  let sorted = true;
  for (let i = 1; i < ts.length && sorted; i++) sorted = ts[i - 1]! <= ts[i]!;
  if (sorted) return { ts, values };
  const order = Array.from(ts.keys()).sort((a, b) => ts[a]! - ts[b]!);
  return { ts: Float64Array.from(order, (i) => ts[i]!), values: Float64Array.from(order, (i) => values[i]!) };
}
