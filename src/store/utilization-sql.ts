// The utilization arithmetic's shared SQL (src/store/fleet.ts has its semantics): which
// utilization series stand for a job's accelerators and the interval each reading holds. Apart from
// fleet.ts so that the run search's WASTE order (ledger-order.ts, reached from job-filter.ts, which
// fleet.ts imports) uses the same definition without an import cycle.
import { sql, type SQL } from 'drizzle-orm';
import { rawPoints } from './raw-points.js';

/** A gap of up to this many steps is bridged by the earlier point; a longer one is a hole. */
export const MAX_GAP_STEPS = 2;

/**
 * selectedSeriesSql after its jw: gpu_series, scoped, chosen and sel over the windows of a jw
 * relation the caller defines (job_id, w_from, w_to, asked_step; epoch ms), whose jobs are
 * `jobIds` (a text[]: what the series and GPU lookups are confined to). One definition for the
 * fleet's windows and for the run search's WASTE order (one job's life, src/store/ledger-order.ts).
 */
export function seriesOfWindowsSql(jobIds: SQL): SQL {
  return sql`gpu_series as (
    -- one series per (job, node, GPU, scope), however many sources report it; never the devices of
    -- a node or host that are not the job's own (Lens' node-wide fallback, Runicorn's viewer host);
    -- reached from each job's window, one index probe per job
    select distinct on (s.job_id, s.node_id, s.gpu_id, s.scope) s.id, s.job_id, s.node_id, s.gpu_id, s.scope,
      jw.w_from, jw.w_to, jw.asked_step, j.gpu_count
    from jw join jobs j on j.id = jw.job_id join series s on s.job_id = jw.job_id
    where s.job_id = any(${jobIds}) and s.kind = 'system' and s.name in ('GPU_UTILIZATION', 'NPU_UTILIZATION')
      and not coalesce((s.meta->>'nodeWide')::boolean, false) and not coalesce((s.meta->>'hostWide')::boolean, false)
    order by s.job_id, s.node_id, s.gpu_id, s.scope, s.id
  ), scoped as (
    -- what else the job (and the node) reports, by window rather than a lookup per series
    select g.*,
      bool_or(g.scope = 'GPU') over (partition by g.job_id, g.node_id) as node_has_gpus,
      bool_or(g.scope in ('GPU', 'NODE')) over (partition by g.job_id) as job_has_finer
    from gpu_series g
  ), chosen as (
    select * from scoped c
    where c.scope = 'GPU' or (c.scope = 'NODE' and not c.node_has_gpus) or (c.scope = 'JOB' and not c.job_has_finer)
  ), sel as materialized (
    select c.id as series_id, c.job_id, c.node_id, c.gpu_id, c.scope,
      (case c.scope
        when 'GPU' then 1
        -- a node's GPUs in the cached topology (the fleet's jobs'), asked only for node aggregates
        when 'NODE' then coalesce(
          nullif((select count(*) from gpus where gpus.job_id = any(${jobIds}) and gpus.node_id = c.node_id), 0),
          coalesce(c.gpu_count, 0)::float8 / count(*) filter (where c.scope = 'NODE') over (partition by c.job_id))
        else coalesce(c.gpu_count, 0) end)::float8 as gpus,
      c.w_from, c.w_to, c.asked_step,
      -- the window as keys, for the points index (keys are integers: key >= w_from iff key >= ceil(w_from))
      ceil(c.w_from)::bigint as k_from, floor(c.w_to)::bigint as k_to
    from chosen c
  )`;
}

/**
 * For use inside a lateral subquery over sel (one series): pts (its points in the window, in key
 * order, each with the next one's time), st (its step) and iv (the interval each non-null point
 * holds, [t0, t1) in epoch ms).
 */
export function seriesIntervalsSql(): SQL {
  return sql`
  pts as materialized (
    select p.key::float8 as ts, p.value, lead(p.key::float8) over (order by p.key) as next_ts
    from ${rawPoints(sql`sel.series_id`, sql`sel.k_from`, sql`sel.k_to`)} p
  ), st as materialized (
    -- one row, read back from its store: taken for the inner side of the join with pts (when pts
    -- is guessed at a row), the aggregate itself was re-run for every point
    select percentile_cont(0.5) within group (order by next_ts - ts) as step from pts where next_ts is not null
  ), iv as (
    select x.t0, x.t1, x.value from (
      select pts.ts as t0, pts.value,
        least(sel.w_to, case when pts.next_ts - pts.ts <= ${MAX_GAP_STEPS} * coalesce(st.step, sel.asked_step) then pts.next_ts
                             else pts.ts + coalesce(st.step, sel.asked_step) end) as t1
      from pts cross join st
      where pts.value is not null
    ) x where x.t1 > x.t0
  )`;
}

/**
 * `sel cross join lateral (...) x`: each selected series' covered and used milliseconds in its
 * window (x.covered_ms, x.used_ms; used = covered weighted by the reading), the one definition the
 * fleet's GPU-hours, the ledger's idle cost and the run search's WASTE order share.
 */
export function seriesUsageSql(): SQL {
  return sql`sel cross join lateral (
          with ${seriesIntervalsSql()}
          select sum(t1 - t0) as covered_ms, sum((t1 - t0) * value) as used_ms from iv
        ) x`;
}
