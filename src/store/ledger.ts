// The ledger's measurements: per job and window, the accelerator-hours held, covered and used (the
// fleet's own arithmetic, src/store/fleet.ts) and the integrals of the series that price energy and
// useful work: GPU power (trapezoid, W x ms), tensor-pipe and SM active, the achieved model FLOP/s.
// Two statements for any number of jobs, after one batched fetch through the read-through path.
// The money, kWh and MFU made of them are src/domain/ledger.ts; the method is docs/ledger.md.
import { sql } from 'drizzle-orm';
import { DomainError } from '../domain/errors.js';
import type { JobUsage, LedgerReasonCode } from '../domain/ledger.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { SystemMetric } from '../domain/types.js';
import type { Db } from './db.js';
import { ACCELERATOR_UTILIZATION, type FleetJobWindow, FleetStore, MAX_GAP_STEPS, selectedSeriesSql } from './fleet.js';
import { seriesUsageSql } from './utilization-sql.js';
import { isTerminal, jobWindow, type ReadThrough } from './read-through.js';
import type { JobRow } from './repository.js';
import { readRowsFor, textArray } from './sql-util.js';
import { rawPoints } from './raw-points.js';

/** Per-GPU series integrated for energy and useful work (GPU scope: a node's or host's device series never stand for a job's GPUs). */
const GPU_SERIES = ['GPU_POWER', 'GPU_TENSOR_ACTIVE', 'GPU_SM_ACTIVE'] as const;
/** Job-scope: the framework's achieved FLOP/s per accelerator. */
const JOB_SERIES = ['MODEL_FLOPS_PER_GPU'] as const;
/** Everything a ledger figure reads; a platform is asked only for those it offers. */
export const LEDGER_METRICS: readonly SystemMetric[] = [...ACCELERATOR_UTILIZATION, ...GPU_SERIES, ...JOB_SERIES];
export const LEDGER_EXTRA_METRICS: readonly SystemMetric[] = [...GPU_SERIES, ...JOB_SERIES];

export interface UsageRow {
  jobId: string;
  windowMs: number;
  allocMs: number;
  coveredMs: number;
  usedMs: number;
  nodeCount: number;
}

interface IntegralRow {
  jobId: string;
  name: string;
  coveredMs: number;
  integral: number;
}

export class LedgerStore {
  constructor(
    private readonly db: Db,
    private readonly scope?: RequestScope,
  ) {}

  /**
   * Per job: the window, accelerators held x window, and the utilization coverage and use, by the
   * same SQL as the fleet's GPU-hours (selectedSeriesSql / seriesIntervalsSql), so a job's idle
   * share here is the fleet's waste to the millisecond; and the nodes its topology knows.
   */
  async usage(windows: readonly FleetJobWindow[]): Promise<UsageRow[]> {
    if (windows.length === 0) return [];
    const rows = await readRowsFor<Record<string, unknown>>(
      this.scope,
      this.db,
      sql`
      with ${selectedSeriesSql(windows)},
      per_series as materialized (
        select sel.series_id, sel.job_id, sel.gpus, x.covered_ms, x.used_ms
        from ${seriesUsageSql()}
      ), node_counts as (
        select job_id, count(*) as n from nodes where job_id = any(${textArray(windows.map((w) => w.jobId))}) group by job_id
      )
      select jw.job_id, (jw.w_to - jw.w_from)::float8 as window_ms,
        (greatest(coalesce(j.gpu_count, 0), coalesce(sum(ps.gpus), 0)) * (jw.w_to - jw.w_from))::float8 as alloc_ms,
        coalesce(sum(ps.covered_ms * ps.gpus), 0)::float8 as covered_ms,
        coalesce(sum(ps.used_ms * ps.gpus), 0)::float8 as used_ms,
        coalesce(max(nc.n), 0)::float8 as node_count
      from jw join jobs j on j.id = jw.job_id
        left join per_series ps on ps.job_id = jw.job_id
        left join node_counts nc on nc.job_id = jw.job_id
      group by jw.job_id, j.gpu_count, jw.w_from, jw.w_to`,
    );
    return rows.map((r) => ({
      jobId: String(r.job_id),
      windowMs: Number(r.window_ms),
      allocMs: Number(r.alloc_ms),
      coveredMs: Number(r.covered_ms),
      usedMs: Number(r.used_ms),
      nodeCount: Number(r.node_count),
    }));
  }

  /**
   * Per job and metric: the time between consecutive readings (both not null, at most
   * MAX_GAP_STEPS x the series' step apart, as the fleet bridges gaps) summed over its series, and
   * the trapezoid integral of the value over that time ((v0 + v1) / 2 x (t1 - t0)). Readings are
   * those inside the window; nothing is extrapolated past the first or last.
   */
  async integrals(windows: readonly FleetJobWindow[]): Promise<IntegralRow[]> {
    if (windows.length === 0) return [];
    const json = JSON.stringify(windows.map((w) => [w.jobId, w.from.getTime(), w.to.getTime(), w.stepSeconds * 1000]));
    const rows = await readRowsFor<Record<string, unknown>>(
      this.scope,
      this.db,
      sql`
      with jw as (
        select r->>0 as job_id, (r->>1)::float8 as w_from, (r->>2)::float8 as w_to, (r->>3)::float8 as asked_step
        from jsonb_array_elements(${json}::jsonb) as r
      ), ms as materialized (
        select distinct on (s.job_id, s.name, s.node_id, s.gpu_id, s.scope) s.id as series_id, s.job_id, s.name, jw.asked_step,
          ceil(jw.w_from)::bigint as k_from, floor(jw.w_to)::bigint as k_to
        from jw join series s on s.job_id = jw.job_id
        where s.job_id = any(${textArray(windows.map((w) => w.jobId))}) and s.kind = 'system'
          and ((s.name in ('GPU_POWER', 'GPU_TENSOR_ACTIVE', 'GPU_SM_ACTIVE') and s.scope = 'GPU') or (s.name = 'MODEL_FLOPS_PER_GPU' and s.scope = 'JOB'))
          and not coalesce((s.meta->>'nodeWide')::boolean, false) and not coalesce((s.meta->>'hostWide')::boolean, false)
        order by s.job_id, s.name, s.node_id, s.gpu_id, s.scope, s.id
      )
      select ms.job_id, ms.name, sum(x.covered_ms)::float8 as covered_ms, sum(x.integral)::float8 as integral
      from ms cross join lateral (
        with pts as materialized (
          select p.key::float8 as ts, p.value, lead(p.key::float8) over (order by p.key) as next_ts, lead(p.value) over (order by p.key) as next_value
          from ${rawPoints(sql`ms.series_id`, sql`ms.k_from`, sql`ms.k_to`)} p
        ), st as materialized (
          select percentile_cont(0.5) within group (order by next_ts - ts) as step from pts where next_ts is not null
        )
        select coalesce(sum(pts.next_ts - pts.ts), 0) as covered_ms,
          coalesce(sum((pts.value + pts.next_value) / 2 * (pts.next_ts - pts.ts)), 0) as integral
        from pts cross join st
        where pts.value is not null and pts.next_value is not null
          and pts.next_ts - pts.ts <= ${MAX_GAP_STEPS} * coalesce(st.step, ms.asked_step)
      ) x
      group by ms.job_id, ms.name`,
    );
    return rows.map((r) => ({ jobId: String(r.job_id), name: String(r.name), coveredMs: Number(r.covered_ms), integral: Number(r.integral) }));
  }

  /** Both measurements, as one JobUsage per job (in the order of `jobs`); a job without a window gets `unmeasured`. */
  async measure(
    jobs: readonly JobRow[],
    windows: readonly FleetJobWindow[],
    unmeasured: ReadonlyMap<string, { code: LedgerReasonCode; message: string }>,
  ): Promise<JobUsage[]> {
    const [usage, integrals] = await Promise.all([this.usage(windows), this.integrals(windows)]);
    return combine(jobs, usage, integrals, unmeasured);
  }
}

/** One JobUsage per job (in the order of `jobs`) from its usage row and its series' integrals. */
export function combine(
  jobs: readonly JobRow[],
  usage: readonly UsageRow[],
  integrals: readonly IntegralRow[],
  unmeasured: ReadonlyMap<string, { code: LedgerReasonCode; message: string }>,
): JobUsage[] {
  const byJob = new Map(usage.map((u) => [u.jobId, u]));
  const ints = new Map<string, IntegralRow>();
  for (const r of integrals) ints.set(`${r.jobId}|${r.name}`, r);
  return jobs.map((job) => {
    const u = byJob.get(job.id);
    const int = (name: string) => ints.get(`${job.id}|${name}`) ?? { coveredMs: 0, integral: 0 };
    // The achieved FLOP/s is per accelerator: its time counts once for each accelerator held.
    const accelerators = u && u.windowMs > 0 ? u.allocMs / u.windowMs : 0;
    const flops = int('MODEL_FLOPS_PER_GPU');
    const flopsWeight = accelerators > 0 ? accelerators : 1;
    return {
      jobId: job.id,
      providerId: job.providerId,
      projectId: job.projectId,
      owner: job.owner,
      labels: job.labels,
      gpuType: job.gpuType,
      nodeCount: u?.nodeCount ?? 0,
      windowMs: u?.windowMs ?? 0,
      allocMs: u?.allocMs ?? 0,
      coveredMs: u?.coveredMs ?? 0,
      usedMs: u?.usedMs ?? 0,
      powerCoveredMs: int('GPU_POWER').coveredMs,
      powerWattMs: int('GPU_POWER').integral,
      tensorCoveredMs: int('GPU_TENSOR_ACTIVE').coveredMs,
      tensorIntegral: int('GPU_TENSOR_ACTIVE').integral,
      smCoveredMs: int('GPU_SM_ACTIVE').coveredMs,
      smIntegral: int('GPU_SM_ACTIVE').integral,
      flopsCoveredMs: flops.coveredMs * flopsWeight,
      flopsIntegral: flops.integral * flopsWeight,
      unmeasured: unmeasured.get(job.id) ?? (u ? null : { code: 'NOT_STARTED', message: 'the job held nothing in the window' }),
    };
  });
}

/** A window asked of a job's ledger; absent ends are the job's life (start, end or now). */
export interface LedgerWindow {
  from?: Date | null;
  to?: Date | null;
}

/**
 * The ledger of some jobs over one window: every series a figure reads is made current through the
 * read-through path (one batched fetch, at the resolution a default chart of the window asks), the
 * topology of node aggregates learned as the fleet learns it, then LedgerStore.measure.
 */
export async function measureJobs(
  rt: ReadThrough,
  jobs: readonly JobRow[],
  window: LedgerWindow,
  maxPoints: number,
  scope?: RequestScope,
): Promise<JobUsage[]> {
  const now = rt.now();
  const unmeasured = new Map<string, { code: LedgerReasonCode; message: string }>();
  const requests: { job: JobRow; from: Date; to: Date }[] = [];
  for (const job of jobs) {
    if (isTerminal(job.status) && !job.finishedAt) {
      unmeasured.set(job.id, { code: 'UNKNOWN_END', message: `job ${job.id} finished but its platform does not say when: its hours cannot be counted` });
    } else if (job.status === 'PENDING' || (!job.startedAt && !job.createdAt)) {
      unmeasured.set(job.id, { code: 'NOT_STARTED', message: 'the job has not started: it holds nothing yet' });
    } else {
      const w = jobWindow(job, now, window.from, window.to ?? now);
      if (w.to > w.from) requests.push({ job, ...w });
      else unmeasured.set(job.id, { code: 'NOT_STARTED', message: 'the job held nothing in the window' });
    }
  }
  const stale = new Map<string, { code: string; message: string }>();
  if (requests.length > 0) {
    const freshness = await rt.ensureMetrics(
      requests.map((r) => ({ ...r, metrics: LEDGER_METRICS, maxPoints })),
      { scope },
    );
    freshness.forEach((f, i) => {
      const problem = f instanceof Error ? { code: f instanceof DomainError ? f.code : 'INTERNAL', message: f.message } : f.error;
      if (problem) stale.set(requests[i]!.job.id, problem);
    });
  }
  // Metrics fetches teach some platforms their topology and GPU counts: read the rows again.
  const fresh = requests.length
    ? new Map((await rt.repo.within(scope).jobsByIds(requests.map((r) => r.job.id))).map((j) => [j.id, j]))
    : new Map<string, JobRow>();
  // As the fleet does: a node aggregate counts for its node's GPUs, so those jobs need their
  // topology; so does a job without accelerators (billed by its nodes). Others need no call.
  const unknown = [...fresh.values()].filter((j) => !j.topologyFetchedAt);
  if (unknown.length) {
    const aggregates = new Set(await new FleetStore(rt.repo.db, scope).jobsWithNodeAggregates(unknown.map((j) => j.id)));
    const due = unknown.filter((j) => aggregates.has(j.id) || !j.gpuCount);
    if (due.length) await rt.ensureTopology(due, { scope });
  }
  const windows: FleetJobWindow[] = requests.map((r) => ({ jobId: r.job.id, from: r.from, to: r.to, stepSeconds: rt.stepFor(r, maxPoints) }));
  const measured = await new LedgerStore(rt.repo.db, scope).measure(
    jobs.map((j) => fresh.get(j.id) ?? j),
    windows,
    unmeasured,
  );
  return measured.map((u) => (stale.has(u.jobId) ? { ...u, stale: stale.get(u.jobId)! } : u));
}

/**
 * The fleet's ledger from the GPU-hours the fleet already measured (`usage`: its per-job rows, so
 * no second pass over the utilization points); with `integrals`, the other series are made current
 * (where the platform offers them) and integrated in one more statement.
 */
export async function measureFleet(
  rt: ReadThrough,
  jobs: readonly JobRow[],
  windows: readonly FleetJobWindow[],
  usage: readonly UsageRow[],
  integrals: boolean,
  maxPoints: number,
  scope?: RequestScope,
): Promise<JobUsage[]> {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  // The jobs the fleet's groups count (a row each): CPU-only jobs not billed per node-hour have none.
  const counted = new Set(usage.map((u) => u.jobId));
  const kept = windows.filter((w) => byId.has(w.jobId) && counted.has(w.jobId));
  const inWindow = kept.map((w) => byId.get(w.jobId)!);
  if (!integrals) return combine(inWindow, usage, [], new Map());
  const requests = kept.map((w, i) => ({ job: inWindow[i]!, from: w.from, to: w.to, metrics: LEDGER_EXTRA_METRICS, maxPoints }));
  if (requests.length) await rt.ensureMetrics(requests, { scope });
  return combine(inWindow, usage, await new LedgerStore(rt.repo.db, scope).integrals(kept), new Map());
}
