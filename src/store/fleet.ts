// Fleet questions over the cached GPU utilization of many jobs: idle GPUs, GPU-hours allocated
// vs used, jobs ranked by waste. The needed ranges are first fetched through the read-through
// path; the arithmetic then runs in SQL over the points (window functions, gaps-and-islands), so
// no point travels to Node and each question is one statement whatever the fleet's size.
//
// Semantics (the schema docs repeat them):
// - A job's window is [from, to] clipped to its life (start, or creation; end, or now). PENDING
//   jobs hold no GPUs and are left out.
// - Accelerators: GPUs and NPUs alike (GPU_UTILIZATION or NPU_UTILIZATION series; gpu_count counts
//   either, jobs.accelerator_kind says which).
// - Series: per (job, node), the per-GPU GPU_UTILIZATION series where the platform has them; else
//   the node's NODE-scope aggregate, which stands for all of the node's GPUs; else (no GPU or node
//   series at all) a JOB-scope aggregate for all of the job's GPUs.
// - A point's value holds from its timestamp until the next point, as long as that gap is at most
//   MAX_GAP_STEPS x the series' step (the median spacing of its points in the window); across a
//   longer gap, and after the last point, it holds for one step. Null points hold nothing. Only
//   points inside the window count, and holding stops at the window's end. Time no point holds is
//   "no data".
// - Weights: a GPU series counts for 1 GPU; a node aggregate for the node's GPUs (from the cached
//   topology, or the job's GPU count split evenly over its node series when the topology is not
//   known); a job aggregate for the job's GPU count.
import { and, ne, sql, type SQL } from 'drizzle-orm';
import { DomainError } from '../domain/errors.js';
import { issueReadFor, type Db } from './db.js';
import type { RequestScope } from '../domain/request-scope.js';
import { isTerminal, jobWindow, type Freshness, type ReadThrough } from './read-through.js';
import { jobFilterConditions, type JobFilter } from './job-filter.js';
import type { JobRow } from './repository.js';
import { readRowsFor, textArray } from './sql-util.js';
import * as t from './tables.js';
import { seriesIntervalsSql, seriesOfWindowsSql, seriesUsageSql } from './utilization-sql.js';

export { MAX_GAP_STEPS, seriesIntervalsSql } from './utilization-sql.js';

/**
 * The utilization the fleet questions read: an accelerator is an accelerator, so Ascend NPUs
 * (ModelArts' npuUtil) count beside GPUs; a job's acceleratorKind tells which it holds.
 */
export const ACCELERATOR_UTILIZATION = ['GPU_UTILIZATION', 'NPU_UTILIZATION'] as const;

export interface FleetJobWindow {
  jobId: string;
  from: Date;
  to: Date;
  /** The step asked of upstream for this window: the series' step when it has too few points to tell. */
  stepSeconds: number;
}

export interface IdleRunRow {
  seriesId: number;
  jobId: string;
  nodeId: string | null;
  gpuId: string | null;
  scope: 'GPU' | 'NODE' | 'JOB';
  /** GPUs the series stands for. */
  gpus: number;
  from: Date;
  to: Date;
  avgUtilization: number;
  maxUtilization: number;
}

export interface GpuHoursRow {
  /** 'label' rows are made from the job rows (Fleet.utilization.byLabel; key: JSON [label key, value, present]). */
  kind: 'job' | 'provider' | 'project' | 'model' | 'owner' | 'label' | 'total';
  /** Job id, provider id, project id, GPU model or owner ("" for jobs whose platform names none); null for the total. */
  key: string | null;
  jobs: number;
  allocatedGpuHours: number;
  coveredGpuHours: number;
  usedGpuHours: number;
  /** A job row's nodes in the cached topology (what a CPU-only job is billed by); 0 on group rows. */
  nodes?: number;
}

/** Providers whose CPU-only jobs count in the groups (billed per node-hour: nodeBilledProviders); none when absent. */
export type NodeBilled = readonly string[] | '*';

const MS_PER_HOUR = 3_600_000;

export interface PreparedFleet {
  /** The effective window: `to` is capped at now. */
  from: Date;
  to: Date;
  jobs: JobRow[];
  windows: FleetJobWindow[];
  /** Jobs whose utilization could not be refreshed: answered from what is cached (stale) or not at all. */
  problems: { job: JobRow; stale: boolean; code: string; message: string }[];
}

/**
 * Makes sure the GPU utilization of every matching job is cached for its part of [from, to],
 * through the normal read-through path (one batched ensureMetrics, at the resolution a default
 * chart of the same window asks for, so the two share fetches), plus the topology of jobs whose
 * nodes are still unknown (node aggregates count for their node's GPUs; CPU-only jobs of
 * `nodeBilled` providers are billed by their nodes).
 */
export async function prepareFleet(
  readThrough: ReadThrough,
  filter: JobFilter,
  from: Date,
  to: Date,
  maxPoints: number,
  scope?: RequestScope,
  nodeBilled: NodeBilled = [],
): Promise<PreparedFleet> {
  const now = readThrough.now();
  const end = to < now ? to : now;
  const store = new FleetStore(readThrough.repo.db, scope);
  const all = await store.jobsInWindow(filter, from, end, now);
  // A finished job whose end the platform never reported (Baseten has no finish time) would count
  // GPUs held until now: it is left out and named as a problem instead of a wrong number.
  const unknownEnd = all.filter((j) => isTerminal(j.status) && !j.finishedAt);
  const candidates = all.filter((j) => !unknownEnd.includes(j));
  const requests = candidates
    .map((job) => ({ job, ...jobWindow(job, now, from, end) }))
    .filter((r) => r.to > r.from)
    .map((r) => ({ ...r, metrics: ACCELERATOR_UTILIZATION, maxPoints }));
  const freshness: (Freshness | Error)[] = requests.length ? await readThrough.ensureMetrics(requests, { scope }) : [];
  // Metrics fetches teach some platforms their topology (and GPU counts): read the rows again.
  const jobs = await readThrough.repo.within(scope).jobsByIds(requests.map((r) => r.job.id));
  const withoutTopology = jobs.filter((j) => !j.topologyFetchedAt);
  if (withoutTopology.length) {
    const needed = new Set(await store.jobsWithNodeAggregates(withoutTopology.map((j) => j.id)));
    // A CPU-only job billed per node-hour is billed by its nodes: it needs them too (as Job.cost does).
    const billedCpu = (j: JobRow) => !j.gpuCount && (nodeBilled === '*' || nodeBilled.includes(j.providerId));
    const due = withoutTopology.filter((j) => needed.has(j.id) || billedCpu(j));
    if (due.length) await readThrough.ensureTopology(due, { scope });
  }
  const problems: PreparedFleet['problems'] = unknownEnd.map((job) => ({
    job,
    stale: false,
    code: 'UNKNOWN_END',
    message: `job ${job.id} finished but its platform does not say when: its GPU-hours cannot be counted`,
  }));
  requests.forEach((r, i) => {
    const f = freshness[i]!;
    if (f instanceof Error) {
      problems.push({ job: r.job, stale: false, code: f instanceof DomainError ? f.code : 'INTERNAL', message: f.message });
    } else if (f.error) {
      problems.push({ job: r.job, stale: true, code: f.error.code, message: f.error.message });
    }
  });
  return {
    from,
    to: end,
    jobs,
    windows: requests.map((r) => ({ jobId: r.job.id, from: r.from, to: r.to, stepSeconds: readThrough.stepFor(r, maxPoints) })),
    problems,
  };
}

export class FleetStore {
  constructor(
    private readonly db: Db,
    /** The operation it reads for: its statements are cancelled when it is abandoned (store/db.ts). */
    private readonly scope?: RequestScope,
  ) {}

  private rows<T>(query: SQL): Promise<T[]> {
    return readRowsFor<T>(this.scope, this.db, query);
  }

  /** Jobs matching the filter whose life overlaps [from, to] and that hold GPUs (not PENDING). */
  async jobsInWindow(filter: JobFilter, from: Date, to: Date, now: Date): Promise<JobRow[]> {
    const cond: SQL[] = [ne(t.jobs.status, 'PENDING'), ...jobFilterConditions(filter)];
    const [fromAt, toAt, nowAt] = [from, to, now].map((d) => sql`${d.toISOString()}::timestamptz`);
    cond.push(sql`coalesce(${t.jobs.startedAt}, ${t.jobs.createdAt}) < ${toAt}`);
    cond.push(sql`coalesce(${t.jobs.finishedAt}, ${nowAt}) > ${fromAt}`);
    return issueReadFor(this.scope, () =>
      this.db
        .select()
        .from(t.jobs)
        .where(and(...cond))
        .orderBy(t.jobs.id)
        .execute(),
    );
  }

  /** Of these jobs, those with node-scope GPU utilization: their weights need the node's GPUs. */
  async jobsWithNodeAggregates(jobIds: readonly string[]): Promise<string[]> {
    const rows = await this.rows<{ job_id: string }>(
      sql`select distinct job_id from series where job_id = any(${textArray(jobIds)}) and kind = 'system'
        and name in ('GPU_UTILIZATION', 'NPU_UTILIZATION') and scope = 'NODE'`,
    );
    return rows.map((r) => r.job_id);
  }

  /**
   * Idle runs: maximal stretches where a series' value stayed under `threshold`, unbroken by a
   * hole or a null, lasting at least `minSeconds`. Only the `first` series with the most idle
   * GPU-hours are answered (all their runs), most idle first.
   */
  async idleRuns(windows: readonly FleetJobWindow[], threshold: number, minSeconds: number, first: number): Promise<IdleRunRow[]> {
    if (windows.length === 0 || first === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(
      sql`
      with ${selectedSeriesSql(windows)},
      -- Gaps and islands inside each series' own lateral pass: its intervals come in time order
      -- from the points index, so no sort or window ever spans the fleet's ~10^6 intervals (one
      -- such pass sorted them all to disk, and each later window re-sorted them).
      runs as materialized (
        select sel.series_id, sel.job_id, sel.node_id, sel.gpu_id, sel.scope, sel.gpus, r.r0, r.r1, r.avg_util, r.max_util
        from sel cross join lateral (
          with ${seriesIntervalsSql()},
          flagged as (
            select t0, t1, value, value < ${threshold} as idle,
              case when lag(value < ${threshold}) over w and lag(t1) over w = t0 then 0 else 1 end as starts
            from iv window w as (order by t0)
          ), grouped as (
            -- numbered over the idle intervals only (a run is unbroken idle, so starts decide alone):
            -- the busy majority skips the second window pass
            select *, sum(starts) over (order by t0 rows unbounded preceding) as grp from flagged where idle
          )
          select min(t0) as r0, max(t1) as r1, sum((t1 - t0) * value) / sum(t1 - t0) as avg_util, max(value) as max_util
          from grouped group by grp
          having max(t1) - min(t0) >= ${minSeconds * 1000}
        ) r
      ), ranked as (
        -- windows, not joins: the planner takes runs for a row or two, and its nested loops back to
        -- sel and to the series' totals cost runs x series where many GPUs idle
        select *, dense_rank() over (order by idle_gpu_ms desc, series_id) as rnk from (
          select *, sum(r1 - r0) over (partition by series_id) * gpus as idle_gpu_ms from runs
        ) x
      )
      select series_id::float8 as series_id, job_id, node_id, gpu_id, scope, gpus::float8 as gpus,
        r0::float8 as r0, r1::float8 as r1, avg_util::float8 as avg_util, max_util::float8 as max_util
      from ranked
      where rnk <= ${first}
      order by rnk, r0`,
    );
    return rows.map((r) => ({
      seriesId: Number(r.series_id),
      jobId: String(r.job_id),
      nodeId: (r.node_id as string | null) ?? null,
      gpuId: (r.gpu_id as string | null) ?? null,
      scope: r.scope as IdleRunRow['scope'],
      gpus: Number(r.gpus),
      from: new Date(Number(r.r0)),
      to: new Date(Number(r.r1)),
      avgUtilization: Number(r.avg_util),
      maxUtilization: Number(r.max_util),
    }));
  }

  /**
   * GPU-hours allocated, covered by data and used, per job (the `firstJobs` with the most waste,
   * allocated minus used) and rolled up by provider, project, GPU model, owner and in total.
   */
  async gpuHours(windows: readonly FleetJobWindow[], firstJobs: number, nodeBilled: NodeBilled = []): Promise<GpuHoursRow[]> {
    if (windows.length === 0) return [];
    // A CPU-only job (nothing held: no GPU count, no GPU series) counts where it is billed per node-hour.
    const billed = nodeBilled === '*' ? sql`true` : nodeBilled.length ? sql`pj.provider_id = any(${textArray(nodeBilled)})` : sql`false`;
    const rows = await this.rows<Record<string, unknown>>(
      sql`
      with ${selectedSeriesSql(windows)},
      -- Each series' sums in its own lateral pass over its points, in index order: no sort of the
      -- fleet's ~10^6 intervals. Materialised: inlined into per_job, a planner that takes sel for
      -- a row or two (it comes from a json array, whatever ANALYZE knows) could re-run every
      -- series' pass once per job window.
      per_series as materialized (
        select sel.series_id, sel.job_id, sel.gpus, x.covered_ms, x.used_ms
        from ${seriesUsageSql()}
      ), per_job as (
        select jw.job_id, j.provider_id, j.project_id, coalesce(j.gpu_type, 'unknown') as model, coalesce(j.owner, '') as owner,
          -- the platform's GPU count, or more where more GPUs report than it claims
          greatest(coalesce(j.gpu_count, 0), coalesce(sum(ps.gpus), 0)) * (jw.w_to - jw.w_from) as alloc_ms,
          coalesce(sum(ps.covered_ms * ps.gpus), 0) as covered_ms,
          coalesce(sum(ps.used_ms * ps.gpus), 0) as used_ms
        from jw join jobs j on j.id = jw.job_id
          left join per_series ps on ps.job_id = jw.job_id
        group by jw.job_id, j.provider_id, j.project_id, j.gpu_type, j.owner, j.gpu_count, jw.w_from, jw.w_to
      ), gpu_jobs as (
        -- jobs that held accelerators, and the CPU-only jobs billed per node-hour (0 GPU-hours, their nodes for the ledger)
        select pj.*, case when pj.alloc_ms > 0 then 0 else (select count(*) from nodes n where n.job_id = pj.job_id) end as nodes
        from per_job pj where pj.alloc_ms > 0 or (${billed})
      ), top_jobs as (
        select 'job' as kind, job_id as key, 1 as jobs, alloc_ms, covered_ms, used_ms, nodes
        from gpu_jobs order by alloc_ms - used_ms desc, job_id limit ${firstJobs}
      ), rollups as (
        select case when grouping(provider_id) = 0 then 'provider' when grouping(project_id) = 0 then 'project'
                    when grouping(model) = 0 then 'model' when grouping(owner) = 0 then 'owner' else 'total' end as kind,
          coalesce(provider_id, project_id, model, owner) as key, count(*) as jobs,
          sum(alloc_ms) as alloc_ms, sum(covered_ms) as covered_ms, sum(used_ms) as used_ms
        from gpu_jobs group by grouping sets ((provider_id), (project_id), (model), (owner), ())
      )
      select kind, key, jobs::int as jobs, alloc_ms::float8 as alloc_ms, covered_ms::float8 as covered_ms, used_ms::float8 as used_ms, nodes::int as nodes from top_jobs
      union all
      select kind, key, jobs::int, alloc_ms::float8, covered_ms::float8, used_ms::float8, 0 from rollups`,
    );
    return rows.map((r) => ({
      kind: r.kind as GpuHoursRow['kind'],
      key: (r.key as string | null) ?? null,
      jobs: Number(r.jobs),
      allocatedGpuHours: Number(r.alloc_ms) / MS_PER_HOUR,
      coveredGpuHours: Number(r.covered_ms) / MS_PER_HOUR,
      usedGpuHours: Number(r.used_ms) / MS_PER_HOUR,
      nodes: Number(r.nodes),
    }));
  }
}

/**
 * The shared relations: jw (job windows, epoch ms) and sel (the chosen GPU_UTILIZATION series,
 * the GPUs each stands for and its job's window). Materialised: every series' pass reads it.
 */
export function selectedSeriesSql(windows: readonly FleetJobWindow[]): SQL {
  const json = JSON.stringify(windows.map((w) => [w.jobId, w.from.getTime(), w.to.getTime(), w.stepSeconds * 1000]));
  // Written so that no plan depends on row estimates: jw comes from a json array (always guessed at
  // 100 rows) and the CTEs over it at a row or two, so PGlite, once ANALYZE had run, nested-loop
  // joined 3,200 series against every job window and every node's GPU count.
  return sql`
  jw as (
    select r->>0 as job_id, (r->>1)::float8 as w_from, (r->>2)::float8 as w_to, (r->>3)::float8 as asked_step
    from jsonb_array_elements(${json}::jsonb) as r
  ), ${seriesOfWindowsSql(textArray(windows.map((w) => w.jobId)))}`;
}
