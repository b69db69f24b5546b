// What the findings evaluator (src/findings/) asks of the store, in a constant number of
// statements whatever the fleet's size: one that looks at every running job's stored series,
// progress and status at once (detect), one that opens the findings seen for the first time
// (fire) and one that closes those no longer seen (resolve). Each transition is recorded once
// (finding_events' unique key), so a finding fires once and resolves once.
//
// The numbers compared are the ones `Job.metrics` answers for the same window: per series, over
// the points whose key (epoch ms) lies in [from, to] inclusive, count, max and the average summed
// in key order (Repository.summariesOf).
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from './db.js';
import { readRowsFor, rowsOf, textArray, toDate } from './sql-util.js';
import { edgeRawPoint, rawPoints } from './raw-points.js';

import {
  findingOf,
  placeOf,
  type FindingCandidate,
  type FindingCursor,
  type FindingKind,
  type FindingQuery,
  type FindingRow,
  type ThresholdRule,
} from './finding-rows.js';

export * from './finding-rows.js';

const ACCEL = sql.raw(`('GPU_UTILIZATION', 'NPU_UTILIZATION')`);
/** How many of a training series' newest points tell its step time (read backwards on the key index). */
const STEP_POINTS = 64;

/**
 * The alert outbox's rows for the transitions just recorded (a CTE of finding_id, event, at): in
 * the same statement, so a transition is delivered (src/alerts/) if and only if it was recorded.
 */
const outboxOf = (events: SQL) => sql`insert into alert_outbox (finding_id, event, at) select finding_id, event, at from ${events} on conflict do nothing`;

/** How detect's statement runs (see detect): set for its transaction only. */
const DETECT_SETTINGS = sql`select set_config('enable_nestloop', 'off', true), set_config('work_mem', '32MB', true)`;

const ms = (d: Date) => sql`${d.getTime()}::bigint`;
const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;

export class FindingsStore {
  constructor(private readonly db: Db) {}

  private rows<T>(query: SQL): Promise<T[]> {
    return rowsOf<T>(this.db, query);
  }

  /**
   * Every condition that holds at `now` for any running (or, FAILED, recently failed) job, in one
   * statement. `rules` must hold one rule with providerId and projectId null (the defaults); a job
   * takes the most specific rule that names it (project over provider over default).
   */
  async detect(now: Date, rules: readonly ThresholdRule[]): Promise<FindingCandidate[]> {
    // The planner cannot know how many rows each CTE holds and joins them in nested loops, each a
    // scan of the other side: quadratic in the fleet (24 s at 1,000 jobs on PostgreSQL). Hash joins
    // it must then take; the per-series index reads (lateral) stay nested loops, their only plan.
    // The sorts of a large fleet's rows (tens of thousands) spilled to disk under the default 4 MB
    // of work_mem; in memory they take a third of the time. One statement sets both, for this
    // transaction only.
    const rows = await this.db.transaction(async (tx) => {
      await tx.execute(DETECT_SETTINGS);
      return rowsOf<Record<string, unknown>>(tx as unknown as Db, this.detectStatement(now, rules));
    });
    return this.candidatesOf(rows, now);
  }

  /**
   * The plan of detect's statement as detect runs it, with EXPLAIN ANALYZE (and BUFFERS where the
   * database has them): where an evaluation's time goes (bench/findings.ts --explain).
   */
  async explainDetect(now: Date, rules: readonly ThresholdRule[], buffers = true): Promise<string[]> {
    const plan = await this.db.transaction(async (tx) => {
      await tx.execute(DETECT_SETTINGS);
      return rowsOf<Record<string, string>>(
        tx as unknown as Db,
        sql.join([buffers ? sql`explain (analyze, buffers) ` : sql`explain (analyze) `, this.detectStatement(now, rules)]),
      );
    });
    return plan.map((r) => String(Object.values(r)[0]));
  }

  private detectStatement(now: Date, rules: readonly ThresholdRule[]): SQL {
    const rulesJson = JSON.stringify(
      rules.map((r, ord) => ({
        ord,
        provider: r.providerId,
        project: r.projectId,
        stall_util: r.stallUtilization,
        stall_ms: r.stallMinutes * 60_000,
        step_ms: r.stallStepMinutes * 60_000,
        step_factor: r.stallStepFactor,
        strag_frac: r.stragglerFraction,
        strag_busy: r.stragglerBusyUtilization,
        strag_ms: r.stragglerMinutes * 60_000,
        idle_util: r.idleUtilization,
        idle_ms: r.idleMinutes * 60_000,
        nodata_ms: r.noDataMinutes * 60_000,
        failed_hold_ms: r.failedHoldHours * 3_600_000,
        restart_hold_ms: r.restartHoldMinutes * 60_000,
      })),
    );
    return this.detectSql(now, ms(now), rulesJson);
  }

  private detectSql(now: Date, nowMs: SQL, rulesJson: string): SQL {
    return sql`
      with rules as (
        select * from jsonb_to_recordset(${rulesJson}::jsonb) as r(ord int, provider text, project text, stall_util float8, stall_ms bigint,
          step_ms bigint, step_factor float8, strag_frac float8, strag_busy float8, strag_ms bigint, idle_util float8, idle_ms bigint,
          nodata_ms bigint, failed_hold_ms bigint, restart_hold_ms bigint)
      ),
      judged as materialized (
        select j.id as job_id, j.provider_id, j.project_id, j.status, j.started_at, j.finished_at, j.seen_at, j.failure_reason, j.raw_status,
          j.restart_count, th.*
        from jobs j cross join lateral (
          select * from rules r where (r.provider is null or r.provider = j.provider_id) and (r.project is null or r.project = j.project_id)
          order by (r.project is not null)::int * 2 + (r.provider is not null)::int desc, r.ord desc limit 1
        ) th
        where j.status = 'RUNNING' or (j.status = 'FAILED' and coalesce(j.finished_at, j.seen_at) >= ${at(now)} - make_interval(secs => th.failed_hold_ms / 1000.0))
      ),
      -- Each job's series are judged up to its reach: the end of what was fetched (capped at now), so a
      -- window's numbers are final (a later fetch adds no point inside it) and Job.metrics answers them.
      running as materialized (
        select jd.*, least(${nowMs}, coalesce((select (extract(epoch from max(f.range_to)) * 1000)::bigint from fetches f
          where f.job_id = jd.job_id and f.dataset in ('metric:GPU_UTILIZATION', 'metric:NPU_UTILIZATION')), ${nowMs})) as reach_ms
        from judged jd where jd.status = 'RUNNING'
      ),
      -- The job's own accelerators at the finest scope it has (never a node's or host's readings).
      acc_all as materialized (
        select s.id as series_id, s.job_id, s.node_id, s.gpu_id, s.scope, s.name
        from series s join running r on r.job_id = s.job_id
        where s.kind = 'system' and s.name in ${ACCEL}
          and not coalesce((s.meta->>'nodeWide')::boolean, false) and not coalesce((s.meta->>'hostWide')::boolean, false)
      ),
      finest as materialized (
        select job_id, name, case when bool_or(scope = 'GPU') then 'GPU' when bool_or(scope = 'NODE') then 'NODE' else 'JOB' end as scope
        from acc_all group by job_id, name
      ),
      acc as materialized (
        select a.* from acc_all a join finest f on f.job_id = a.job_id and f.name = a.name and f.scope = a.scope
      ),
      -- Per series, one read of its points over the widest of the three windows (stall, idle,
      -- straggler: each ends at the job's reach) gives each window's summary as Job.metrics answers it
      -- (count, average summed in key order, maximum, over keys in [from, to]), and whether the series
      -- covers it: a reading at or before its start (its first reading tells) and one in its last
      -- third (a hole is not a reading). The points reach the aggregates in key order (the
      -- subquery's ORDER BY, read off the key index): the averages are summed in Job.metrics' order
      -- without a sort per window.
      stats as materialized (
        select a.*, r.reach_ms as k_to, r.reach_ms - r.stall_ms as k_stall, r.reach_ms - r.idle_ms as k_idle, r.reach_ms - r.strag_ms as k_strag,
          st.*, fk.first_key,
          (coalesce(fk.first_key <= r.reach_ms - r.stall_ms, false) and st.n_stall > 0 and st.last_key >= r.reach_ms - r.stall_ms / 3) as cov_stall,
          (coalesce(fk.first_key <= r.reach_ms - r.idle_ms, false) and st.n_idle > 0 and st.last_key >= r.reach_ms - r.idle_ms / 3) as cov_idle,
          (coalesce(fk.first_key <= r.reach_ms - r.strag_ms, false) and st.n_strag > 0 and st.last_key >= r.reach_ms - r.strag_ms / 3) as cov_strag
        from acc a join running r on r.job_id = a.job_id
        cross join lateral (
          select count(p.value) filter (where p.key >= r.reach_ms - r.stall_ms)::int as n_stall,
            avg(p.value) filter (where p.key >= r.reach_ms - r.stall_ms)::float8 as avg_stall,
            max(p.value) filter (where p.key >= r.reach_ms - r.stall_ms) as max_stall,
            count(p.value) filter (where p.key >= r.reach_ms - r.idle_ms)::int as n_idle,
            avg(p.value) filter (where p.key >= r.reach_ms - r.idle_ms)::float8 as avg_idle,
            max(p.value) filter (where p.key >= r.reach_ms - r.idle_ms) as max_idle,
            count(p.value) filter (where p.key >= r.reach_ms - r.strag_ms)::int as n_strag,
            avg(p.value) filter (where p.key >= r.reach_ms - r.strag_ms)::float8 as avg_strag,
            max(p.value) filter (where p.key >= r.reach_ms - r.strag_ms) as max_strag,
            -- The windows share their end: the newest point read is each window's newest, if it lies in it.
            max(p.key) as last_key
          from (
            select p.key, p.value
            from ${rawPoints(sql`a.series_id`, sql`least(r.reach_ms - r.stall_ms, r.reach_ms - r.idle_ms, r.reach_ms - r.strag_ms)`, sql`r.reach_ms`)} p
            order by p.key
          ) p
        ) st
        left join lateral (select p.key as first_key from ${edgeRawPoint(sql`a.series_id`, 'first', { where: sql`p.value is not null` })} p) fk on true
      ),
      -- The stall window of each job: every series covers it and its highest reading; the series'
      -- evidence is built only for the jobs that stall.
      stall_win as materialized (
        select x.job_id, bool_and(x.cov_stall) as all_covered, max(x.max_stall) as max_all, min(x.k_stall) as k_from, max(x.k_to) as k_to
        from stats x group by x.job_id
      ),
      stall_jobs as materialized (
        select e.* from running r join stall_win e on e.job_id = r.job_id where e.all_covered and e.max_all < r.stall_util
      ),
      stalled_acc as materialized (
        select r.job_id, r.provider_id, r.project_id, r.stall_util, s.max_all, s.k_from, s.k_to, jsonb_agg(jsonb_build_object('seriesId', x.series_id, 'metric', x.name, 'scope', x.scope,
          'nodeId', x.node_id, 'gpuId', x.gpu_id, 'count', x.n_stall, 'avg', x.avg_stall, 'max', x.max_stall) order by x.node_id, x.gpu_id, x.series_id) as series
        from stall_jobs s join running r on r.job_id = s.job_id join stats x on x.job_id = s.job_id
        group by r.job_id, r.provider_id, r.project_id, r.stall_util, s.max_all, s.k_from, s.k_to
      ),
      idle as materialized (
        select r.job_id, jsonb_agg(jsonb_build_object('seriesId', x.series_id, 'metric', x.name, 'scope', x.scope, 'nodeId', x.node_id,
          'gpuId', x.gpu_id, 'count', x.n_idle, 'avg', x.avg_idle, 'max', x.max_idle) order by x.node_id, x.gpu_id, x.series_id) as series,
          count(*) as n_idle, min(x.k_idle) as k_from, max(x.k_to) as k_to, max(x.max_idle) as max_idle
        from running r join stats x on x.job_id = r.job_id
        where x.cov_idle and x.max_idle < r.idle_util
        group by r.job_id
      ),
      strag_med as materialized (
        select x.job_id, percentile_cont(0.5) within group (order by x.avg_strag) as median, count(*) as n
        from stats x where x.cov_strag group by x.job_id
      ),
      strag_low as materialized (
        select count(*) over (partition by r.job_id) as n_low, r.job_id, r.provider_id, r.project_id, r.strag_frac, r.strag_busy, x.series_id, x.name,
          x.scope, x.node_id, x.gpu_id, x.n_strag as n, x.avg_strag as avg, x.max_strag as max, x.k_strag as k_from, x.k_to, m.median, m.n as n_series
        from running r join strag_med m on m.job_id = r.job_id
        join stats x on x.job_id = r.job_id and x.cov_strag
        where m.n >= 2 and m.median >= r.strag_busy and x.max_strag < r.strag_frac * m.median
      ),
      -- A straggler lags the others: the few below the limit, not half a job (that is an idle allocation).
      straggler as materialized (
        select l.* from strag_low l
        where l.n_low * 2 < l.n_series or l.n_series = 2
      ),
      -- NO_DATA: the platform was asked for metrics within the window and its newest point is older.
      -- A job with an accelerator reading that recent has data: only the others' series are looked up.
      asked as materialized (
        select f.job_id, max(f.fetched_at) as fetched_at from fetches f join running r on r.job_id = f.job_id
        where f.dataset like 'metric:%' group by f.job_id
      ),
      fresh as materialized (
        select distinct x.job_id from stats x join running r on r.job_id = x.job_id where x.last_key >= ${nowMs} - r.nodata_ms
      ),
      newest as materialized (
        select s.job_id, max(lp.key) as last_key
        from series s join running r on r.job_id = s.job_id left join fresh f on f.job_id = r.job_id
        cross join lateral (select p.key from ${edgeRawPoint(sql`s.id`, 'last', { hi: sql`${nowMs}::bigint`, keyOnly: true })} p) lp
        where s.kind = 'system' and f.job_id is null group by s.job_id
      ),
      no_data as materialized (
        select r.*, a.fetched_at, n.last_key from running r join asked a on a.job_id = r.job_id left join newest n on n.job_id = r.job_id
          left join fresh f on f.job_id = r.job_id
        where f.job_id is null and a.fetched_at >= ${at(now)} - make_interval(secs => r.nodata_ms / 1000.0)
          and coalesce(r.started_at, ${at(now)}) <= ${at(now)} - make_interval(secs => r.nodata_ms / 1000.0)
          and coalesce(n.last_key, 0) < ${nowMs} - r.nodata_ms
      ),
      -- STALLED by progress: the newest step's time, against the median time per step of the last
      -- points. A job whose newest step is younger than stallStepMinutes cannot be stalled whatever
      -- its median (the limit is at least that): only the others' last points are read, job by job
      -- (a few series of 64 points each, sorted in memory), never as one sort of every job's steps.
      newest_step as materialized (
        select s.job_id, lp.step, lp.ts from series s join running r on r.job_id = s.job_id
        cross join lateral (select p.key as step, p.ts from points p where p.series_id = s.id and p.ts is not null and p.ts <= ${at(now)}
          order by p.key desc limit 1) lp
        where s.kind = 'training' and s.keyed_by = 'step'
      ),
      progress_late as materialized (
        select n.job_id from (select job_id, step, ts, max(step) over (partition by job_id) as max_step from newest_step) n
        join running r on r.job_id = n.job_id
        where n.step = n.max_step
        group by n.job_id, r.step_ms
        having extract(epoch from ${at(now)} - min(n.ts)) * 1000 > r.step_ms
      ),
      progress_stats as materialized (
        select r.job_id, ps.last_step, ps.last_step_at, ps.median_ms_per_step from running r join progress_late l on l.job_id = r.job_id cross join lateral (
          select max(g.step) as last_step, max(g.ts) filter (where g.step = g.max_step) as last_step_at,
            percentile_cont(0.5) within group (order by g.ms_per_step) filter (where g.ms_per_step > 0) as median_ms_per_step
          from (
            select f.step, f.ts, max(f.step) over () as max_step,
              extract(epoch from f.ts - lag(f.ts) over w) * 1000 / nullif(f.step - lag(f.step) over w, 0) as ms_per_step
            from (
              -- A step reported by several series (loss, accuracy) was first seen at the earliest of their times.
              select lp.step, min(lp.ts) as ts from series s
              cross join lateral (select p.key as step, p.ts from points p where p.series_id = s.id and p.ts is not null and p.ts <= ${at(now)}
                order by p.key desc limit ${STEP_POINTS}) lp
              where s.job_id = r.job_id and s.kind = 'training' and s.keyed_by = 'step'
              group by lp.step
            ) f
            window w as (order by f.step)
          ) g
        ) ps
        where ps.last_step is not null
      ),
      asked_training as materialized (
        select f.job_id, max(f.fetched_at) as fetched_at from fetches f join running r on r.job_id = f.job_id
        where f.dataset in ('training', 'progress') group by f.job_id
      ),
      stalled_progress as materialized (
        select r.*, ps.last_step, ps.last_step_at, ps.median_ms_per_step, greatest(r.step_ms, r.step_factor * coalesce(ps.median_ms_per_step, 0)) as limit_ms,
          t.fetched_at
        from running r join progress_stats ps on ps.job_id = r.job_id join asked_training t on t.job_id = r.job_id
        where ps.last_step_at is not null
          and t.fetched_at >= ${at(now)} - make_interval(secs => greatest(r.step_ms, r.step_factor * coalesce(ps.median_ms_per_step, 0)) / 1000.0)
          and extract(epoch from ${at(now)} - ps.last_step_at) * 1000 > greatest(r.step_ms, r.step_factor * coalesce(ps.median_ms_per_step, 0))
      )
      select 'STALLED' as kind, 'CRITICAL' as severity, s.job_id, s.provider_id, s.project_id, null::text as node_id, null::text as gpu_id, 'accelerators' as variant,
        to_timestamp(s.k_from / 1000.0) as started_at, null::timestamptz as hold_until,
        jsonb_build_object('reason', 'ACCELERATORS_IDLE', 'from', to_timestamp(s.k_from / 1000.0), 'to', to_timestamp(s.k_to / 1000.0), 'threshold', s.stall_util,
          'observedMax', s.max_all, 'series', s.series) as evidence
      from stalled_acc s
      union all
      select 'STALLED', 'CRITICAL', p.job_id, p.provider_id, p.project_id, null, null, 'progress', p.last_step_at, null,
        jsonb_build_object('reason', 'NO_PROGRESS', 'from', p.last_step_at, 'to', ${at(now)}, 'lastStep', p.last_step, 'lastStepAt', p.last_step_at,
          'medianSecondsPerStep', p.median_ms_per_step / 1000.0, 'stalledSeconds', extract(epoch from ${at(now)} - p.last_step_at)::float8,
          'limitSeconds', p.limit_ms / 1000.0, 'askedAt', p.fetched_at)
      from stalled_progress p
      union all
      select 'IDLE_ALLOCATION', 'WARNING', i.job_id, r.provider_id, r.project_id, null, null, '', to_timestamp(i.k_from / 1000.0), null,
        jsonb_build_object('from', to_timestamp(i.k_from / 1000.0), 'to', to_timestamp(i.k_to / 1000.0), 'threshold', r.idle_util, 'observedMax', i.max_idle,
          'idleAccelerators', i.n_idle, 'series', i.series)
      from idle i join running r on r.job_id = i.job_id
      union all
      select 'STRAGGLER', 'WARNING', g.job_id, g.provider_id, g.project_id, g.node_id, g.gpu_id, g.series_id::text, to_timestamp(g.k_from / 1000.0), null,
        jsonb_build_object('from', to_timestamp(g.k_from / 1000.0), 'to', to_timestamp(g.k_to / 1000.0), 'fraction', g.strag_frac, 'busyUtilization', g.strag_busy,
          'jobMedian', g.median, 'observedMax', g.max, 'limit', g.strag_frac * g.median, 'seriesCompared', g.n_series,
          'series', jsonb_build_array(jsonb_build_object('seriesId', g.series_id, 'metric', g.name, 'scope', g.scope, 'nodeId', g.node_id,
            'gpuId', g.gpu_id, 'count', g.n, 'avg', g.avg, 'max', g.max)))
      from straggler g
      union all
      select 'NO_DATA', 'WARNING', d.job_id, d.provider_id, d.project_id, null, null, '',
        coalesce(to_timestamp(d.last_key / 1000.0), d.started_at), null,
        jsonb_build_object('from', ${at(now)} - make_interval(secs => d.nodata_ms / 1000.0), 'to', ${at(now)}, 'lastPointAt', to_timestamp(d.last_key / 1000.0),
          'askedAt', d.fetched_at, 'limitSeconds', d.nodata_ms / 1000.0)
      from no_data d
      union all
      select 'FAILED', 'CRITICAL', f.job_id, f.provider_id, f.project_id, null, null, '', coalesce(f.finished_at, f.seen_at),
        coalesce(f.finished_at, f.seen_at) + make_interval(secs => f.failed_hold_ms / 1000.0),
        jsonb_build_object('failureReason', f.failure_reason, 'rawStatus', f.raw_status, 'finishedAt', f.finished_at)
      from judged f where f.status = 'FAILED'
      union all
      select 'RESTARTED', 'INFO', r.job_id, r.provider_id, r.project_id, null, null, r.restart_count::text, ${at(now)},
        ${at(now)} + make_interval(secs => r.restart_hold_ms / 1000.0),
        jsonb_build_object('restartCount', r.restart_count, 'failureReason', r.failure_reason, 'rawStatus', r.raw_status)
      from running r where coalesce(r.restart_count, 0) > 0`;
  }

  private candidatesOf(rows: Record<string, unknown>[], now: Date): FindingCandidate[] {
    return rows.map((r) => {
      const kind = r.kind as FindingKind;
      const evidence = (typeof r.evidence === 'string' ? JSON.parse(r.evidence) : r.evidence) as Record<string, unknown>;
      const c: FindingCandidate = {
        fingerprint: [kind, r.job_id, r.node_id ?? '', r.gpu_id ?? '', r.variant ?? ''].join('|'),
        ...placeOf(r),
        summary: '',
        startedAt: toDate(r.started_at) ?? now,
        holdUntil: toDate(r.hold_until),
        evidence,
      };
      c.summary = summaryOf(c);
      return c;
    });
  }

  /**
   * Opens the candidates not open yet (FAILED and RESTARTED: never seen before, as a job fails
   * once and each restart count is one restart) and refreshes the evidence of those open; one
   * statement. Returns the findings that fired now.
   */
  async fire(candidates: readonly FindingCandidate[], now: Date): Promise<FindingRow[]> {
    if (candidates.length === 0) return [];
    const json = JSON.stringify(
      candidates.map((c) => ({
        fingerprint: c.fingerprint,
        kind: c.kind,
        severity: c.severity,
        provider_id: c.providerId,
        project_id: c.projectId,
        job_id: c.jobId,
        node_id: c.nodeId,
        gpu_id: c.gpuId,
        summary: c.summary,
        started_at: c.startedAt.toISOString(),
        hold_until: c.holdUntil?.toISOString() ?? null,
        evidence: c.evidence,
      })),
    );
    const rows = await this.rows<Record<string, unknown>>(sql`
      with c as (
        select * from jsonb_to_recordset(${json}::jsonb) as c(fingerprint text, kind text, severity text, provider_id text, project_id text,
          job_id text, node_id text, gpu_id text, summary text, started_at timestamptz, hold_until timestamptz, evidence jsonb)
      ),
      refreshed as (
        update findings f set evidence = c.evidence, summary = c.summary, last_seen_at = ${at(now)}
        from c where f.fingerprint = c.fingerprint and f.ended_at is null
        returning f.id
      ),
      opened as (
        insert into findings (fingerprint, kind, severity, provider_id, project_id, job_id, node_id, gpu_id, summary, started_at, ended_at, last_seen_at, hold_until, evidence)
        select c.fingerprint, c.kind, c.severity, c.provider_id, c.project_id, c.job_id, c.node_id, c.gpu_id, c.summary, c.started_at, null, ${at(now)},
          c.hold_until, c.evidence
        from c
        where not exists (select 1 from findings f where f.fingerprint = c.fingerprint and (f.ended_at is null or c.kind in ('FAILED', 'RESTARTED')))
          and (c.hold_until is null or c.hold_until > ${at(now)})
        on conflict (fingerprint) where ended_at is null do nothing
        returning *
      ),
      events as (insert into finding_events (finding_id, event, at) select id, 'FIRING', ${at(now)} from opened on conflict do nothing returning finding_id, event, at),
      outbox as (${outboxOf(sql`events`)})
      select * from opened`);
    return rows.map(findingOf);
  }

  /** Closes the open findings not among `seen` (or past their hold), one statement; returns them. */
  async resolve(seen: readonly string[], now: Date): Promise<FindingRow[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`
      with closed as (
        update findings f set ended_at = ${at(now)}
        where f.ended_at is null and (not (f.fingerprint = any(${textArray(seen)})) or f.hold_until <= ${at(now)})
        returning f.*
      ),
      events as (insert into finding_events (finding_id, event, at) select id, 'RESOLVED', ${at(now)} from closed on conflict do nothing returning finding_id, event, at),
      outbox as (${outboxOf(sql`events`)})
      select * from closed`);
    return rows.map(findingOf);
  }

  /** A page of findings, newest first (startedAt, then id), after the cursor (forward); limit + 1 rows say whether there is more. */
  async page(q: FindingQuery, limit: number, cursor: FindingCursor | null, direction: 'forward' | 'backward' = 'forward'): Promise<FindingRow[]> {
    // Backward: the nearest ones newer than the cursor (or the oldest), nearest first.
    const forward = direction === 'forward';
    const rows = await readRowsFor<Record<string, unknown>>(
      undefined,
      this.db,
      sql`select * from findings f where ${conditions(q)}
        ${cursor ? (forward ? sql`and (f.started_at, f.id) < (${at(cursor.startedAt)}, ${cursor.id})` : sql`and (f.started_at, f.id) > (${at(cursor.startedAt)}, ${cursor.id})`) : sql``}
        order by ${forward ? sql`f.started_at desc, f.id desc` : sql`f.started_at asc, f.id asc`} limit ${limit + 1}`,
    );
    return rows.map(findingOf);
  }

  count(q: FindingQuery): Promise<number> {
    return this.rows<{ n: number }>(sql`select count(*)::int as n from findings f where ${conditions(q)}`).then((r) => Number(r[0]?.n ?? 0));
  }

  /** The findings of many jobs (one statement), newest first. */
  ofJobs(jobIds: readonly string[], q: Omit<FindingQuery, 'jobIds' | 'providerIds'>): Promise<FindingRow[]> {
    if (jobIds.length === 0) return Promise.resolve([]);
    return this.rows<Record<string, unknown>>(
      sql`select * from findings f where f.job_id = any(${textArray(jobIds)}) and ${conditions({ ...q, providerIds: [] }, false)}
        order by f.started_at desc, f.id desc`,
    ).then((rows) => rows.map(findingOf));
  }

  byIds(ids: readonly number[]): Promise<FindingRow[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.rows<Record<string, unknown>>(
      sql`select * from findings where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::bigint)`,
    ).then((rows) => rows.map(findingOf));
  }
}

function conditions(q: FindingQuery, withProviders = true): SQL {
  const parts: SQL[] = [sql`true`];
  if (withProviders) parts.push(sql`f.provider_id = any(${textArray(q.providerIds)})`);
  if (q.projectId) parts.push(sql`f.project_id = ${q.projectId}`);
  if (q.jobIds) parts.push(sql`f.job_id = any(${textArray(q.jobIds)})`);
  if (q.kinds) parts.push(sql`f.kind = any(${textArray(q.kinds)})`);
  if (q.severities) parts.push(sql`f.severity = any(${textArray(q.severities)})`);
  if (q.firing === true) parts.push(sql`f.ended_at is null`);
  if (q.firing === false) parts.push(sql`f.ended_at is not null`);
  if (q.since) parts.push(sql`(f.ended_at is null or f.ended_at >= ${at(q.since)})`);
  return sql.join(parts, sql` and `);
}

const pct = (v: unknown) => (typeof v === 'number' ? `${(v * 100).toFixed(1)}%` : '?');

/** One line a person reads in a notification or a list. */
function summaryOf(c: FindingCandidate): string {
  const e = c.evidence;
  switch (c.kind) {
    case 'STALLED':
      return e.reason === 'NO_PROGRESS'
        ? `no new step since ${String(e.lastStepAt)} (step ${String(e.lastStep)}); limit ${Math.round(Number(e.limitSeconds))} s`
        : `every accelerator below ${pct(e.threshold)} since ${String(e.from)} (highest ${pct(e.observedMax)})`;
    case 'IDLE_ALLOCATION':
      return `${String(e.idleAccelerators)} accelerator series below ${pct(e.threshold)} since ${String(e.from)} (highest ${pct(e.observedMax)})`;
    case 'STRAGGLER':
      return `${c.gpuId ?? c.nodeId ?? 'a series'} at most ${pct(e.observedMax)} while the job's median is ${pct(e.jobMedian)} (limit ${pct(e.limit)})`;
    case 'NO_DATA':
      return e.lastPointAt
        ? `no metrics since ${String(e.lastPointAt)}, though asked at ${String(e.askedAt)}`
        : `no metrics at all, though asked at ${String(e.askedAt)}`;
    case 'FAILED':
      return `failed${e.failureReason ? `: ${String(e.failureReason)}` : ''}`;
    case 'RESTARTED':
      return `restarted ${String(e.restartCount)} time(s)${e.failureReason ? `: ${String(e.failureReason)}` : ''}`;
  }
}
